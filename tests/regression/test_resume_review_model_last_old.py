"""Regression: a run killed between the two renames that replace model-last could not be resumed.

`_replace_dir` renames model-last to model-last.old, then the new checkpoint to model-last. A kill
between the two left only model-last.old, and `_recover_dir`, which puts it back, ran only inside
train_resumable, after the scripts had read or loaded the run: `--resume` failed in spacy.load
([E052] / [E050], no model-last), and a fresh start emptied train.log, then found the run and
refused it as unfinished. `read_state` (and so the finished-run checks) and scripts/finetune.py
now put model-last.old (and model-best.old) back first. The kill is the state it leaves, made by
the test: model-last renamed to model-last.old.
"""
import json

from spacy_elmo.resumable_training import MODEL_BEST, MODEL_LAST, read_state, recover_output
from tests.regression.test_finetune_script_log_status_and_settings import _finetune, frozen  # noqa: F401
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401


def _killed_between_renames(output, *names: str) -> None:
    """What a kill between `_replace_dir`'s renames leaves: NAME.old, no NAME (the new one not yet renamed)."""
    for name in names:
        (output / name).rename(output / f"{name}.old")


def test_read_state_puts_back_model_last_and_model_best(tmp_path):
    output = tmp_path / "out"
    for name in (MODEL_LAST, MODEL_BEST):
        (output / name).mkdir(parents=True)
        (output / name / "training_state.json").write_text(json.dumps(
            {"step": 5, "epoch": 1, "best_score": 0.5, "best_step": 4, "seconds": 1.0, "stopped": "interrupted"}))
    _killed_between_renames(output, MODEL_LAST, MODEL_BEST)
    assert read_state(output)["step"] == 5
    assert (output / MODEL_LAST).is_dir() and (output / MODEL_BEST).is_dir()
    assert not (output / f"{MODEL_LAST}.old").exists() and not (output / f"{MODEL_BEST}.old").exists()
    recover_output(tmp_path / "nothing")  # nothing there: nothing done
    assert not (tmp_path / "nothing").exists()


def test_a_fresh_start_refuses_the_run_before_touching_train_log(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    log = (output / "train.log").read_text()
    _killed_between_renames(output, MODEL_LAST)
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 1
    assert "holds an unfinished run (model-last at step 3)" in capsys.readouterr().err
    assert (output / "train.log").read_text() == log
    assert read_state(output)["step"] == 3 and not (output / f"{MODEL_LAST}.old").exists()


def test_finetune_resumes_from_model_last_old(monkeypatch, capsys, frozen):  # noqa: F811
    output = frozen / "tuned"
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen) == 143
    _killed_between_renames(output, MODEL_LAST)
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen, "--resume") == 0
    assert read_state(output)["stopped"] == "max steps"
    assert "Resuming at step 2" in (output / "train.log").read_text()


def test_train_resumes_from_model_last_old(monkeypatch, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    _killed_between_renames(output, MODEL_LAST)
    assert _train(monkeypatch, project, output, "--resume") == 0
    assert not (output / f"{MODEL_LAST}.old").exists() and (output / MODEL_LAST).is_dir()
