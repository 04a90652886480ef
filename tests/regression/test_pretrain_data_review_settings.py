"""Regression: three pretraining settings read wrongly or failed without naming the setting.

`--paths.train=/data/my--corpus.txt` became '/data/mycorpus.txt' (every "--" of the argument was
stripped, the value's too), and `--training.max-steps 3` kept its "-" (only the `=` form mapped it);
`[paths] vocab` naming a missing file failed with "[Errno 2] ... '/nonexistent'"; and
`--model.char_embedding_dim 0` crashed with ZeroDivisionError. Now only the name's leading "--" goes,
"-" reads as "_" in a name in both forms, a missing vocab file is a SettingsError naming
`[paths] vocab`, and a character embedding of size 0 is an OptionsError (for pretrain, a SettingsError) naming it.
"""
import pytest

from spacy_elmo.bilm.config import BiLMConfig, OptionsError
from spacy_elmo.bilm.vocab import Vocabulary
from spacy_elmo.pretrain import SettingsError, build_language_model, load_config
from spacy_elmo.pretrain.settings import parse_overrides
from tests.cli.invoke import refused


def test_an_equals_value_keeps_its_own_dashes():
    parsed = parse_overrides(["--paths.train=/data/my--corpus.txt", "--paths.dev", "/data/a--b.txt"], env_var=None)
    assert parsed == {"paths.train": "/data/my--corpus.txt", "paths.dev": "/data/a--b.txt"}
    assert parse_overrides(["--paths.cache=a=b"], env_var=None) == {"paths.cache": "a=b"}


def test_a_dash_in_a_name_reads_as_underscore_in_both_forms(monkeypatch):
    parsed = parse_overrides(["--training.max-steps", "3", "--training.accumulate-steps=2",
                              "--model.word-table-trainable"], env_var=None)
    assert parsed == {"training.max_steps": 3, "training.accumulate_steps": 2, "model.word_table_trainable": True}
    monkeypatch.setenv("SPACY_CONFIG_OVERRIDES", "--training.eval-every 5 --paths.vocab=v--1.txt")
    assert parse_overrides([]) == {"training.eval_every": 5, "paths.vocab": "v--1.txt"}
    with pytest.raises(SettingsError, match="section.key"):
        parse_overrides(["--paths=x.txt"], env_var=None)  # a section is no setting, whatever the value holds


def test_a_missing_vocab_file_names_the_setting(tmp_path):
    missing = tmp_path / "nonexistent"
    with pytest.raises(SettingsError, match=r"\[paths\] vocab") as caught:
        load_config(None, {"paths.vocab": str(missing)})
    assert str(missing) in str(caught.value)
    with pytest.raises(SettingsError, match="is a directory"):
        load_config(None, {"paths.vocab": str(tmp_path)})
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\n")
    assert load_config(None, {"paths.vocab": str(tmp_path / "vocab.txt")})["paths"]["vocab"]
    refused(["pretrain", tmp_path / "run", "--paths.train", "t.txt", "--paths.vocab", missing], "[paths] vocab")


def test_a_char_embedding_dim_of_zero_is_an_options_error():
    with pytest.raises(OptionsError, match="char_embedding_dim must be >= 1"):
        BiLMConfig(char_embedding_dim=0)
    with pytest.raises(OptionsError, match="char_embedding_dim must be >= 1"):
        BiLMConfig(char_embedding_dim=-2)
    BiLMConfig(use_character_inputs=False, n_tokens_vocab=10, char_embedding_dim=0)  # no character CNN: unused
    config = load_config(None, {"model.char_embedding_dim": 0, "model.lstm_dim": 8, "model.projection_dim": 4,
                                "softmax.kind": "full"})
    with pytest.raises(SettingsError, match=r"\[model\].*char_embedding_dim must be >= 1"):
        build_language_model(config, Vocabulary(["<S>", "</S>", "<UNK>", "the"]), seed=0)
