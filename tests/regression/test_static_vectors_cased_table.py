"""Regression: scripts/static_vectors.py treated a cased word table as lower-cased.

It took the casing from the model's metadata and assumed lower case where the metadata says nothing
(a converted ELMoForManyLangs model, an `--init-from` model): every row was also given to the word's
Title- and UPPER-case forms, so the CNN baseline "with the same vectors" had vectors for "BANK"
and "River" that the biLM, whose table is case-sensitive, never reads, and word_table.json said
"lowercase": true. The casing is now the table vocabulary's own.
"""
import spacy
import srsly

from spacy_elmo.io import load_model, save_native
from tests.io.manylangs_model import write_manylangs_model
from tests.regression.test_train_script_exit_status_and_settings import _script

WORDS = ["bank", "Bank", "river", "the", "."]


def test_a_cased_table_gives_only_its_own_forms(tmp_path):
    model = load_model(write_manylangs_model(tmp_path / "manylangs", words=WORDS))
    vocab = model.bilm.word_table_vocab
    assert not vocab.lowercase
    save_native(tmp_path / "native", model.bilm, metadata=model.metadata)
    _script("static_vectors").main([str(tmp_path / "vectors"), "--weights", str(tmp_path / "native")])
    nlp = spacy.load(tmp_path / "vectors")
    for word in ["bank", "Bank", "BANK", "River", "RIVER", "THE", "the"]:
        assert nlp.vocab.has_vector(word) == (vocab.encode([word])[0] != vocab.unknown_id), word
    assert srsly.read_json(tmp_path / "vectors" / "word_table.json")["lowercase"] is False


def test_an_output_in_a_missing_folder_is_made_with_its_parents(tmp_path):
    """Regression: on a fresh clone (no training/), `static_vectors.py training/static_vectors` failed with
    FileNotFoundError after loading the model: spaCy's to_disk makes the folder, not its parents."""
    model = load_model(write_manylangs_model(tmp_path / "manylangs", words=WORDS))
    save_native(tmp_path / "native", model.bilm, metadata=model.metadata)
    output = tmp_path / "training" / "static_vectors"
    _script("static_vectors").main([str(output), "--weights", str(tmp_path / "native")])
    assert spacy.load(output).vocab.has_vector("bank")
