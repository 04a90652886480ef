"""Regression: extreme `mix` logits printed a numpy overflow warning.

`Elmo._mix` with mix = [1e308, -1e308, 0] subtracted the max, which
overflows to -inf for the smallest logit, and numpy printed "RuntimeWarning:
overflow encountered in subtract" (the weights, [1, 0, 0], were right). Now
the overflow is expected and silenced: no warning, the same weights.
"""
import warnings

import numpy
import spacy


def test_extreme_mix_logits_give_the_softmax_without_a_warning():
    elmo = spacy.blank("en").add_pipe("elmo", config={"mix": [1e308, -1e308, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = elmo._mix(3)
    numpy.testing.assert_array_equal(weights, numpy.array([1.0, 0.0, 0.0], dtype=numpy.float32))
