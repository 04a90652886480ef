import pytest

from spacy_elmo.bilm import BiLM, BiLMConfig, OptionsError
from tests.bilm.word_tables import table_config


def test_round_trip_dict():
    config = BiLMConfig(lstm_dim=1024, projection_dim=128, n_highway=1)
    assert BiLMConfig.from_dict(config.to_dict()) == config
    assert config.width == 256 and config.n_output_layers == 3


def test_unknown_setting_is_an_error():
    with pytest.raises(OptionsError, match="unknown biLM setting"):
        BiLMConfig.from_dict({"lstm_dim": 8, "typo": 1}, source="elmo.json")


def test_invalid_values():
    with pytest.raises(OptionsError, match="n_characters"):
        BiLMConfig(n_characters=300)
    with pytest.raises(OptionsError, match="activation"):
        BiLMConfig(activation="gelu")
    with pytest.raises(OptionsError, match="n_tokens_vocab"):
        BiLMConfig(use_character_inputs=False)


def test_invalid_table_settings_are_named():
    with pytest.raises(OptionsError, match="word_table_dim is 0"):
        table_config(word_table_dim=0)
    with pytest.raises(OptionsError, match="word-input biLM"):
        table_config(use_character_inputs=False, n_tokens_vocab=5)
    with pytest.raises(ValueError, match="needs its vocabulary of 5 words"):
        BiLM(table_config())
