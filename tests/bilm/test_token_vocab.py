"""The word table's vocabulary: lookup, lowercasing, the shared unknown row."""
import torch

from tests.bilm.word_tables import WORDS, table_bilm


def test_lookup_lowercases_and_unknown_words_share_the_learned_unknown_row():
    bilm = table_bilm()
    vocab = bilm.word_table_vocab
    assert vocab.encode(["The", "BANK", "zzz", "qqq"]) == [0, 1, len(WORDS) + 2, len(WORDS) + 2]
    encoder = bilm.token_encoder
    rows = encoder.table_vectors(torch.tensor(vocab.encode(["zzz", "qqq", "river"])))
    torch.testing.assert_close(rows[0], encoder.word_specials[2])
    torch.testing.assert_close(rows[1], encoder.word_specials[2])
    torch.testing.assert_close(rows[2], encoder.word_table[2])
