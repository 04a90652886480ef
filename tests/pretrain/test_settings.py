"""Pretraining settings: command-line overrides read as spaCy's commands read them (without spaCy),
bad settings named, and a resume refused where the architecture changed."""
import pytest

from spacy_elmo.pretrain import SettingsError, load_config, pretrain
from spacy_elmo.pretrain.settings import parse_overrides

from .runs import _config

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


@pytest.mark.parametrize("overrides,message", [
    ({"training.optimiser": "adam"}, "unknown override"),
    ({"training.mode": "bogus"}, "choose one of"),
    ({"softmax.kind": "hier"}, "choose one of"),
    ({"vocab.max_size": 2}, r"\[vocab\] max_size = 2: .* 4 \(three special tokens and a word\)"),
    ({"training.learning_rate": 0}, r"\[training\] learning_rate = 0: .*greater than 0"),
    ({"training.batch_tokens": "many"}, r"\[training\] batch_tokens = 'many': .*integer"),
    # every problem at once, in one message
    ({"training.eval_every": 0, "softmax.kind": "x"},
     r"\[softmax\] kind = 'x'; choose one of .*; \[training\] eval_every"),
])
def test_bad_settings(tiny_config_path, overrides, message):
    with pytest.raises(SettingsError, match=message):
        load_config(tiny_config_path, overrides)


def test_unknown_setting_in_file(tmp_path):
    path = tmp_path / "c.cfg"
    path.write_text("[training]\nlearning_rat = 0.1\n")
    with pytest.raises(SettingsError, match="unknown setting"):
        load_config(path)


def test_resume_refuses_a_changed_architecture(tiny_config_path, small_corpus, tmp_path):
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=2)
    pretrain(config, tmp_path / "r", progress=False)
    changed = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=4, model__lstm_dim=32)
    with pytest.raises(SettingsError, match="different architecture.*lstm_dim"):
        pretrain(changed, tmp_path / "r", resume=True, progress=False)
    more_steps = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=4)
    assert pretrain(more_steps, tmp_path / "r", resume=True, progress=False)["step"] == 4
