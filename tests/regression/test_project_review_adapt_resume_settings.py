"""Regression: scripts/adapt.py continued an interrupted adaptation with other settings.

A run stopped part way (its checkpoint.pt there, model-last not finished) was resumed whatever the
command said: another --train text gave only `spacy_elmo pretrain`'s warning, trained on from the
checkpoint of the first text, and the next command refused its own output as made with other
settings. It now compares its settings with the run's run_settings.json before resuming and refuses
a difference in one line naming it and --overwrite; the same settings resume as before.

`run_pretrain` (the `spacy_elmo pretrain` subprocess) is replaced by one that leaves a checkpoint,
as a run stopped by a signal does: no training.
"""
import json
import sys
from pathlib import Path

import pytest

from spacy_elmo.resumable_training import RUN_SETTINGS
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _status


@pytest.fixture
def adapt(monkeypatch):
    """scripts/adapt.py as a module whose `run_pretrain` leaves an unfinished run (a checkpoint) in its
    output, and the list of the calls it got."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    calls = []

    def run_pretrain(config, output, settings):
        calls.append(list(settings))
        Path(output, "checkpoint.pt").write_bytes(b"a stopped run's checkpoint")

    module = _script("adapt")
    monkeypatch.setattr(module, "run_pretrain", run_pretrain)
    return module, calls


def _main(monkeypatch, module, *argv) -> int:
    monkeypatch.setattr(sys, "argv", ["adapt.py", *map(str, argv)])
    try:
        module.main()
    except SystemExit as exited:
        return _status(exited.code)
    return 0


def test_an_unfinished_adaptation_resumes_only_with_its_own_settings(monkeypatch, capsys, adapt, tiny_config_path,
                                                                     tmp_path):
    module, calls = adapt
    text, other = tmp_path / "train.txt", tmp_path / "other.txt"
    text.write_text("the cat sat on the mat\n" * 5)
    other.write_text("another text altogether\n" * 5)
    output = tmp_path / "adapted"

    def command(train=text, *extra):
        return ["--config", tiny_config_path, "--train", train, "--dev", text, "--output", output, *extra]

    assert _main(monkeypatch, module, *command()) == 0  # stopped part way: a checkpoint, no finished model
    assert len(calls) == 1 and (output / "checkpoint.pt").is_file()
    recorded = json.loads((output / RUN_SETTINGS).read_text())

    assert _main(monkeypatch, module, *command()) == 0  # the same command resumes it
    assert len(calls) == 2

    capsys.readouterr()
    assert _main(monkeypatch, module, *command(other)) == 1  # other text: refused, nothing run
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unfinished adaptation" in err
    assert f"train: {text}" in err and f"-> {other}" in err and "--overwrite" in err
    assert len(calls) == 2 and json.loads((output / RUN_SETTINGS).read_text()) == recorded
    assert _main(monkeypatch, module, *command(text, "--training.max_steps", "9")) == 1
    assert "overrides.training.max_steps: (unset) -> 9" in capsys.readouterr().err and len(calls) == 2

    assert _main(monkeypatch, module, *command(other, "--overwrite")) == 0  # starts it again
    assert len(calls) == 3
    assert json.loads((output / RUN_SETTINGS).read_text())["settings"]["train"]["path"] == str(other)
