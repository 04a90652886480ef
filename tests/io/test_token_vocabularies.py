"""`io/token_vocabularies.py`: token_vocab.json round trips both vocabularies and rejects a malformed file."""
import pytest

from spacy_elmo.bilm import CharDictionary
from spacy_elmo.bilm.vocab import WordTableVocabulary
from spacy_elmo.io.token_vocabularies import load_token_vocabularies, save_token_vocabularies


def test_round_trip_of_either_vocabulary_or_none(tmp_path):
    words = WordTableVocabulary(["the", "bank"], lowercase=True, truncate_chars=48)
    chars = CharDictionary(["<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>", "é"], swap_word_ends=True)
    for pair in [(words, chars), (words, None), (None, chars)]:
        save_token_vocabularies(tmp_path / "token_vocab.json", *pair)
        assert load_token_vocabularies(tmp_path / "token_vocab.json") == pair


def test_a_malformed_file_names_itself(tmp_path):
    path = tmp_path / "token_vocab.json"
    path.write_text('{"word_table": {"words": ["a"], "bos": "<nope>"}}')
    with pytest.raises(ValueError, match="token_vocab.json: not a valid token vocabulary file"):
        load_token_vocabularies(path)
