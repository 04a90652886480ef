"""Regression: a saved pipeline's scalar-mix settings overrode the config it was loaded with.

`ScalarMix` kept `trainable`, `layer_norm`, `layer_dropout`, `l2_lambda` and `top_layer_only` as
plain attrs, which thinc puts back from the saved model on load: `spacy.load(path, config=...)`
or an edited config.cfg changed `nlp.config` and not the mix, though two of them change the
predictions. They are now `ConfigValue`s, as the listener's dropout and grad_factor are.
"""
import numpy

from spacy_elmo.layers.config_value import setting
from spacy_elmo.layers.scalar_mix import ScalarMix

SETTINGS = ("layer_dropout", "l2_lambda", "trainable", "top_layer_only", "layer_norm")


def test_the_config_settings_survive_loading_saved_ones():
    saved = ScalarMix(n_layers=3, layer_dropout=0.1, l2_lambda=0.0, trainable=True)
    saved.initialize()
    built = ScalarMix(n_layers=3, layer_dropout=0.5, l2_lambda=0.01, trainable=False, top_layer_only=True,
                      layer_norm=True)
    built.from_bytes(saved.to_bytes())  # what spacy.load does after building from the config
    assert {name: setting(built, name) for name in SETTINGS} == {
        "layer_dropout": 0.5, "l2_lambda": 0.01, "trainable": False, "top_layer_only": True, "layer_norm": True}
    X = [numpy.arange(24, dtype="float32").reshape(3, 2, 4)]
    Y = built.predict(X)[0]
    top = X[0][-1]
    expected = (top - top.mean(axis=-1, keepdims=True)) / numpy.sqrt(top.var(axis=-1, keepdims=True) + 1e-12)
    numpy.testing.assert_allclose(Y, expected, atol=1e-4)  # the top layer alone, each token normalised
    # the weights still come from the saved model
    numpy.testing.assert_array_equal(built.get_param("s"), saved.get_param("s"))


def test_a_mix_saved_with_plain_settings_loads_with_the_configs():
    saved = ScalarMix(n_layers=3)
    saved.initialize()
    for name in SETTINGS:  # as a pipeline saved before the fix holds them
        saved.attrs[name] = setting(saved, name)
    built = ScalarMix(n_layers=3, top_layer_only=True)
    built.from_bytes(saved.to_bytes())
    assert setting(built, "top_layer_only") is True
