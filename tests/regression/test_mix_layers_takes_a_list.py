"""Regression: docs/extensions.md shows `mix_layers(layers, weights, gamma)`, but a plain list of
weights (`[1/3] * 3`) raised "AttributeError: 'list' object has no attribute 'astype'". Any
array-like is taken now, and a wrong number of weights is one ValueError, not numpy's."""
import numpy
import pytest

from spacy_elmo.pipeline.extensions import mix_layers


def test_a_list_of_weights_mixes_as_an_array():
    layers = numpy.arange(3 * 2 * 4, dtype=numpy.float32).reshape(3, 2, 4)
    from_list = mix_layers(layers, [0.2, 0.3, 0.5], 2.0)
    assert from_list.dtype == numpy.float32 and from_list.shape == (2, 4)
    numpy.testing.assert_allclose(from_list, 2.0 * (0.2 * layers[0] + 0.3 * layers[1] + 0.5 * layers[2]), rtol=1e-6)
    numpy.testing.assert_array_equal(from_list, mix_layers(layers, numpy.array([0.2, 0.3, 0.5]), 2.0))


def test_a_wrong_number_of_weights_is_one_error():
    with pytest.raises(ValueError, match="2 weights for 3 layers"):
        mix_layers(numpy.zeros((3, 2, 4), dtype=numpy.float32), [0.5, 0.5], 1.0)
