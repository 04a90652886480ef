"""Command-line overrides are read as spaCy's commands read them, without spaCy."""
import pytest

from spacy_elmo.pretrain import SettingsError
from spacy_elmo.pretrain.settings import parse_overrides

ARGS = [
    ["--training.max_steps", "100", "--paths.train", "corpus/x.txt.gz"],
    ["--training.max_steps=100", "--training.learning-rate=0.5"],
    ["--training.flag", "--corpus.lang", "de"],
    ["--paths.train", "[\"a.txt\", \"b.txt\"]", "--paths.vocab", "null", "--model.cell_clip", "1e3"],
    ["--x.y", "01", "--x.z", "NaN", "--x.w", "\"quoted\""],
    [],
]


@pytest.mark.parametrize("args", ARGS)
def test_overrides_are_parsed_as_spacy_parses_them(args, monkeypatch):
    from spacy.cli._util import parse_config_overrides

    monkeypatch.delenv("SPACY_CONFIG_OVERRIDES", raising=False)
    assert parse_overrides(list(args)) == parse_config_overrides(list(args))


def test_the_environment_variable_wins(monkeypatch):
    monkeypatch.setenv("SPACY_CONFIG_OVERRIDES", "--training.seed 3 --training.threads=1")
    assert parse_overrides(["--training.seed", "1", "--training.max_steps", "5"]) == {
        "training.seed": 3, "training.max_steps": 5, "training.threads": 1,
    }


@pytest.mark.parametrize("args, message", [(["--max_steps", "1"], "--section.key"), (["steps"], "starts with --")])
def test_bad_overrides(args, message, monkeypatch):
    monkeypatch.delenv("SPACY_CONFIG_OVERRIDES", raising=False)
    with pytest.raises(SettingsError, match=message):
        parse_overrides(args)
