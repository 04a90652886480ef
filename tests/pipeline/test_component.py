"""The elmo component: annotations, extensions, segmentation, hooks, errors."""
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.io import load_bilm
from spacy_elmo.pipeline import ElmoNotReady

# the sense probe's sentences (benchmarks/bench_bilm.py), also the README's example
SENSES = Path(__file__).parents[2] / "benchmarks" / "data" / "word_senses.tsv"


def _words(doc):
    return [t.text for t in doc if not t.is_space]


def test_doc_layers_equal_the_biLM(nlp_elmo, allennlp_dir):
    doc = nlp_elmo("The bank of the river .  Money in the bank !")
    bilm = load_bilm(allennlp_dir)
    expected = bilm.embed([_words(doc)])[0]
    keep = [i for i, t in enumerate(doc) if not t.is_space]
    assert doc._.elmo.shape == (3, len(doc), 32) and doc._.elmo.dtype == numpy.float32
    numpy.testing.assert_allclose(doc._.elmo[:, keep], expected, atol=1e-5)
    # the whitespace token gets zero vectors
    space = [i for i, t in enumerate(doc) if t.is_space]
    assert space and not doc._.elmo[:, space].any()


def test_views_and_mixed_vectors(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "mix": [0.0, 1.0, 2.0], "gamma": 0.5})
    doc = nlp("one two three four")
    layers = doc._.elmo
    numpy.testing.assert_array_equal(doc[1]._.elmo, layers[:, 1])
    numpy.testing.assert_array_equal(doc[1:3]._.elmo, layers[:, 1:3])
    w = numpy.exp([0.0, 1.0, 2.0])
    w /= w.sum()
    token_vec = 0.5 * numpy.tensordot(w, layers[:, 1], 1)
    numpy.testing.assert_allclose(doc[1]._.elmo_vector, token_vec, rtol=1e-5)
    mixed = 0.5 * numpy.tensordot(w, layers, 1)
    numpy.testing.assert_allclose(doc[1:3]._.elmo_vector, mixed[1:3].mean(0), rtol=1e-5)
    numpy.testing.assert_allclose(doc._.elmo_vector, mixed.mean(0), rtol=1e-5)


def test_uniform_mix_by_default(nlp_elmo):
    doc = nlp_elmo("a b")
    numpy.testing.assert_allclose(doc[0]._.elmo_vector, doc._.elmo[:, 0].mean(0), rtol=1e-5)


def test_empty_one_token_and_long_docs(nlp_elmo):
    empty = nlp_elmo("")
    assert empty._.elmo.shape == (3, 0, 32)
    assert empty._.elmo_vector.shape == (32,) and not empty._.elmo_vector.any()
    one = nlp_elmo("word")
    assert one._.elmo.shape == (3, 1, 32)
    words = (["word", "and", "more", "words", "."] * 4000)
    long_doc = nlp_elmo(Doc(nlp_elmo.vocab, words=words))
    assert long_doc._.elmo.shape == (3, 20_000, 32)
    assert numpy.isfinite(long_doc._.elmo).all()
    assert (numpy.abs(long_doc._.elmo).sum(axis=(0, 2)) > 0).all()  # nothing dropped


def test_vector_hooks(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "set_vector_hooks": True})
    a, b = nlp("the river bank"), nlp("the money bank")
    assert a.has_vector and a[2].has_vector
    numpy.testing.assert_array_equal(a.vector, a._.elmo_vector)
    numpy.testing.assert_array_equal(a[2].vector, a[2]._.elmo_vector)
    sim = a[2].similarity(b[2])
    assert -1.0 <= sim <= 1.0 and sim != 1.0
    assert a.similarity(a) == pytest.approx(1.0)
    assert a[0:2].similarity(b[0:2]) == pytest.approx(a[0:2]._.elmo_vector @ b[0:2]._.elmo_vector / (
        numpy.linalg.norm(a[0:2]._.elmo_vector) * numpy.linalg.norm(b[0:2]._.elmo_vector)), rel=1e-5)


def test_pipe_batches_equal_single_calls(nlp_elmo):
    texts = ["short one", "a somewhat longer sentence with more words in it", "", "x"]
    piped = list(nlp_elmo.pipe(texts, batch_size=3))
    for text, doc in zip(texts, piped):
        numpy.testing.assert_allclose(doc._.elmo, nlp_elmo(text)._.elmo, atol=1e-5)


def test_fresh_frozen_biLM_is_refused_until_weights_are_given(allennlp_dir):
    nlp = spacy.blank("en")
    sizes = {"lstm_dim": 64, "projection_dim": 16, "n_layers": 2,
             "filters": [[1, 4], [2, 8], [3, 16], [4, 32], [5, 64]], "char_embedding_dim": 4, "n_highway": 2}
    nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": sizes}})
    with pytest.raises(ElmoNotReady, match="random weights"):
        nlp("some text")
    from spacy.training import Example

    examples = [Example.from_dict(nlp.make_doc("a b c"), {})]
    with pytest.raises(ElmoNotReady, match="initialize"):
        nlp.initialize(lambda: examples)
    nlp.config["initialize"]["components"]["elmo"] = {"weights": str(allennlp_dir)}
    nlp.initialize(lambda: examples)
    doc = nlp("a b c")
    numpy.testing.assert_allclose(doc._.elmo, load_bilm(allennlp_dir).embed([["a", "b", "c"]])[0], atol=1e-5)


def test_fresh_biLM_may_be_fine_tuned_without_weights():
    nlp = spacy.blank("en")
    sizes = {"lstm_dim": 8, "projection_dim": 4, "n_layers": 1, "filters": [[1, 4], [2, 4]], "n_highway": 0}
    nlp.add_pipe("elmo", config={"frozen": False, "model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": sizes}})
    assert nlp("x y")._.elmo.shape == (2, 2, 8)


def test_missing_weights_directory_is_a_clear_error(tmp_path):
    from spacy_elmo.io import WeightsError

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tmp_path / "missing")})
    with pytest.raises(WeightsError, match="no such directory"):
        nlp("text")


def test_default_model_is_the_embedded_english_biLM():
    from spacy_elmo.resources import default_model_path

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    doc = nlp("He sat on the bank of the river .")
    assert doc._.elmo.shape[1] == len(doc)
    assert nlp.get_pipe("elmo").bilm.config.width == doc._.elmo.shape[2]
    assert default_model_path().is_dir()


def test_weights_win_over_sizes_and_unused_pipelines_still_save_weights(allennlp_dir, tmp_path):
    nlp = spacy.blank("en")
    sizes = {"lstm_dim": 8, "projection_dim": 4, "n_layers": 1, "filters": [[1, 4]], "n_highway": 0}
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir),
                                 "model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": sizes}})
    nlp.to_disk(tmp_path / "p")  # saved before the biLM was ever used
    loaded = spacy.load(tmp_path / "p")
    assert loaded("a b")._.elmo.shape == (3, 2, 32)


def test_embedded_biLM_separates_the_senses_of_bank():
    """The README's example: the sense probe's ten "bank"s. Layer 0 is one vector for all of
    them; in each LSTM layer every bank's nearest other bank has its sense, and banks of one
    sense are closer on average than banks of the other."""
    rows = [line.rstrip("\n").split("\t") for line in SENSES.read_text(encoding="utf8").splitlines()
            if line.startswith("bank\t")]
    assert [sense for _, sense, _ in rows] == ["river"] * 5 + ["money"] * 5
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    banks = numpy.stack([doc._.elmo[:, [t.text for t in doc].index("bank")]
                         for doc in nlp.pipe([text for _, _, text in rows])])
    assert all(numpy.allclose(banks[0, 0], bank[0], atol=1e-5) for bank in banks[1:])
    banks /= numpy.linalg.norm(banks, axis=-1, keepdims=True)
    sense = numpy.array([0] * 5 + [1] * 5)
    same = (sense[:, None] == sense) & ~numpy.eye(10, dtype=bool)
    for layer in (1, 2):
        sim = banks[:, layer] @ banks[:, layer].T
        assert sim[same].mean() > sim[sense[:, None] != sense].mean()
        nearest = (sim - 2 * numpy.eye(10)).argmax(1)
        assert (sense[nearest] == sense).all(), (layer, nearest)


def test_component_mix_of_wrong_length(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "mix": [1.0, 2.0]})
    with pytest.raises(ValueError, match="mix has 2 weights but the biLM has 3 layers"):
        nlp("text")
