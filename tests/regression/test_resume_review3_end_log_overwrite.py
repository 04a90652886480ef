"""Regression: four ways a resumable training run could go wrong (a code review, 2026-12-07).

- The end a run reached at an evaluation (early stopping, max steps) was written only by the save
  after the loop: killed before that save, model-last said "not stopped" one step past the end,
  and --resume trained one more step than the uninterrupted run.
- log.jsonl (and wall_time.json) were rewritten in place on every resume: a kill or a full disk
  while writing lost rows for good.
- A fresh start with --overwrite deleted model-last's files before its state: killed amid the
  deletion, a later plain start found the old "finished" state and kept a broken model-last.
- `scripts/train.py --resume` said "cannot resume:" for any failure, a full disk hours into the
  run among them.
The faults are injected at fixed points (spacy_elmo/faults.py, a monkeypatched call): no signals
sent after a sleep, no clock.
"""
import io
import json
import shutil
from pathlib import Path
from typing import cast

import numpy
import pytest
import spacy
from spacy.pipeline import TrainablePipe
from spacy.training.initialize import init_nlp

from spacy_elmo import resumable_training
from spacy_elmo.resumable_training import LOG, MODEL_LAST, read_state, train_resumable
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401


def _pipeline(project, **training):  # noqa: F811
    config_path, train, dev = project
    overrides = {"paths.train": str(train), "paths.dev": str(dev),
                 **{f"training.{key}": value for key, value in training.items()}}
    return init_nlp(spacy.util.load_config(config_path, interpolate=False, overrides=overrides))


def _weights(output: Path):
    nlp = spacy.load(output / MODEL_LAST)
    pipes = [cast(TrainablePipe, nlp.get_pipe(name)) for name in nlp.pipe_names]
    return [numpy.asarray(p) for pipe in pipes for p in _params(pipe.model)]


def _params(model):
    for node in model.walk():
        for name in node.param_names:
            if node.has_param(name):
                yield node.get_param(name)


@pytest.mark.parametrize("training,end", [({}, "max steps"), ({"patience": 2, "max_steps": 40}, "early stopping")])
def test_a_kill_before_the_final_save_resumes_as_ended(project, tmp_path, inject, training, end):  # noqa: F811
    whole = train_resumable(_pipeline(project, **training), tmp_path / "whole", stdout=io.StringIO())
    assert whole["stopped"] == end
    inject("train.end:1:enospc")
    with pytest.raises(OSError):
        train_resumable(_pipeline(project, **training), tmp_path / "split", stdout=io.StringIO())
    inject("")
    saved = read_state(tmp_path / "split")
    assert saved["stopped"] == end and saved["step"] == whole["step"]
    out = io.StringIO()
    done = train_resumable(spacy.load(tmp_path / "split" / MODEL_LAST), tmp_path / "split", resume=True, stdout=out)
    assert "training had already ended" in out.getvalue()
    assert done["step"] == whole["step"]
    for a, b in zip(_weights(tmp_path / "whole"), _weights(tmp_path / "split")):
        numpy.testing.assert_array_equal(a, b)


def test_a_failed_log_rewrite_on_resume_loses_no_row(project, tmp_path, monkeypatch):  # noqa: F811
    output = tmp_path / "out"
    train_resumable(_pipeline(project), output, stdout=io.StringIO())
    log = output / LOG
    before = log.read_bytes()
    assert len(before.splitlines()) == 4  # steps 0, 2, 4, 6
    writes = []

    def torn(self, data, *args, **kwargs):  # writes half, then the disk is full
        writes.append(self)
        with open(self, "w", encoding="utf-8") as f:
            f.write(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", torn)
    with pytest.raises(OSError):
        resumable_training._truncate_log(log, 3)  # as a resume from step 3 drops the rows of 4 and 6
    assert writes and all(path != log for path in writes) and log.read_bytes() == before
    monkeypatch.undo()
    resumable_training._truncate_log(log, 3)
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [0, 2]


def test_an_interrupted_overwrite_leaves_no_finished_run_to_keep(project, tmp_path, monkeypatch):  # noqa: F811
    output = tmp_path / "out"
    train_resumable(_pipeline(project), output, stdout=io.StringIO())
    real_rmtree, calls = shutil.rmtree, []

    def interrupted(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the old model-last is deleted
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(resumable_training.shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_resumable(_pipeline(project), output, overwrite=True, stdout=io.StringIO())
    monkeypatch.undo()
    assert read_state(output) is None  # no "finished" state left beside a half-deleted model-last
    out = io.StringIO()
    state = train_resumable(_pipeline(project), output, stdout=out)  # a plain start trains again
    assert "nothing to do" not in out.getvalue() and state["stopped"] == "max steps"
    assert read_state(output)["step"] == state["step"]


def test_a_failure_during_a_resumed_run_is_not_called_a_refused_resume(
        project, tmp_path, monkeypatch, inject, capsys):  # noqa: F811
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    capsys.readouterr()
    inject("train.end:1:enospc")  # the resumed run trains to its end, then the disk is full
    assert _train(monkeypatch, project, output, "--resume") == 1
    inject("")
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "No space left" in err and not err.startswith("cannot resume"), err
    # resumed again, it finds the run ended at that evaluation: nothing to train, exit 0
    assert _train(monkeypatch, project, output, "--resume") == 0
    assert read_state(output)["stopped"] == "max steps"
