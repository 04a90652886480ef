"""Regression: a failed assignment to doc._.elmo deleted the layers the doc had.

`set_doc_layers` cleared the doc's layers and mix before it checked the new
value, so `doc._.elmo = <wrong shape>` raised its ValueError with the doc's
layers already gone, and a nested list raised an AttributeError
('list' object has no attribute 'ndim'). The value is now checked first, a
nested list of the right shape is converted, and a wrong one is a ValueError.
"""
import numpy
import pytest


def test_wrong_shape_keeps_the_layers(nlp_elmo):
    doc = nlp_elmo("a b c")
    layers, vector = doc._.elmo.copy(), doc[0]._.elmo_vector.copy()
    with pytest.raises(ValueError, match="shape"):
        doc._.elmo = numpy.zeros((3, 5, layers.shape[2]), dtype=numpy.float32)
    with pytest.raises(ValueError):
        doc._.elmo = [[[1.0]]]
    with pytest.raises(ValueError, match="numpy array"):
        doc._.elmo = object()
    numpy.testing.assert_array_equal(doc._.elmo, layers)
    numpy.testing.assert_array_equal(doc[0]._.elmo_vector, vector)


def test_a_nested_list_of_the_right_shape(nlp_elmo):
    doc = nlp_elmo("a b")
    doc._.elmo = doc._.elmo.tolist()
    assert isinstance(doc._.elmo, numpy.ndarray) and doc._.elmo.shape[1] == 2
