"""Regression: `Vocabulary.from_file` kept a UTF-8 byte-order mark on the first word.

A vocabulary file saved with a BOM (as some editors on Windows write) starting "the" gave the word
"\\ufeffthe", so "the" was an unknown word, silently. The file is now read as utf-8-sig: the mark
is dropped and the first word is itself.
"""
from spacy_elmo.bilm.vocab import Vocabulary


def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\ufeffthe\n<S>\n</S>\n<UNK>\ncat\n".encode("utf-8"))
    vocab = Vocabulary.from_file(path)
    assert vocab.words[0] == "the" and vocab.index("the") == 0 and vocab.index("the") != vocab.unk
    assert vocab == Vocabulary(["the", "<S>", "</S>", "<UNK>", "cat"])


def test_a_byte_order_mark_before_a_special_token_is_dropped_too(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\ufeff<S>\n</S>\n<UNK>\n".encode("utf-8"))
    assert Vocabulary.from_file(path).bos == 0
