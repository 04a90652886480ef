"""Vector hooks on a doc that keeps no ELMo gave `.vector` None.

With `set_vector_hooks`, `doc.vector`, `span.vector` and `token.vector` returned
`*._.elmo_vector`, which is None once the doc's ELMo is gone: `doc._.elmo = None`, or
`doc.copy()` of a doc annotated with `store_layers = false` (the copy keeps the hooks but
not the layers). spaCy's API then broke: `token.vector_norm` raised thinc's "Only numpy and
cupy arrays are supported, but found NoneType". The hooks now fall back to spaCy's static
vector (zeros without static vectors), and `.has_vector` stays False (with `set_doc_tensor`, the tensor's
rows: test_vector_hooks_read_doc_tensor.py).
"""
import numpy
import pytest
import spacy


@pytest.fixture
def nlp_hooks(allennlp_dir):
    def make(**cfg):
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "set_vector_hooks": True, **cfg})
        return nlp

    return make


def _check_no_elmo_vectors(doc):
    assert not doc.has_vector
    for obj in (doc, doc[0:2], doc[1]):
        vector = obj.vector
        assert isinstance(vector, numpy.ndarray)
        assert vector.shape == (doc.vocab.vectors_length,)
    assert doc[1].vector_norm == 0.0
    assert doc[0:2].vector_norm == 0.0
    assert doc.vector_norm == 0.0


def test_copy_of_a_store_layers_false_doc_has_array_vectors(nlp_hooks):
    doc = nlp_hooks(store_layers=False)("the cat sat")
    assert doc.has_vector and doc.vector.shape == (doc._.elmo.shape[-1],)
    _check_no_elmo_vectors(doc.copy())


def test_cleared_layers_give_array_vectors(nlp_hooks):
    doc = nlp_hooks()("the cat sat")
    doc._.elmo = None
    _check_no_elmo_vectors(doc)


def test_vectors_with_elmo_are_unchanged(nlp_hooks):
    doc = nlp_hooks()("the cat sat")
    numpy.testing.assert_array_equal(doc[1].vector, doc[1]._.elmo_vector)
    numpy.testing.assert_array_equal(doc[0:2].vector, doc[0:2]._.elmo_vector)
    numpy.testing.assert_array_equal(doc.vector, doc._.elmo_vector)
