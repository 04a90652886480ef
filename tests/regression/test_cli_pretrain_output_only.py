"""Regression: `pretrain runs/x --paths.train t.txt` was refused ("Invalid value for 'config_path':
file 'runs/x' does not exist"): the optional config came before the required run directory, so a
lone path was always taken for the config, and the override's value for the run directory. docs/cli.md
and --help promise that the config may be left out (the built-in defaults); the two-path form
`pretrain CONFIG OUTPUT` must keep working."""
from pathlib import Path

import pytest

import spacy_elmo.pretrain
from spacy_elmo.cli import app
from tests.cli.invoke import flat, runner

TINY = Path(__file__).resolve().parents[2] / "configs" / "pretrain_tiny.cfg"


@pytest.fixture
def runs(monkeypatch):
    """What `pretrain` is asked to do: (config, output_dir), the training itself replaced."""
    calls = []

    def fake_pretrain(config, output_dir, **kwargs):
        calls.append((config, Path(output_dir)))
        return {"step": 0, "tokens": 0, "elapsed_s": 0.0}

    monkeypatch.setattr(spacy_elmo.pretrain, "pretrain", fake_pretrain)
    return calls


def test_one_path_is_the_output_dir_and_the_settings_the_defaults(runs, tmp_path):
    out = tmp_path / "runs" / "x"
    result = runner.invoke(app, ["pretrain", str(out), "--paths.train", "t.txt", "--training.max_steps", "7"])
    assert result.exit_code == 0, result.output
    [(config, output)] = runs
    assert output == out
    assert config["paths"]["train"] == "t.txt" and config["training"]["max_steps"] == 7
    default = spacy_elmo.pretrain.load_config(None)
    assert config["model"] == default["model"]


def test_two_paths_are_config_then_output_dir(runs, tmp_path):
    out = tmp_path / "y"
    result = runner.invoke(app, ["pretrain", str(TINY), str(out), "--quiet", "--paths.train", "t.txt"])
    assert result.exit_code == 0, result.output
    [(config, output)] = runs
    assert output == out and config["paths"]["train"] == "t.txt"
    assert config["model"] == spacy_elmo.pretrain.load_config(TINY)["model"]


@pytest.mark.parametrize("args,expected", [
    ([], "Missing argument 'output_dir'"),
    ([str(TINY), "--paths.train", "t.txt"], "names a config file"),
    (["missing.cfg", "out", "--paths.train", "t.txt"], "file 'missing.cfg' does not exist"),
    (["a", "b", "c"], "Got 3 paths"),
])
def test_malformed_paths_are_usage_errors(runs, args, expected):
    result = runner.invoke(app, ["pretrain", *args])
    text = " ".join(flat(result).replace("│", " ").split())  # the parser's error box, unwrapped
    assert result.exit_code == 2 and expected in text, text
    assert not runs
