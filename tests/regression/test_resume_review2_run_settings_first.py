"""Regression: a damaged run_settings.json failed --resume only after the run had finished training.

scripts/train.py read run_settings.json (for wall_time.json) after train_resumable had trained the
run to its end: a damaged record then raised an uncaught ResumeError (a traceback), the finished
run's wall_time.json still said "interrupted", and its advice (--overwrite) would have discarded
the finished run. The record is now read and checked before anything is loaded or trained: one
line naming the file, exit 1, and model-last left at the step it stopped at. The run is stopped by
a signal raised by a registered before_update callback at a fixed step.
"""
import json

import pytest

from spacy_elmo.resumable_training import RUN_SETTINGS, read_state
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401


@pytest.mark.parametrize("damaged", ["{not json", json.dumps({"settings": 3})])
def test_a_damaged_record_is_refused_before_training(monkeypatch, capsys, project, tmp_path, damaged):  # noqa
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    state = read_state(output)
    (output / RUN_SETTINGS).write_text(damaged)
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--resume") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cannot resume: {output / RUN_SETTINGS}: not a settings record") and len(
        err.splitlines()) == 1, err
    assert read_state(output) == state and state["stopped"] == "interrupted"  # nothing trained
    assert json.loads((output / "wall_time.json").read_text())["steps"] == state["step"]
