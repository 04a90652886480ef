"""Regression: docs without sentence boundaries were cut only after ".", "!", "?", "...", "…", "?!"
and "!?": a token "!!" (which TreebankTokenizer makes), "??" or "?!?" never ended a sentence, nor
did the full stops and question marks of other scripts ("。", "؟", "।") that the published
multilingual models read. Thirty ten-token sentences ending in "!!" became windows of 256 and 44
tokens, each read from one zero state across sentence ends, where they are windows of whole
sentences now (at most `max_window` tokens each).
"""
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.layers.segments import _sentences, doc_segments


@pytest.mark.parametrize("final", ["!!", "??", "?!?", "....", "。", "？", "؟", "।", "!"])
def test_a_run_of_sentence_final_marks_ends_a_sentence(final):
    assert _sentences(["a", "b", final, "c", final]) == [(0, 3), (3, 5)]


@pytest.mark.parametrize("token", ["U.S.", "a.", ".a", "!x", "", "-", ":"])
def test_other_tokens_do_not(token):
    assert _sentences(["a", token, "b"]) == [(0, 3)]


def test_sentences_ending_in_double_marks_share_windows_of_whole_sentences():
    words = (["w"] * 9 + ["!!"]) * 30
    doc = Doc(spacy.blank("en").vocab, words=words)
    segments = doc_segments(doc, max_window=64, max_length=256)
    assert [len(segment.indices) for segment in segments] == [60] * 5
