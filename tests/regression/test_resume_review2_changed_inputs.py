"""Regression: --resume did not check the run's inputs, so a resumed run could mix two corpora.

A training corpus changed at the same path since the run started was trained on from the step it
resumed at, exit 0, and then the very command that had started the run refused the finished run as
made with other settings; another --train (or an override) given with --resume was ignored without
a word. --resume now compares the files and folders run_settings.json records by contents with
what is there now and refuses, in one line naming the difference and --overwrite, before anything
is read into the run or written (the library's `train_resumable` as well as the scripts). Arguments
given with --resume that differ from the record are a one-line warning that the recorded ones are
used; overrides the documented resume command leaves out are not compared. The run is stopped by a
signal raised by a registered before_update callback at a fixed step.
"""
import json

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_elmo.resumable_training import LOG, MODEL_LAST, SettingsChanged, read_state, train_resumable
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401

STOP = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})


def _stopped(monkeypatch, project, output) -> None:  # noqa: F811
    """The first command, stopped by SIGTERM before step 2: model-last at step 3."""
    assert _train(monkeypatch, project, output, "--training.before_update", STOP) == 143


def _shrink(corpus) -> None:
    """The corpus at the same path, with fewer documents."""
    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    DocBin(docs=docs[:3]).to_disk(corpus)


def test_a_corpus_changed_since_the_start_is_refused(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    config, train, dev = project
    output = tmp_path / "out"
    _stopped(monkeypatch, project, output)
    original = train.read_bytes()
    state, log = read_state(output), (output / LOG).read_text()
    _shrink(train)
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--resume") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cannot resume: {output} holds an unfinished run whose inputs changed") and len(
        err.splitlines()) == 1, err
    assert f"train: {train} ({len(original):,} bytes" in err and "--overwrite" in err
    assert read_state(output) == state and (output / LOG).read_text() == log  # nothing trained, nothing written

    train.write_bytes(original)  # put back: the run goes on, and the first command then keeps it
    assert _train(monkeypatch, project, output, "--resume") == 0
    assert _train(monkeypatch, project, output, "--training.before_update", STOP) == 0
    assert "has finished with the same settings; nothing to do" in capsys.readouterr().out


def test_other_arguments_given_with_resume_are_named_and_ignored(monkeypatch, capsys, project, tmp_path):  # noqa
    config, train, dev = project
    output = tmp_path / "out"
    _stopped(monkeypatch, project, output)
    capsys.readouterr()
    other = (config, tmp_path / "nonexistent.spacy", dev)
    assert _train(monkeypatch, other, output, "--training.max_steps", "3", "--resume") == 0
    err = capsys.readouterr().err.strip()
    warning = [line for line in err.splitlines() if "--resume goes on with the run as recorded" in line]
    assert len(warning) == 1 and "run_settings.json" in warning[0], err
    assert f"train: {train} (" in warning[0] and "nonexistent.spacy (missing)" in warning[0]
    assert "overrides.training.max_steps: (unset) -> 3" in warning[0] and "dev:" not in warning[0]
    assert read_state(output)["step"] == 7  # the recorded step cap (6), not 3
    assert _train(monkeypatch, project, output, "--training.before_update", STOP) == 0


def test_the_documented_resume_command_is_not_warned(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    _stopped(monkeypatch, project, output)
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--resume") == 0  # without the first run's override
    assert "--resume goes on" not in capsys.readouterr().err


def test_train_resumable_refuses_a_changed_corpus(project, tmp_path):  # noqa: F811
    from spacy.training.initialize import init_nlp

    config_path, train, dev = project
    overrides = {"paths.train": str(train), "paths.dev": str(dev), "training.before_update": json.loads(STOP)}
    output = tmp_path / "out"
    nlp = init_nlp(spacy.util.load_config(config_path, interpolate=False, overrides=overrides))
    assert train_resumable(nlp, output)["stopped"] == "interrupted"
    _shrink(train)
    with pytest.raises(SettingsChanged, match=r"whose inputs changed since it started \(train: .*--overwrite"):
        train_resumable(spacy.load(output / MODEL_LAST), output, resume=True)
