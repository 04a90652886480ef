"""Regression: with elmo_model=pretrained, a biLM pretrained again was not seen by the steps after it.

`static-vectors` and `adapt-ewt` read training/pretrain/model-best, which could not be their declared
dependency (it does not exist with the shipped biLM), so `spacy project run` skipped them, and every
training after them, as unchanged. `scripts/pretrain.py` now ends, in both modes, by writing
training/elmo_source.json (which biLM, a SHA-256 of its files): the `pretrain` step's output and
those steps' dependency, it changes exactly when the biLM they read does.
"""
import json
import shutil
import subprocess
import sys

from weasel.util import load_project_config

from spacy_elmo.resources import default_model_path
from spacy_elmo.resumable_training import path_identity
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script

ROOT = SCRIPTS.parent
RECORD = "training/elmo_source.json"


def _commands(**variables):
    config = load_project_config(ROOT, overrides={f"vars.{k}": v for k, v in variables.items()})
    return {c["name"]: c for c in config["commands"]}


def test_the_steps_that_read_the_bilm_depend_on_pretrains_record():
    commands = _commands(elmo_model="pretrained")
    assert commands["pretrain"]["outputs"] == [RECORD]
    # with outputs and no deps, spaCy would skip it once run: it always runs, the script keeps a finished run
    assert commands["pretrain"].get("no_skip") is True
    readers = [name for name, command in commands.items() if name != "pretrain"
               and any("--elmo-model pretrained" in line and "--pretrained-dir" not in line
                       for line in command.get("script", []))]
    assert sorted(readers) == ["adapt-ewt", "static-vectors"]
    for name in readers:
        assert RECORD in commands[name]["deps"], name
    # `all` runs pretrain before them, so the record exists when they need it
    order = load_project_config(ROOT)["workflows"]["all"]
    assert order.index("pretrain") < min(order.index(name) for name in readers)


def test_the_shipped_mode_records_the_embedded_model(tmp_path):
    record = tmp_path / "training" / "elmo_source.json"
    command = [sys.executable, str(SCRIPTS / "pretrain.py"), "--elmo-model", "shipped", "--record", str(record)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(record.read_text(encoding="utf-8"))
    assert written["elmo_model"] == "shipped"
    assert written["model"]["sha256"] == path_identity(default_model_path())["sha256"]
    before = record.read_bytes()
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and record.read_bytes() == before  # the same biLM: the same record


def test_the_record_changes_with_the_bilms_files_and_not_otherwise(tmp_path):
    pretrain = _script("pretrain")
    model = tmp_path / "pretrain" / "model-best"
    shutil.copytree(default_model_path(), model)
    record = tmp_path / "elmo_source.json"
    pretrain.write_source_record(record, "pretrained", model)
    first = record.read_bytes()
    pretrain.write_source_record(record, "pretrained", model)
    assert record.read_bytes() == first
    weights = next(f for f in sorted(model.iterdir()) if f.suffix in (".safetensors", ".pt", ".hdf5", ".bin"))
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")  # pretrained again: other weights
    pretrain.write_source_record(record, "pretrained", model)
    assert record.read_bytes() != first
    assert not list(tmp_path.glob(".elmo_source.json.*"))  # no temporary file left beside it


def test_a_missing_model_is_a_clear_exit(tmp_path):
    pretrain = _script("pretrain")
    try:
        pretrain.write_source_record(tmp_path / "record.json", "pretrained", tmp_path / "missing")
    except SystemExit as exit:
        assert "holds no files" in str(exit.code)
    else:
        raise AssertionError("no exit")
    assert not (tmp_path / "record.json").exists()
