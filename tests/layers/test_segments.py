"""Segments: real sentences are read whole (as the reference reads them), windows cut at sentence ends."""
import numpy
from spacy.tokens import Doc

from spacy_elmo.io import load_bilm
from spacy_elmo.layers.segments import doc_segments, split_window


def _sentence(n, seed=0):
    rng = numpy.random.default_rng(seed)
    words = ["the", "bank", "river", "money", "and", "of", "a", "large", "old", "house", "by", "with"]
    return [words[i] for i in rng.integers(0, len(words), n - 1)] + ["."]


def test_a_long_one_sentence_doc_is_read_whole(nlp_elmo, allennlp_dir):
    """110 tokens, no sentence boundaries: the same vectors as the biLM run on the whole sentence."""
    words = _sentence(110)
    doc = nlp_elmo(Doc(nlp_elmo.vocab, words=words))
    expected = load_bilm(allennlp_dir).embed([words])[0]
    numpy.testing.assert_allclose(doc._.elmo, expected, atol=1e-5)


def test_sentences_are_read_whole_and_separately(nlp_elmo, allennlp_dir):
    long, short = _sentence(110, seed=1), ["Second", "one", "here", "."]
    starts = [i == 0 for i in range(110)] + [True, False, False, False]
    doc = Doc(nlp_elmo.vocab, words=long + short, sent_starts=starts)
    doc = nlp_elmo(doc)
    a, b = load_bilm(allennlp_dir).embed([long, short])
    numpy.testing.assert_allclose(doc._.elmo, numpy.concatenate([a, b], axis=1), atol=1e-5)


def test_windows_pack_whole_sentences():
    texts = ["a"] * 40 + ["."] + ["b"] * 40
    assert [len(w) for w in split_window(list(range(81)), texts, 64)] == [41, 40]
    texts = ["a", "."] * 10 + ["b"] * 100 + ["."]  # short sentences, then a long one
    assert [len(w) for w in split_window(list(range(len(texts))), texts, 64)] == [20, 101]
    assert [len(w) for w in split_window(list(range(150)), ["x"] * 150, 64)] == [150]


def test_only_sentences_longer_than_max_length_are_cut(nlp_elmo):
    windows = split_window(list(range(600)), ["x"] * 600, 64, max_length=256)
    assert [len(w) for w in windows] == [256, 256, 88]
    doc = Doc(nlp_elmo.vocab, words=["x"] * 300)
    segments = doc_segments(doc, max_window=64, max_length=256)
    assert [len(s) for s in segments] == [256, 44]
    assert sum(segments, []) == list(range(300))  # every token in exactly one segment, in order
