"""Regression: `--resume` checked the run's record and hashed its inputs twice.

scripts/train.py and scripts/finetune.py check a resume before loading model-last
(`resume_record_or_exit`, which calls `check_resumable`: the record, the training state, and a
SHA-256 of every corpus and pipeline the record names), and `train_resumable` then ran the same
check again on the same folder: for a published biLM of some hundreds of megabytes, a second read
of every byte for nothing. The scripts now tell `train_resumable` the check was made
(`resume_checked`); called on its own, the library still checks. The run is stopped by a signal
raised by a registered before_update callback at a fixed step.
"""
import json

from spacy_elmo import resumable_training
from spacy_elmo.resumable_training import read_state, train_resumable
from tests.regression.test_finetune_script_log_status_and_settings import _finetune, frozen  # noqa: F401
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401

STOP = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})


def _counting(monkeypatch) -> list:
    """Replace `check_resumable` with a wrapper that records each folder it checks."""
    calls: list = []
    original = resumable_training.check_resumable

    def counted(output, what="run"):
        calls.append(str(output))
        return original(output, what)

    monkeypatch.setattr(resumable_training, "check_resumable", counted)
    return calls


def test_train_script_checks_a_resume_once(monkeypatch, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    assert _train(monkeypatch, project, output, "--training.before_update", STOP) == 143
    calls = _counting(monkeypatch)
    assert _train(monkeypatch, project, output, "--resume") == 0
    assert calls == [str(output)]
    assert read_state(output)["stopped"] == "max steps"


def test_finetune_script_checks_a_resume_once(monkeypatch, frozen):  # noqa: F811
    output = frozen / "tuned"
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen) == 143
    calls = _counting(monkeypatch)
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen, "--resume") == 0
    assert calls == [str(output)]


def test_the_library_alone_still_checks(monkeypatch, project, tmp_path):  # noqa: F811
    import spacy

    output = tmp_path / "out"
    assert _train(monkeypatch, project, output, "--training.before_update", STOP) == 143
    calls = _counting(monkeypatch)
    nlp = spacy.load(output / "model-last")
    with open(tmp_path / "console.txt", "w") as console:
        state = train_resumable(nlp, output, resume=True, stdout=console)
    assert calls == [str(output)] and state["stopped"] == "max steps"
