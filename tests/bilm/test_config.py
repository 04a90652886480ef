import pytest

from spacy_elmo.bilm import BiLMConfig, OptionsError, published_shapes


def test_round_trip_options_and_dict():
    config = published_shapes("small")
    assert BiLMConfig.from_options(config.to_options()) == config
    assert BiLMConfig.from_dict(config.to_dict()) == config
    assert config.width == 256 and config.n_output_layers == 3


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
        BiLMConfig.from_options(options, source="opts.json")


def test_training_keys_of_bilm_tf_are_accepted():
    options = published_shapes("small").to_options()
    options.update({"n_epochs": 10, "batch_size": 128, "dropout": 0.1, "bidirectional": True})
    assert BiLMConfig.from_options(options).lstm_dim == 1024


def test_invalid_values():
    with pytest.raises(OptionsError, match="n_characters"):
        BiLMConfig(n_characters=300)
    with pytest.raises(OptionsError, match="activation"):
        BiLMConfig(activation="gelu")
    with pytest.raises(OptionsError, match="n_tokens_vocab"):
        BiLMConfig(use_character_inputs=False)
