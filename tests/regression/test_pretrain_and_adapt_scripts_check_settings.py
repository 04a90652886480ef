"""Regression: scripts/pretrain.py and scripts/adapt.py kept a finished run whatever their inputs.

They skipped any OUTPUT whose model-last said "finished", even when --train, --pretrained-dir,
the config or an override had changed, and said "delete to adapt again" with exit 0: the
project went on with a biLM made from other inputs than its command named. The word table was
likewise reused whenever table.json existed. Each run now records its settings
(run_settings.json): a finished run of the same settings is kept (exit 0), one of other settings
refused, naming the difference; --overwrite starts again. The table records the text it was
built from. pretrain.py without --train, or with a --train that does not exist, says so in one
line instead of a TypeError, or of blaming the [vectors] extra.

The scripts run in this process with `run_pretrain` (the `spacy_elmo pretrain` subprocess)
replaced by a copy of one real finished run, so each case takes no training.
"""
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from spacy_elmo.pretrain import load_config, pretrain, run_finished
from spacy_elmo.resumable_training import RUN_SETTINGS, record_settings
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _status


@pytest.fixture
def finished(tiny_config_path, small_corpus, tmp_path) -> Path:
    """A finished pretraining run (2 steps of the tiny config)."""
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 2,
                                            "training.eval_every": 1000, "training.threads": 1})
    pretrain(config, tmp_path / "finished", progress=False)
    assert run_finished(tmp_path / "finished")
    return tmp_path / "finished"


@pytest.fixture
def scripts(monkeypatch, finished):
    """(pretrain.py, adapt.py) as modules whose `run_pretrain` copies the finished run into its
    output (its files, not its settings record), and the list of the outputs it was asked for."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    calls = []

    def run_pretrain(config, output, settings):
        calls.append(Path(output))
        shutil.copytree(finished, output, dirs_exist_ok=True, ignore=shutil.ignore_patterns(RUN_SETTINGS))

    modules = _script("pretrain"), _script("adapt")
    for module in modules:
        monkeypatch.setattr(module, "run_pretrain", run_pretrain)
    return modules, calls


def _main(monkeypatch, module, name, *argv) -> int:
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv)])
    try:
        module.main()
    except SystemExit as exited:
        return _status(exited.code)
    return 0


def test_pretrain_keeps_the_same_run_and_refuses_other_settings(monkeypatch, capsys, scripts, tiny_config_path,
                                                                small_corpus, tmp_path):
    (pretrain_script, _), calls = scripts
    output = tmp_path / "run"
    other = tmp_path / "other.txt"
    other.write_text("another text\n" * 10)

    def command(train=small_corpus, steps=2):
        return ["--elmo-model", "pretrained", "--config", tiny_config_path, "--train", train, "--dev", small_corpus,
                "--output", output, "--word-table", "none", "--passes", "1", "--training.max_steps", steps]

    assert _main(monkeypatch, pretrain_script, "pretrain", *command()) == 0
    assert calls == [output] and run_finished(output)
    assert json.loads((output / RUN_SETTINGS).read_text())["settings"]["overrides"] == {"training.max_steps": 2}

    capsys.readouterr()
    assert _main(monkeypatch, pretrain_script, "pretrain", *command()) == 0
    assert "has finished with the same settings; nothing to do" in capsys.readouterr().out and len(calls) == 1
    assert _main(monkeypatch, pretrain_script, "pretrain", *command(steps=3)) == 1
    err = capsys.readouterr().err
    assert "overrides.training.max_steps: 2 -> 3" in err and "--overwrite" in err
    assert _main(monkeypatch, pretrain_script, "pretrain", *command(train=other)) == 1
    assert f"train: {small_corpus}" in capsys.readouterr().err and len(calls) == 1
    assert _main(monkeypatch, pretrain_script, "pretrain", *command(train=other), "--overwrite") == 0
    assert calls == [output, output]
    assert json.loads((output / RUN_SETTINGS).read_text())["settings"]["train"]["path"] == str(other)


def test_adapt_keeps_the_same_run_and_refuses_other_inputs(monkeypatch, capsys, scripts, tiny_config_path,
                                                           small_corpus, finished, tmp_path):
    (_, adapt_script), calls = scripts
    output = tmp_path / "adapted"
    other = tmp_path / "other_model"
    shutil.copytree(finished / "model-best", other)
    with open(other / "elmo.json", "a") as meta:  # another model (a path alone is no difference: contents are)
        meta.write(" ")
    command = ["--elmo-model", "pretrained", "--pretrained-dir", finished / "model-best", "--config",
               tiny_config_path, "--train", small_corpus, "--dev", small_corpus, "--output", output]
    assert _main(monkeypatch, adapt_script, "adapt", *command) == 0
    assert calls == [output] and run_finished(output)

    capsys.readouterr()
    assert _main(monkeypatch, adapt_script, "adapt", *command) == 0
    assert "has finished with the same settings" in capsys.readouterr().out and len(calls) == 1
    assert _main(monkeypatch, adapt_script, "adapt", *command[:3], other, *command[4:]) == 1
    err = capsys.readouterr().err
    assert f"pretrained: {finished / 'model-best'}" in err and f"-> {other}" in err and "--overwrite" in err
    assert _main(monkeypatch, adapt_script, "adapt", *command, "--training.max_steps", "9") == 1
    assert "overrides.training.max_steps: (unset) -> 9" in capsys.readouterr().err and len(calls) == 1
    assert _main(monkeypatch, adapt_script, "adapt", *command, "--training.max_steps", "9", "--overwrite") == 0
    assert calls == [output, output]


def test_pretrain_reuses_a_word_table_only_of_the_same_text(monkeypatch, capsys, scripts, tiny_config_path,
                                                            small_corpus, tmp_path):
    (pretrain_script, _), calls = scripts
    table = tmp_path / "table"
    table.mkdir()
    (table / "table.json").write_text(json.dumps({"pruning": {"text": ["other.txt"]}}))  # from before the record
    command = ["--elmo-model", "pretrained", "--config", tiny_config_path, "--train", small_corpus,
               "--dev", small_corpus, "--output", tmp_path / "run", "--word-table", table, "--passes", "1"]
    assert _main(monkeypatch, pretrain_script, "pretrain", *command) == 1
    err = capsys.readouterr().err
    assert f"the word table {table} was built from other text" in err and "other.txt" in err and calls == []
    other = tmp_path / "other.txt"
    other.write_text("another text\n")
    record_settings(table, {"text": {"path": str(other), "bytes": 13, "sha256": "0" * 64}})
    assert _main(monkeypatch, pretrain_script, "pretrain", *command) == 1
    assert f"text: {other}" in capsys.readouterr().err and calls == []
    record_settings(table, {"text": {"path": "elsewhere/corpus.txt", "bytes": small_corpus.stat().st_size,
                                     "sha256": hashlib.sha256(small_corpus.read_bytes()).hexdigest()}})
    assert _main(monkeypatch, pretrain_script, "pretrain", *command) == 0  # the same text: reused, not rebuilt
    assert calls == [tmp_path / "run"] and (table / "table.json").is_file()


def test_pretrain_names_a_missing_text_in_one_line(monkeypatch, capsys, scripts, tiny_config_path, tmp_path):
    (pretrain_script, _), calls = scripts
    assert _main(monkeypatch, pretrain_script, "pretrain", "--elmo-model", "pretrained") == 2
    assert "--elmo-model pretrained needs --train" in capsys.readouterr().err
    missing = tmp_path / "missing.txt.gz"
    assert _main(monkeypatch, pretrain_script, "pretrain", "--elmo-model", "pretrained", "--config", tiny_config_path,
                 "--train", missing, "--dev", missing, "--output", tmp_path / "run",
                 "--word-table", tmp_path / "table") == 1
    err = capsys.readouterr().err
    assert f"the training text {missing} is not a file (missing)" in err and "vectors" not in err
    assert calls == [] and not (tmp_path / "table").exists()
