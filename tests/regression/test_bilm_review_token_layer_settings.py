"""Regression: assigning the token layer's settings had no effect (or stale vectors), now it takes effect at once.

`bilm.boundary_strings = True` changed nothing (the char encoder had been
built with the old value) yet was saved, so the model read literal "<S>"
differently after a save/load round trip (by 3.98). Swapping
`word_table_vocab`, `input_vocab` or `char_dictionary` kept serving the old
cached token vectors (off by 2.72), and a new `char_dictionary` was never
read at all. Each is now a property whose setter rebuilds what reads it and
clears the caches: the model gives the bits of one built with the new value.
"""
from typing import Any, Dict

import numpy
import pytest

from spacy_elmo.bilm import BiLM, BiLMConfig, Vocabulary
from spacy_elmo.bilm.char_ids import CharDictionary
from spacy_elmo.bilm.vocab import WordTableVocabulary
from spacy_elmo.io import load_bilm, load_native_bytes, save_native_bytes
from tests.bilm.word_tables import SENTENCES as TABLE_SENTENCES, WORDS, layers, table_bilm
from tests.io.manylangs_model import write_manylangs_model

BOUNDARY_SENTENCE = [["a", "<S>", "b", "</S>"]]


def _rebuilt(bilm: BiLM, **settings) -> BiLM:
    """A model built with these settings and `bilm`'s weights."""
    kwargs: Dict[str, Any] = dict(vocab=bilm.input_vocab, boundary_strings=bilm.boundary_strings,
                                  word_table_vocab=bilm.word_table_vocab, char_dictionary=bilm.char_dictionary)
    kwargs.update(settings)
    fresh = BiLM(bilm.config, **kwargs)
    fresh.load_state_dict(bilm.state_dict())
    return fresh.eval()


def _assert_same(got, want):
    for a, b in zip(got, want):
        numpy.testing.assert_array_equal(a, b)


def test_assigned_boundary_strings_takes_effect_and_survives_a_round_trip(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    bilm.enable_cache(100)
    plain = bilm.embed(BOUNDARY_SENTENCE)
    bilm.boundary_strings = True
    parity = bilm.embed(BOUNDARY_SENTENCE)
    assert not numpy.array_equal(parity[0], plain[0])
    _assert_same(parity, _rebuilt(bilm, boundary_strings=True).embed(BOUNDARY_SENTENCE))
    again = load_native_bytes(save_native_bytes(bilm)).bilm
    assert again.boundary_strings
    _assert_same(again.embed(BOUNDARY_SENTENCE), parity)
    bilm.boundary_strings = False
    _assert_same(bilm.embed(BOUNDARY_SENTENCE), plain)


def test_a_new_word_table_vocabulary_is_read_at_once():
    bilm = table_bilm()
    bilm.enable_cache(100)
    before = layers(bilm)
    cased = WordTableVocabulary(WORDS, lowercase=False)  # "The", "Money" are now unknown words
    bilm.word_table_vocab = cased
    after = layers(bilm)
    assert not numpy.array_equal(after[0], before[0])
    _assert_same(after, layers(_rebuilt(bilm, word_table_vocab=cased)))
    with pytest.raises(ValueError, match="word table"):
        bilm.word_table_vocab = WordTableVocabulary(WORDS[:2])  # the table has 5 rows


def test_a_new_character_dictionary_is_read_at_once(tmp_path):
    bilm = load_bilm(write_manylangs_model(tmp_path / "zh"))
    bilm.enable_cache(100)
    sentences = [["the", "bank"], ["river", "of", "the"]]
    before = layers(bilm, sentences)
    old = bilm.char_dictionary
    shuffled = CharDictionary(old.chars[::-1], swap_word_ends=old.swap_word_ends)  # same entries, other ids
    bilm.char_dictionary = shuffled
    after = layers(bilm, sentences)
    assert not numpy.array_equal(after[0], before[0])
    _assert_same(after, layers(_rebuilt(bilm, char_dictionary=shuffled), sentences))


def test_a_new_input_vocabulary_is_read_at_once():
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=5)
    bilm = BiLM(config, vocab=Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat"]))
    bilm.reset_parameters(0)
    bilm.eval().enable_cache(100)
    sentences = [["the", "cat"]]
    before = layers(bilm, sentences)
    swapped = Vocabulary(["<S>", "</S>", "<UNK>", "cat", "the"])
    bilm.input_vocab = swapped
    after = layers(bilm, sentences)
    assert not numpy.array_equal(after[0], before[0])
    _assert_same(after, layers(_rebuilt(bilm, vocab=swapped), sentences))
    with pytest.raises(ValueError, match="n_tokens_vocab"):
        bilm.input_vocab = Vocabulary(["<S>", "</S>", "<UNK>"])


def test_constructor_settings_are_kept():
    bilm = table_bilm()
    assert bilm.boundary_strings is False and bilm.char_dictionary is None and bilm.input_vocab is None
    assert bilm.word_table_vocab.words == WORDS
    layers(bilm, TABLE_SENTENCES)
