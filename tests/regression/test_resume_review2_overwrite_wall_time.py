"""Regression: after --overwrite, the replaced run's wall_time.json described the new run.

A fresh start with --overwrite replaced model-last, model-best, log.jsonl and run_settings.json but
kept the old run's wall_time.json. Killed before it wrote its own, the new run's --resume then took
the first session's command line and overrides from that stale file (`write_wall_time` prefers it
to run_settings.json): wall_time.json said the run was started with the old step cap. A fresh
start now removes wall_time.json where it records its settings, so the resumed run's wall_time.json
is its own. The kill is an exception no handler catches, raised by a registered before_update
callback at a fixed step.
"""
import json
import sys

import pytest
from spacy.util import registry

from spacy_elmo.resumable_training import RUN_SETTINGS, read_state
from tests.regression.test_train_script_exit_status_and_settings import _script, _train, project  # noqa: F401


class Killed(BaseException):
    """A kill: the process ends where it is (no `except Exception` of the script catches it)."""


KILLS = {"left": 0}
"""How many more times the callback below kills: the resumed run (whose config holds it) is not killed."""


@registry.callbacks("test-resume-review2-kill-at.v1")
def _kill_at(step: int):
    """A before_update callback that kills the run (raises Killed) before step `step`, while KILLS allows."""
    def before_update(nlp, info):
        if info["step"] == step and KILLS["left"] > 0:
            KILLS["left"] -= 1
            raise Killed

    return before_update


def test_a_fresh_start_removes_the_replaced_runs_wall_time(monkeypatch, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    assert _train(monkeypatch, project, output, "--training.max_steps", "4") == 0
    assert json.loads((output / "wall_time.json").read_text())["overrides"]["training.max_steps"] == 4

    config, train, dev = project
    kill = json.dumps({"@callbacks": "test-resume-review2-kill-at.v1", "step": 3})
    argv = ["train.py", str(config), str(output), "--train", str(train), "--dev", str(dev), "--overwrite",
            "--training.max_steps", "8", "--training.before_update", kill]
    monkeypatch.setattr(sys, "argv", argv)
    KILLS["left"] = 1
    with pytest.raises(Killed):
        _script("train").main()
    assert not (output / "wall_time.json").exists()
    assert json.loads((output / RUN_SETTINGS).read_text())["settings"]["overrides"]["training.max_steps"] == 8

    assert _train(monkeypatch, project, output, "--resume") == 0
    wall = json.loads((output / "wall_time.json").read_text())
    assert wall["overrides"]["training.max_steps"] == 8 and "--overwrite" in wall["command"]
    assert wall["steps"] == read_state(output)["step"] == 9 and len(wall["resumes"]) == 1
