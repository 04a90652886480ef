"""The word vocabularies: the softmax's (specials first, then by frequency; unknown words read as <UNK>), and the
word table's (lookup, lowercasing, the shared unknown row)."""
import pytest
import torch

from spacy_elmo.bilm.vocab import SPECIAL_TOKENS, Vocabulary
from tests.bilm.word_tables import WORDS, table_bilm


def test_from_counts_ranks_by_count_then_alphabetically_within_max_size_and_min_count():
    counts = {"b": 3, "a": 3, "c": 5, "rare": 1, "<S>": 9}
    vocab = Vocabulary.from_counts(counts, max_size=6, min_count=2)
    assert vocab.words == [*SPECIAL_TOKENS, "c", "a", "b"]
    assert vocab.encode(["c", "rare", "b"]) == [3, vocab.unk, 5] and vocab.index("zzz") == vocab.unk


def test_file_round_trip_and_bad_vocabularies_are_refused(tmp_path):
    vocab = Vocabulary([*SPECIAL_TOKENS, "the", "cat"])
    vocab.to_file(tmp_path / "vocab.txt")
    assert Vocabulary.from_file(tmp_path / "vocab.txt") == vocab and len(vocab) == 5
    with pytest.raises(ValueError, match="duplicate word"):
        Vocabulary([*SPECIAL_TOKENS, "the", "the"])
    (tmp_path / "bad.txt").write_text("the\ncat\n")
    with pytest.raises(ValueError, match="bad.txt: vocabulary lacks the special token"):
        Vocabulary.from_file(tmp_path / "bad.txt")


def test_lookup_lowercases_and_unknown_words_share_the_learned_unknown_row():
    bilm = table_bilm()
    vocab = bilm.word_table_vocab
    assert vocab.encode(["The", "BANK", "zzz", "qqq"]) == [0, 1, len(WORDS) + 2, len(WORDS) + 2]
    encoder = bilm.token_encoder
    rows = encoder.table_vectors(torch.tensor(vocab.encode(["zzz", "qqq", "river"])))
    torch.testing.assert_close(rows[0], encoder.word_specials[2])
    torch.testing.assert_close(rows[1], encoder.word_specials[2])
    torch.testing.assert_close(rows[2], encoder.word_table[2])
