"""Regression: with max_window > max_length, a window of several sentences
could hold more than max_length tokens, the most the biLM is documented to
read from one zero state. Windows are now bounded by both.
"""
import random

from spacy_elmo.layers.segments import split_window


def test_no_window_longer_than_max_length():
    rng = random.Random(0)
    for _ in range(2000):
        n = rng.randint(1, 40)
        texts = [rng.choice(["a", "b", ".", "!"]) for _ in range(n)]
        max_window, max_length = rng.randint(1, 12), rng.randint(1, 10)
        stride = rng.randint(1, max_length)
        segments = split_window(list(range(n)), texts, max_window, max_length, stride)
        assert all(len(segment.indices) <= max_length for segment in segments), (texts, max_window, max_length)
        kept = sorted(i for segment in segments for i in segment.kept)
        assert kept == list(range(n))  # every token once


def test_the_reviewers_case():
    texts = ["a", "b", "c", ".", "d", "e", "f", "g", "."]  # two sentences, 9 tokens
    segments = split_window(list(range(9)), texts, max_window=9, max_length=8)
    assert [len(s.indices) for s in segments] == [4, 5]
