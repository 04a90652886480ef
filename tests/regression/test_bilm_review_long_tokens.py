"""Regression: long tokens held memory no bound counted (205 MiB, stats said 1 MiB), now it is bounded.

The module-wide row cache of `char_ids` (100,000 entries) was keyed on the
whole token, though a row reads only its first `max_chars - 2` bytes, and the
token cache counted its vectors' bytes but not their keys: 20,000 tokens of
10,000 characters kept 205 MiB alive. The row caches are now keyed on the
token's first `max_chars - 2` characters (each is at least one byte, so the
row is the same); the token cache counts the keys of tokens longer than
`FREE_KEY_CHARS` in its bytes, and does not learn tokens longer than
`MAX_LEARNED_TOKEN_CHARS` (they are computed, with the same bits).
"""
import gc
import sys
import tracemalloc

import numpy
import pytest
import torch

from spacy_elmo.bilm.char_ids import CharDictionary, CharIdEncoder, token_to_char_ids
from spacy_elmo.bilm.engine import token_cache
from spacy_elmo.io import load_bilm

TRICKY = ["", "a", "x" * 47, "x" * 48, "x" * 49, "x" * 10_000, "é" * 60, "ü" + "x" * 47, "x" * 47 + "ü",
          "x" * 46 + "€€", "\udfff" * 30, "a\udfffb" * 20, "😀" * 40, "<S>", "</S>"]


@pytest.mark.parametrize("max_chars", [3, 4, 12, 50])
def test_rows_are_those_of_the_whole_token(max_chars):
    encoder = CharIdEncoder(max_chars)
    for token in TRICKY + [t + "tail" for t in TRICKY]:
        numpy.testing.assert_array_equal(encoder.ids(token), token_to_char_ids(token, max_chars), err_msg=repr(token))


def test_the_row_caches_key_on_what_a_row_reads():
    encoder = CharIdEncoder(50)
    assert encoder.ids("x" * 48 + "a" * 10_000) is encoder.ids("x" * 48 + "b" * 10_000)  # one entry
    dictionary = CharDictionary(list("abx") + ["<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>"])
    by_dictionary = CharIdEncoder(12, dictionary=dictionary)
    rows = [by_dictionary.ids("ab" * 5 + c * 10_000) for c in "abx"]
    assert rows[0] is rows[1] is rows[2]
    assert max(len(key) for key in by_dictionary._cache) == 10


def test_long_tokens_keep_no_memory_outside_the_bounds(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    long_token = "y" * 10_000
    with torch.no_grad():
        want = bilm.encode_tokens([long_token, "short"])
    cache = bilm.enable_cache(50_000, max_bytes=1 << 20)
    with torch.no_grad():
        first, again = bilm.encode_tokens([long_token, "short"]), bilm.encode_tokens([long_token, "short"])
    assert torch.equal(first, want) and torch.equal(again, want)
    assert long_token not in cache and "short" in cache
    row_bytes = bilm.config.projection_dim * 4
    assert cache.nbytes == row_bytes

    url = "https://example.org/" + "a" * (token_cache.FREE_KEY_CHARS + 10)  # learned; its key counted
    assert token_cache.FREE_KEY_CHARS < len(url) <= token_cache.MAX_LEARNED_TOKEN_CHARS
    with torch.no_grad():
        bilm.encode_tokens([url])
    assert url in cache and cache.nbytes == 2 * row_bytes + sys.getsizeof(url)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for start in range(0, 600, 200):
            bilm.embed([[f"{i:06d}" + "x" * 20_000] for i in range(start, start + 200)])  # 24 MB of text
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 4 << 20, f"{held / 2**20:.1f} MiB held after the inputs are gone"
