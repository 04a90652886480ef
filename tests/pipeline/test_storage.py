"""What a doc keeps (`store`, `store_dtype`, `set_doc_tensor`): float16 layers, only the mix, doc.tensor.

Each mode is checked against the default pipeline (every layer in float32) on
the same text, through the extensions, serialization and the listeners.
"""
import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.pipeline.extensions import get_doc_mixed, mixed_vectors

from tests.conftest import tagged_examples, tagger_pipeline

TEXT = "The bank of the river .  It rose ."  # a double space: a whitespace token with zero layers
MIX = [1.0, 0.0, -1.0]
GAMMA = 0.5


def _nlp(weights, **settings):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights), "mix": MIX, "gamma": GAMMA, **settings})
    return nlp


@pytest.fixture(scope="module")
def reference(allennlp_dir):
    """The default pipeline's doc: every layer, float32."""
    return _nlp(allennlp_dir)(TEXT)


def _vectors(doc):
    return (
        numpy.stack([t._.elmo_vector for t in doc]),
        doc[1:4]._.elmo_vector,
        doc._.elmo_vector,
    )


def test_default_keeps_float32_layers_and_leaves_doc_tensor_alone(reference):
    assert reference._.elmo.dtype == numpy.float32 and reference._.elmo.shape == (3, len(reference), 32)
    assert reference.tensor.size == 0
    assert get_doc_mixed(reference) is None
    assert any(t.is_space for t in reference)


def test_float16_layers_are_kept_with_views_and_float32_vectors(allennlp_dir, reference):
    doc = _nlp(allennlp_dir, store_dtype="float16")(TEXT)
    layers = doc._.elmo
    assert layers.dtype == numpy.float16 and layers.shape == reference._.elmo.shape
    numpy.testing.assert_array_equal(layers, reference._.elmo.astype(numpy.float16))  # rounded once, from float32
    assert doc[2]._.elmo.dtype == numpy.float16 and numpy.shares_memory(doc[2]._.elmo, layers)
    assert doc[1:4]._.elmo.shape == (3, 3, 32) and numpy.shares_memory(doc[1:4]._.elmo, layers)
    for got, expected in zip(_vectors(doc), _vectors(reference)):
        assert got.dtype == numpy.float32
        numpy.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)  # float16: about 3 digits
    assert layers.nbytes == reference._.elmo.nbytes // 2


@pytest.mark.parametrize("dtype,atol", [("float32", 1e-6), ("float16", 2e-3)])
def test_mix_only_keeps_no_layers_and_the_vectors_still_work(allennlp_dir, reference, dtype, atol):
    doc = _nlp(allennlp_dir, store="mix", store_dtype=dtype)(TEXT)
    assert doc._.elmo is None and doc[2]._.elmo is None and doc[1:4]._.elmo is None
    kept = get_doc_mixed(doc)
    assert kept.dtype == numpy.dtype(dtype) and kept.shape == (len(doc), 32)
    assert kept.nbytes == len(doc) * 32 * numpy.dtype(dtype).itemsize  # one row per token, not L+1
    for got, expected in zip(_vectors(doc), _vectors(reference)):
        assert got.dtype == numpy.float32
        numpy.testing.assert_allclose(got, expected, atol=atol, rtol=atol)
    space = next(t for t in doc if t.is_space)
    assert not space._.elmo_vector.any()
    if dtype == "float32":  # the token's vector is a view of the kept mix
        assert numpy.shares_memory(doc[2]._.elmo_vector, kept)


def test_assigning_layers_replaces_a_kept_mix(allennlp_dir, reference):
    doc = _nlp(allennlp_dir, store="mix")(TEXT)
    doc._.elmo = reference._.elmo.copy()
    assert get_doc_mixed(doc) is None and doc._.elmo.shape == reference._.elmo.shape
    numpy.testing.assert_allclose(doc._.elmo_vector, reference._.elmo_vector, atol=1e-6)
    doc._.elmo = None
    assert doc._.elmo is None and doc._.elmo_vector is None and mixed_vectors(doc) is None


@pytest.mark.parametrize("store", ["layers", "mix"])
def test_set_doc_tensor_fills_doc_tensor_with_the_float32_mix(allennlp_dir, reference, store):
    doc = _nlp(allennlp_dir, store=store, store_dtype="float16", set_doc_tensor=True)(TEXT)
    assert doc.tensor.dtype == numpy.float32 and doc.tensor.shape == (len(doc), 32)
    numpy.testing.assert_allclose(doc.tensor, mixed_vectors(reference), atol=1e-6)
    # spaCy's own vectors fall back to doc.tensor when the vocab has no vectors
    assert doc[1].has_vector
    numpy.testing.assert_array_equal(doc[1].vector, doc.tensor[1])


def test_mix_only_in_float32_shares_its_array_with_doc_tensor(allennlp_dir):
    doc = _nlp(allennlp_dir, store="mix", set_doc_tensor=True)(TEXT)
    assert get_doc_mixed(doc) is doc.tensor  # the mix is held once


@pytest.mark.parametrize("settings", [{"store": "mixed"}, {"store_dtype": "bfloat16"}])
def test_unknown_store_settings_are_errors(allennlp_dir, settings):
    with pytest.raises(ValueError, match="store"):
        _nlp(allennlp_dir, **settings)


STORE_SETTINGS = {"store": "mix", "store_dtype": "float16", "set_doc_tensor": True, "store_layers": True}


def test_settings_round_trip_through_disk_and_bytes(allennlp_dir, tmp_path):
    nlp = _nlp(allennlp_dir, **STORE_SETTINGS)
    expected = nlp(TEXT)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    other = spacy.blank("en")
    other.add_pipe("elmo", config={k: v for k, v in nlp.get_pipe_config("elmo").items() if k != "factory"})
    other.from_bytes(nlp.to_bytes())
    for copy in (loaded, other):
        cfg = copy.get_pipe("elmo").cfg
        assert {key: cfg[key] for key in STORE_SETTINGS} == STORE_SETTINGS
        doc = copy(TEXT)
        assert doc._.elmo is None
        numpy.testing.assert_array_equal(get_doc_mixed(doc), get_doc_mixed(expected))
        numpy.testing.assert_array_equal(doc.tensor, expected.tensor)
    assert loaded.config["components"]["elmo"]["store"] == "mix"


@pytest.mark.parametrize("store", ["layers", "mix"])
def test_docbin_keeps_float16_user_data(allennlp_dir, store):
    nlp = _nlp(allennlp_dir, store=store, store_dtype="float16")
    docs = list(nlp.pipe([TEXT, "Money in the bank !", ""]))
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    restored = list(DocBin(store_user_data=True).from_bytes(data).get_docs(nlp.vocab))
    for a, b in zip(docs, restored):
        for x, y in ((a._.elmo, b._.elmo), (get_doc_mixed(a), get_doc_mixed(b))):
            assert (x is None) == (y is None)
            if x is not None:
                assert y.dtype == numpy.float16
                numpy.testing.assert_array_equal(x, y)
        numpy.testing.assert_array_equal(a._.elmo_vector, b._.elmo_vector)
    back = Doc(nlp.vocab).from_bytes(docs[0].to_bytes())
    numpy.testing.assert_array_equal(back._.elmo_vector, docs[0]._.elmo_vector)


def test_doc_tensor_survives_doc_bytes_not_docbin(allennlp_dir):
    """spaCy's rule, not ours: Doc.to_bytes keeps doc.tensor, DocBin does not (docs/component.md says so)."""
    doc = _nlp(allennlp_dir, set_doc_tensor=True)(TEXT)
    numpy.testing.assert_array_equal(Doc(doc.vocab).from_bytes(doc.to_bytes()).tensor, doc.tensor)
    restored = next(DocBin(docs=[doc], store_user_data=True).get_docs(doc.vocab))
    assert restored.tensor.size == 0 and restored._.elmo is not None


@pytest.mark.filterwarnings("ignore:.*W101")  # spaCy: the docs' user_data keys are not merged
def test_doc_from_docs_drops_the_layers_and_running_elmo_again_gives_them(allennlp_dir):
    """docs/component.md's table: `Doc.from_docs` joins docs without their layers; `elmo` on the
    joined doc gives it layers of its own length."""
    nlp = _nlp(allennlp_dir, set_doc_tensor=True)
    first, second = nlp("The bank of the river ."), nlp("It rose .")
    joined = Doc.from_docs([first, second])
    assert joined._.elmo is None and joined[0]._.elmo_vector is None
    assert joined.tensor.shape == (len(first) + len(second), first.tensor.shape[1])  # spaCy joins the tensor
    again = nlp.get_pipe("elmo")(joined)
    assert again._.elmo.shape[1] == len(joined)


def _listener_outputs(nlp, docs):
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    listener = tok2vec.get_ref("listener")
    return listener.predict(docs)


def test_listeners_get_float32_layers_from_float16_docs(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, elmo_config={"store_dtype": "float16"})
    nlp.update(examples, sgd=optimizer)  # the component hands the listeners float32 layers directly
    docs = list(nlp.pipe(["the cat sat on the mat", "a dog ran off"]))
    assert docs[0]._.elmo.dtype == numpy.float16
    layers = _listener_outputs(nlp, docs)
    for doc, got in zip(docs, layers):
        assert got.dtype == numpy.float32 and got.shape == doc._.elmo.shape
        numpy.testing.assert_array_equal(got, doc._.elmo.astype(numpy.float32))
    assert all(t.tag_ for t in docs[0])
    # elmo frozen in training but annotating: the listener reads the float16 doc._.elmo
    losses = nlp.update(tagged_examples(nlp), sgd=optimizer, exclude=["elmo"], annotates=["elmo"])
    assert numpy.isfinite(losses["tagger"])


def test_mix_only_with_listeners_is_a_clear_error(allennlp_dir):
    with pytest.raises(ValueError, match=r"store = \"mix\" keeps no layers.*'tagger' listen"):
        tagger_pipeline(allennlp_dir, elmo_config={"store": "mix"})
