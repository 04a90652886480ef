"""Regression: project.yml could not start its runs again, and its `smoke` workflow ignored gpu_id.

- After an input variable changed (`--vars.n_sents`), `spacy project run all` stopped at adapt-ewt
  (then at each training) with "start it again with --overwrite", which no variable could pass:
  the scripts' --overwrite was a bare flag. They now take `--overwrite[=BOOL]`, and project.yml
  passes `--overwrite=${vars.overwrite}` (default false, as if not given) to adapt.py, train.py and
  finetune.py.
- smoke-train and smoke-evaluate ran on the CPU whatever --vars.gpu_id said: they now pass it.
"""
import json
import sys

import pytest
from weasel.util import load_project_config

from spacy_elmo.resumable_training import RUN_SETTINGS
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _status, _train
from tests.regression.test_train_script_exit_status_and_settings import project  # noqa: F401 (a fixture)

ROOT = SCRIPTS.parent
RESTARTABLE = ("scripts/adapt.py", "scripts/train.py", "scripts/finetune.py")


def _scripts(**variables):
    config = load_project_config(ROOT, overrides={f"vars.{k}": v for k, v in variables.items()})
    return {c["name"]: c.get("script", []) for c in config["commands"]}


def test_the_workflows_pass_the_overwrite_variable():
    lines = [line for script in _scripts().values() for line in script if any(s in line for s in RESTARTABLE)]
    assert len(lines) == 14  # adapt, five trainings and the fine-tuning, in `all` and in `smoke`
    assert all(line.endswith(" --overwrite=false") for line in lines), lines
    again = [line for script in _scripts(overwrite=True).values() for line in script
             if any(s in line for s in RESTARTABLE)]
    assert all(line.endswith(" --overwrite=true") for line in again), again


def test_the_smoke_workflow_passes_gpu_id():
    scripts = _scripts(gpu_id=3)
    for name in ("smoke-train", "smoke-evaluate"):
        for line in scripts[name]:
            if "scripts/static_vectors.py" in line or "scripts/tag_breakdown.py" in line:
                continue  # neither runs a model on a device
            assert "--gpu-id 3" in line, (name, line)


def test_train_takes_overwrite_as_a_value(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    assert _train(monkeypatch, project, output) == 0
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--overwrite=false") == 0  # as if not given: kept
    assert "nothing to do" in capsys.readouterr().out
    assert _train(monkeypatch, project, output, "--max-steps", "4", "--overwrite=false") == 1
    assert "--overwrite" in capsys.readouterr().err
    assert _train(monkeypatch, project, output, "--max-steps", "4", "--overwrite=true") == 0
    settings = json.loads((output / RUN_SETTINGS).read_text())["settings"]
    assert settings["overrides"]["training.max_steps"] == 4
    assert _train(monkeypatch, project, output, "--max-steps", "5", "--overwrite") == 0  # alone: true
    assert _train(monkeypatch, project, output, "--overwrite=maybe") == 2
    assert "expected true or false, not 'maybe'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["adapt", "finetune"])
def test_adapt_and_finetune_take_overwrite_as_a_value(monkeypatch, capsys, tmp_path, name):
    monkeypatch.syspath_prepend(str(SCRIPTS))  # adapt.py imports pretrain.py beside it
    module = _script(name)
    missing = tmp_path / "missing"
    if name == "adapt":  # real inputs: adapt.py checks them (status 2 where missing) before it reads --overwrite's run
        text = tmp_path / "text.txt"
        text.write_text("a line\n", encoding="utf-8")
        argv = ["--train", text, "--dev", text, "--output", tmp_path / "out",
                "--config", SCRIPTS.parent / "configs" / "pretrain_tiny.cfg"]
        monkeypatch.setattr(module, "run_pretrain", lambda config, output, settings: None)
    else:
        argv = [missing, tmp_path / "out", "--train", missing, "--dev", missing]
    for flag, expected in (("--overwrite=false", False), ("--overwrite=True", True), ("--overwrite", True)):
        monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv), flag])
        seen = {}
        real = module.argparse.ArgumentParser.parse_known_args

        def parse_known_args(parser, *args, **kwargs):
            parsed = real(parser, *args, **kwargs)
            seen["overwrite"] = parsed[0].overwrite
            return parsed

        monkeypatch.setattr(module.argparse.ArgumentParser, "parse_known_args", parse_known_args)
        try:
            module.main()
        except SystemExit as exited:
            assert _status(exited.code) != 2, capsys.readouterr().err  # not argparse's usage error
        assert seen["overwrite"] is expected
        monkeypatch.setattr(module.argparse.ArgumentParser, "parse_known_args", real)
