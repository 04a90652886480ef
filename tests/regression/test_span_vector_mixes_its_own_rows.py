"""Regression: a span's vector (`span._.elmo_vector`, and `.vector`/`.similarity` with the vector
hooks) mixed the layers of the whole doc on every call, then kept the span's rows: the cost of a
sentence's vector grew with the doc, and a loop over a long doc's sentences was quadratic (13 ms per
7-token sentence of a 21,000-token doc). Only the span's own rows are mixed now; the vector is the
same (within float32 rounding of the same sums).
"""
import numpy
import pytest

from spacy_elmo.pipeline import extensions
from spacy_elmo.pipeline.extensions import get_doc_layers, get_doc_mix, mix_layers


@pytest.fixture
def mixed_shapes(monkeypatch):
    """The number of tokens of every mix the extensions compute."""
    shapes = []

    def recording(layers, weights, gamma):
        shapes.append(numpy.asarray(layers).shape[1] if numpy.asarray(layers).ndim == 3 else 1)
        return mix_layers(layers, weights, gamma)

    monkeypatch.setattr(extensions, "mix_layers", recording)
    return shapes


def test_a_sentence_vector_mixes_only_its_tokens(nlp_elmo, mixed_shapes):
    nlp_elmo.get_pipe("elmo").cfg["set_vector_hooks"] = True
    doc = nlp_elmo(" ".join(["The bank of the river rose ."] * 40))
    span = doc[14:21]
    vector = span._.elmo_vector
    assert mixed_shapes == [7]
    layers = get_doc_layers(doc)
    weights, gamma = get_doc_mix(doc, layers.shape[0])
    whole = mix_layers(layers, weights, gamma)[14:21].mean(axis=0)
    numpy.testing.assert_allclose(vector, whole, rtol=1e-6, atol=1e-6)
    numpy.testing.assert_array_equal(span.vector, vector)
    assert mixed_shapes == [7, 7]


def test_whitespace_tokens_are_left_out_and_an_all_space_span_is_zeros(nlp_elmo, mixed_shapes):
    doc = nlp_elmo("The bank  rose .")  # a double space: a whitespace token
    assert doc[2].is_space
    vector = doc[1:4]._.elmo_vector
    assert mixed_shapes == [2]
    numpy.testing.assert_allclose(vector, (doc[1]._.elmo_vector + doc[3]._.elmo_vector) / 2, rtol=1e-6, atol=1e-6)
    assert not doc[2:3]._.elmo_vector.any() and doc[2:3]._.elmo_vector.dtype == numpy.float32
