"""Every serialization form round-trips to identical outputs, without the original files."""
import shutil

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

TEXTS = ["The bank of the river .", "Money in the bank !", ""]


@pytest.fixture
def nlp_tmp_weights(allennlp_dir, tmp_path):
    """A pipeline whose weights directory is deleted after loading."""
    weights = tmp_path / "weights"
    shutil.copytree(allennlp_dir, weights)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights), "mix": [1.0, 0.0, -1.0]})
    nlp("warm up")  # loads the weights
    shutil.rmtree(weights)
    return nlp


def _same(nlp_a, nlp_b):
    for text in TEXTS:
        numpy.testing.assert_array_equal(nlp_a(text)._.elmo, nlp_b(text)._.elmo)
        numpy.testing.assert_array_equal(nlp_a(text)._.elmo_vector, nlp_b(text)._.elmo_vector)


def test_to_disk_and_spacy_load(nlp_tmp_weights, tmp_path):
    nlp_tmp_weights.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    _same(nlp_tmp_weights, loaded)
    assert loaded.get_pipe("elmo").cfg["mix"] == [1.0, 0.0, -1.0]


def test_to_bytes_and_from_bytes(nlp_tmp_weights):
    data = nlp_tmp_weights.to_bytes()
    other = spacy.blank("en")
    config = {k: v for k, v in nlp_tmp_weights.get_pipe_config("elmo").items() if k != "factory"}
    other.add_pipe("elmo", config=config)
    other.from_bytes(data)
    _same(nlp_tmp_weights, other)


def test_component_bytes_round_trip(nlp_tmp_weights):
    elmo = nlp_tmp_weights.get_pipe("elmo")
    data = elmo.to_bytes()
    other = spacy.blank("en").add_pipe("elmo", config={"weights": "/nonexistent/never/read"})
    other.from_bytes(data)
    doc = Doc(nlp_tmp_weights.vocab, words=["a", "b"])
    numpy.testing.assert_array_equal(elmo(doc.copy())._.elmo, other(doc.copy())._.elmo)


def test_docbin_and_doc_bytes_keep_the_layers(nlp_elmo):
    docs = list(nlp_elmo.pipe(TEXTS))
    restored = list(DocBin(docs=docs, store_user_data=True).from_bytes(
        DocBin(docs=docs, store_user_data=True).to_bytes()).get_docs(nlp_elmo.vocab))
    for a, b in zip(docs, restored):
        numpy.testing.assert_array_equal(a._.elmo, b._.elmo)
        numpy.testing.assert_array_equal(a._.elmo_vector, b._.elmo_vector)
    b = Doc(nlp_elmo.vocab).from_bytes(docs[0].to_bytes())
    numpy.testing.assert_array_equal(docs[0]._.elmo, b._.elmo)


def test_store_layers_false_drops_them_from_serialization(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "store_layers": False})
    doc = nlp("kept in memory only")
    assert doc._.elmo.shape == (3, 4, 32)
    restored = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    assert restored._.elmo is None and restored._.elmo_vector is None


@pytest.fixture
def nlp_word_table(tmp_path):
    """A pipeline on a biLM with a word table (tests/bilm/word_tables.py), its directory deleted after loading."""
    from spacy_elmo.io import save_native
    from tests.bilm.word_tables import table_bilm

    save_native(tmp_path / "table", table_bilm())
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tmp_path / "table")})
    nlp("warm up")
    shutil.rmtree(tmp_path / "table")
    return nlp


@pytest.mark.parametrize("form", ["disk", "bytes"])
def test_a_word_table_survives_every_form(nlp_word_table, tmp_path, form):
    if form == "disk":
        nlp_word_table.to_disk(tmp_path / "pipeline")
        other = spacy.load(tmp_path / "pipeline")
    else:
        other = spacy.blank("en")
        other.add_pipe("elmo", config={"weights": "/nonexistent/never/read"})
        other.from_bytes(nlp_word_table.to_bytes())
    bilm = other.get_pipe("elmo").bilm
    assert bilm.word_table_vocab == nlp_word_table.get_pipe("elmo").bilm.word_table_vocab
    _same(nlp_word_table, other)


def test_the_component_saves_the_native_format(nlp_tmp_weights, tmp_path):
    """The model file holds the biLM as the native format's bytes (versioned, checksummed)."""
    import srsly

    from spacy_elmo.io import is_native_bytes

    nlp_tmp_weights.to_disk(tmp_path / "pipeline")
    model = srsly.msgpack_loads((tmp_path / "pipeline" / "elmo" / "model").read_bytes())
    shims = [shim for node in model["shims"] for shim in node]
    assert len(shims) == 1 and is_native_bytes(srsly.msgpack_loads(shims[0])["state"])


@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_a_damaged_saved_pipeline_is_a_weights_error(nlp_tmp_weights, tmp_path, damage):
    from spacy_elmo.io import WeightsError

    nlp_tmp_weights.to_disk(tmp_path / "pipeline")
    path = tmp_path / "pipeline" / "elmo" / "model"
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[len(data) // 2:]
    path.write_bytes(bytes(data))
    with pytest.raises(WeightsError, match="truncated or corrupted"):
        spacy.load(tmp_path / "pipeline")


@pytest.mark.parametrize("used", [False, True], ids=["before-first-use", "after"])
def test_a_pipeline_pickles(allennlp_dir, used):
    """nlp.pipe(n_process=N) pickles the pipeline where processes are spawned: the component's loader too."""
    import pickle

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    if used:
        nlp("warm up")
    other = pickle.loads(pickle.dumps(nlp))
    numpy.testing.assert_array_equal(other(TEXTS[0])._.elmo, nlp(TEXTS[0])._.elmo)
