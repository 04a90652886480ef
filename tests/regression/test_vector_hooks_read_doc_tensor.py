"""Regression: with `set_doc_tensor` and `set_vector_hooks` both on, a doc that lost its ELMo had no vectors.

`span.as_doc()` and `doc.copy()` of a `store_layers = false` doc keep `doc.tensor` (the mixed ELMo
vectors `set_doc_tensor` put there) and the hooks, but not the layers. The hooks then fell back to
the vocab's static vectors alone: with none, `.vector` had shape (0,), `.has_vector` was False and
`.similarity` 0.0, where spaCy without the hooks reads the tensor rows (similarity 0.31 on the
sentence below). The hooks now fall back to what spaCy's own API returns: the tensor rows (their
mean for spans and docs) where the vocab has no static vectors, else the static vectors.
"""
import numpy
import pytest
import spacy

pytestmark = pytest.mark.filterwarnings("ignore:.*W007")  # spaCy without the hooks, on a tensor


@pytest.fixture
def make_nlp(allennlp_dir):
    def make(hooks: bool, **cfg):
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "set_doc_tensor": True,
                                     "set_vector_hooks": hooks, **cfg})
        return nlp

    return make


def _vectors(doc):
    return (doc[1].vector, doc[0:3].vector, doc.vector, doc[1].has_vector, doc[0:3].has_vector, doc.has_vector,
            doc[1].similarity(doc[3]), doc[0:2].similarity(doc[2:4]))


def _same(with_hooks, without):
    for a, b in zip(with_hooks, without):
        if isinstance(a, numpy.ndarray):
            assert a.shape == b.shape and a.size > 0
            numpy.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        else:
            assert a == pytest.approx(b, abs=1e-6), (a, b)


def test_span_as_doc_reads_the_tensor_with_and_without_hooks(make_nlp):
    text = "I sat by the bank of the river ."
    plain = make_nlp(False)(text)[3:8].as_doc()
    hooked = make_nlp(True)(text)[3:8].as_doc()
    assert hooked._.elmo is None and hooked.tensor.shape == (5, plain.tensor.shape[1])
    assert _vectors(plain)[3] and _vectors(plain)[6] != 0.0  # spaCy alone reads the tensor
    _same(_vectors(hooked), _vectors(plain))


def test_copy_of_a_store_layers_false_doc_reads_the_tensor(make_nlp):
    text = "the cat sat on the mat"
    hooked = make_nlp(True, store_layers=False)(text)
    original = _vectors(hooked)
    copied = hooked.copy()
    assert copied._.elmo is None
    _same(_vectors(copied), _vectors(make_nlp(False, store_layers=False)(text).copy()))
    # the tensor holds the mixed vectors the layers gave: the copy's vectors are the original's
    numpy.testing.assert_allclose(_vectors(copied)[0], original[0], rtol=1e-5, atol=1e-6)


def test_without_a_tensor_the_fallback_stays_the_static_vectors(make_nlp):
    doc = make_nlp(True, set_doc_tensor=False)("the cat sat")
    doc._.elmo = None
    assert doc.tensor.size == 0 and not doc.has_vector and not doc[1].has_vector
    assert doc[1].vector.shape == (doc.vocab.vectors_length,)
