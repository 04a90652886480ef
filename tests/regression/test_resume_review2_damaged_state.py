"""Regression: a damaged checkpoint in model-last made --resume fail with a traceback.

An empty, truncated or overwritten training_state.msg failed in msgpack (`ValueError: Unpack
failed`), a hand-edited training_state.json with a value of the wrong type (`"step": "x"`, or not
an object at all) with a TypeError deep in the loop, and a damaged component file in model-last in
spacy.load (msgpack's ExtraData): each a traceback from scripts/train.py --resume. Each is now one
line, exit 1, naming the file (model-last for a component) and the remedy (--overwrite), before
anything is written: model-last and log.jsonl stay as they were. The run is stopped by a signal
raised by a registered before_update callback at a fixed step; the damage is written by the test.
"""
import json
import random
import shutil

import pytest

from spacy_elmo.resumable_training import LOG, MODEL_LAST
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401

DAMAGE = {
    "empty state msg": ("training_state.msg", lambda data: b""),
    "truncated state msg": ("training_state.msg", lambda data: data[: len(data) // 2]),
    "other bytes in state msg": ("training_state.msg", lambda data: random.Random(0).randbytes(len(data))),
    "step not a count": ("training_state.json", lambda data: json.dumps(dict(json.loads(data), step="x")).encode()),
    "state not an object": ("training_state.json", lambda data: b"3"),
    "damaged component": ("tagger/model", lambda data: b"xx\n"),
}


@pytest.fixture
def stopped(monkeypatch, project, tmp_path):  # noqa: F811
    """scripts/train.py stopped by SIGTERM before step 2: model-last at step 3."""
    output = tmp_path / "stopped"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    return output


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_checkpoint_is_one_line_naming_the_file(monkeypatch, capsys, project, stopped, tmp_path,  # noqa
                                                          case):
    name, damage = DAMAGE[case]
    output = tmp_path / "out"
    shutil.copytree(stopped, output)
    damaged = output / MODEL_LAST / name
    damaged.write_bytes(damage(damaged.read_bytes()))
    state, log = (output / MODEL_LAST / "training_state.json").read_bytes(), (output / LOG).read_bytes()
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--resume") == 1
    err = capsys.readouterr().err.strip()
    named = output / MODEL_LAST if case == "damaged component" else damaged
    assert err.startswith(f"cannot resume: {named}: ") and len(err.splitlines()) == 1, err
    assert "--overwrite" in err and "Traceback" not in err
    assert (output / MODEL_LAST / "training_state.json").read_bytes() == state and (output / LOG).read_bytes() == log
