import pytest

from spacy_elmo.bilm import BiLMConfig, OptionsError
from spacy_elmo.io.options import config_from_options, config_to_options, published_shapes


def test_round_trip_options():
    config = published_shapes("small")
    assert config_from_options(config_to_options(config)) == config
    assert config.width == 256 and config.n_output_layers == 3


def test_published_shapes():
    assert published_shapes("original").lstm_dim == 4096
    with pytest.raises(ValueError, match="unknown published shape"):
        published_shapes("medium")


@pytest.mark.parametrize(
    "options,message",
    [
        ({"char_cnn": {}}, "missing required section 'lstm'"),
        ({"lstm": {"dim": 4, "projection_dim": 2, "n_layers": 1, "typo": 1}}, "unknown key"),
        ({"lstm": {"dim": 4, "projection_dim": 2}}, "missing required key"),
        ({"lstm": {"dim": 4, "projection_dim": 2, "n_layers": 1}}, "token encoder is unknown"),
        ({"lstm": {"dim": 4, "projection_dim": 2, "n_layers": 1}, "extra": 1}, "unknown top-level"),
        ({"lstm": {"dim": "x", "projection_dim": 2, "n_layers": 1}, "n_tokens_vocab": 3}, "must be an integer"),
    ],
)
def test_bad_options_give_clear_errors(options, message):
    with pytest.raises(OptionsError, match=message):
        config_from_options(options, source="opts.json")


def test_training_keys_of_bilm_tf_are_accepted():
    options = config_to_options(published_shapes("small"))
    options.update({"n_epochs": 10, "batch_size": 128, "dropout": 0.1, "bidirectional": True})
    assert config_from_options(options).lstm_dim == 1024


def test_word_inputs_round_trip():
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=5)
    options = config_to_options(config)
    assert "char_cnn" not in options and options["n_tokens_vocab"] == 5
    assert config_from_options(options) == config


def test_no_published_form_for_a_word_table_or_a_character_dictionary():
    with pytest.raises(OptionsError, match="a word table"):
        config_to_options(BiLMConfig(word_table_rows=3, word_table_dim=2))
    with pytest.raises(OptionsError, match="a character dictionary"):
        config_to_options(BiLMConfig(characters="dictionary", n_characters=40))
