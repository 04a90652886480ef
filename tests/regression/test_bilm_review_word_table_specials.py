"""Regression: a case-sensitive word table gave a text "<S>" its special row, now it is an unknown word.

`WordTableVocabulary` looked tokens up among its pretrained words and its
special rows alike, so in a case-sensitive table (where nothing lower-cases
them away) a literal "<S>" read the sentence boundary's row. A token is now
looked up among the pretrained words only; a miss is the unknown row. Where
the boundaries' names are pretrained words (ELMoForManyLangs' `word.dic`
holds `<bos>`, `<eos>` and `<oov>`, and no specials), a text token equal to
one still reads that row, as the reference does; with `boundary_strings` the
literal boundaries read the boundaries' rows, as their characters do.
"""
import numpy
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.vocab import WordTableVocabulary
from spacy_elmo.io.manylangs import load_manylangs
from tests.bilm.word_tables import WORDS, table_bilm
from tests.io.manylangs_model import write_manylangs_model


def test_special_names_are_unknown_words():
    for lowercase in (False, True):
        vocab = WordTableVocabulary(["a", "b"], lowercase=lowercase)
        assert (vocab.bos_id, vocab.eos_id, vocab.unknown_id) == (2, 3, 4)
        assert vocab.encode(["<S>", "</S>", "<UNK>", "zzz", "a"]) == [4, 4, 4, 4, 0]
        assert "<S>" not in vocab and "a" in vocab


def test_the_model_reads_a_literal_boundary_as_an_unknown_word():
    bilm = table_bilm()
    cased = WordTableVocabulary(WORDS, lowercase=False)
    bilm.word_table_vocab = cased
    with torch.no_grad():
        vectors = bilm.encode_tokens(["<S>", "zzz"])
        table_ids = torch.tensor([cased.bos_id, cased.eos_id, cased.unknown_id, cased.unknown_id])
        want = bilm.token_encoder(torch.from_numpy(bilm.char_encoder.encode(["<S>", "zzz"])), table_ids)
    assert torch.equal(vectors, want)


def test_boundary_strings_read_the_boundary_rows():
    plain = table_bilm()
    parity = BiLM(plain.config, boundary_strings=True, word_table_vocab=plain.word_table_vocab)
    parity.load_state_dict(plain.state_dict())
    parity.eval()
    with torch.no_grad():
        vectors = parity.encode_tokens(["<S>", "</S>"])
    assert torch.equal(vectors[2:], vectors[:2])  # a literal boundary is the boundary


def test_manylangs_words_named_like_its_boundaries_keep_their_rows(tmp_path):
    bilm = load_manylangs(write_manylangs_model(tmp_path / "zh"))
    vocab = bilm.word_table_vocab
    assert vocab.specials == []
    assert vocab.encode(["<bos>", "<eos>", "<oov>", "bank", "zzz"]) == [
        vocab.bos_id, vocab.eos_id, vocab.unknown_id, vocab.words.index("bank"), vocab.unknown_id]
    numpy.testing.assert_array_equal(vocab.encode(["<pad>"]), [vocab.words.index("<pad>")])
