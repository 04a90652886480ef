"""Regression: under `int8`, another thread's `clear_cache()` could crash an embedding call.

`Int8Engine._encoder_weights` read `self._encoder_kept` once to create it and
again to store a packed weight; a `clear()` in between (another thread's
`BiLM.clear_cache()`) set it to None, and the store raised "TypeError:
'NoneType' object does not support item assignment". It is now read into a
local once. The test makes the clear happen at exactly that point: inside
the packing, between the check and the store.
"""
import numpy
import pytest

from spacy_elmo.bilm.engine import backends, int8
from spacy_elmo.io import load_bilm

SENTENCES = [["a", "b"], ["c"]]


def test_a_clear_while_a_weight_is_packed(allennlp_dir, monkeypatch):
    if backends.unavailable_reason("int8"):
        pytest.skip(backends.unavailable_reason("int8"))
    bilm = load_bilm(allennlp_dir)
    bilm.backend = "int8"
    want = bilm.embed(SENTENCES)
    bilm.clear_cache()
    pack = int8.pack
    clears = []

    def pack_then_clear(*args, **kwargs):
        packed = pack(*args, **kwargs)
        bilm.clear_cache()  # what another thread may do at any moment
        clears.append(1)
        return packed

    monkeypatch.setattr(int8, "pack", pack_then_clear)
    got = bilm.embed(SENTENCES)
    assert clears
    for a, b in zip(want, got):
        numpy.testing.assert_array_equal(a, b)
