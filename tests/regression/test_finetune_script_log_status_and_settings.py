"""Regression: scripts/finetune.py wrote no train.log, exited 0 when stopped, deleted a finished run,
and printed spaCy's traceback for a PIPELINE that does not exist.

docs/project.md said it writes train.log as scripts/train.py does; it now does (the same Tee). A
run stopped by a signal exits 130/143, one stopped by --max-minutes 3; a fresh start keeps a
finished run of the same settings and refuses one of other settings, naming the difference. The
script runs in this process; the signal comes from a registered before_update callback at a
fixed step.
"""
import json
import sys

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_elmo.resumable_training import read_state
from tests.conftest import tagger_pipeline
from tests.regression.test_train_script_exit_status_and_settings import _script, _status


@pytest.fixture
def frozen(allennlp_dir, tmp_path):
    """A frozen ELMo tagger whose [training] stops itself with SIGTERM before step 2, and its corpora."""
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    nlp.update(examples, sgd=optimizer)
    nlp.config["training"]["before_update"] = {"@callbacks": "test-train-script-raise-signal.v1", "step": 1,
                                               "name": "SIGTERM"}
    nlp.to_disk(tmp_path / "frozen")
    DocBin(docs=[eg.reference for eg in examples] * 2).to_disk(tmp_path / "train.spacy")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "dev.spacy")
    return tmp_path


def _finetune(monkeypatch, pipeline, output, corpora, *extra) -> int:
    argv = ["finetune.py", str(pipeline), str(output), "--train", str(corpora / "train.spacy"),
            "--dev", str(corpora / "dev.spacy"), "--max-steps", "3", *map(str, extra)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        _script("finetune").main()
    return _status(exited.value.code)


def test_finetune_logs_stops_non_zero_and_keeps_a_finished_run(monkeypatch, capsys, frozen):
    output = frozen / "tuned"
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen) == 143
    err = capsys.readouterr().err
    assert "interrupted by SIGTERM at step 2" in err and "--resume" in err
    log = (output / "train.log").read_text()
    assert "Pipeline: ['elmo', 'tagger']" in log and "LOSS ELMO" in log and "interrupted by SIGTERM" in log
    assert json.loads((output / "wall_time.json").read_text())["returncode"] == 143

    assert _finetune(monkeypatch, frozen / "frozen", output, frozen, "--resume") == 0
    assert "Resuming at step 2" in (output / "train.log").read_text().split("interrupted by SIGTERM")[1]
    wall = json.loads((output / "wall_time.json").read_text())
    assert wall["from"] == str(frozen / "frozen") and wall["stopped"] == "max steps" and wall["returncode"] == 0
    assert "--resume" not in wall["command"] and "--resume" in wall["resumes"][-1]
    finished = read_state(output)
    log = (output / "train.log").read_text()

    capsys.readouterr()
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen) == 0
    assert "has finished with the same settings; nothing to do" in capsys.readouterr().out
    assert _finetune(monkeypatch, frozen / "frozen", output, frozen, "--learn-rate", "0.001") == 1
    err = capsys.readouterr().err
    assert "learn_rate: 0.0001 -> 0.001" in err and "--overwrite" in err
    assert read_state(output) == finished and (output / "train.log").read_text() == log
    assert spacy.load(output / "model-last").get_pipe("elmo").frozen is False


def test_finetune_names_a_missing_pipeline_in_one_line(monkeypatch, capsys, frozen):
    assert _finetune(monkeypatch, frozen / "nope", frozen / "out", frozen) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"{frozen / 'nope'}: no such pipeline directory (the model-best of a frozen ELMo run)"
    (frozen / "empty").mkdir()
    assert _finetune(monkeypatch, frozen / "empty", frozen / "out", frozen) == 1
    err = capsys.readouterr().err
    assert "cannot load the pipeline ([E053]" in err and len(err.strip().splitlines()) == 1
    assert not (frozen / "out").exists()
