"""Regression: one model shared by a float32 and a bfloat16 thread broke both, now each precision keeps its own values.

The token cache and the start state were one entry each, keyed on the weights
and the autocast state, which is per thread: each thread's `validate()`
emptied the entries the other was using, so a float32 batch read bfloat16
vectors (KeyError in `move_to_end`, dtype mismatches, or float32 layers
silently off). The cache now keeps each key's entries side by side (up to
`MAX_KEYS`, least recently used dropped), takes them once per batch under its
lock and uses them throughout; the start state is kept per key too.
"""
import threading

import numpy
import torch

from spacy_elmo.bilm.engine import token_cache
from spacy_elmo.io import load_bilm

SENTENCES = [["The", "bank", "of", "the", "river", "."], ["A", "cat", "sat"]]


def test_two_precisions_alternate_without_emptying_each_other(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    plain = bilm.embed(SENTENCES)
    plain_bf16 = bilm.embed(SENTENCES, precision="bfloat16")
    cache = bilm.enable_cache(1000)
    first = bilm.embed(SENTENCES)
    first_bf16 = bilm.embed(SENTENCES, precision="bfloat16")
    misses = cache.stats()["misses"]
    kept = list(bilm._start)
    again = bilm.embed(SENTENCES)
    again_bf16 = bilm.embed(SENTENCES, precision="bfloat16")
    assert cache.stats()["misses"] == misses  # every token of both precisions still cached
    assert len(kept) == 2 and [id(s) for _, s in bilm._start] == [id(s) for _, s in kept]  # start states kept
    for want, got in ((plain, first), (plain, again), (plain_bf16, first_bf16), (plain_bf16, again_bf16)):
        for a, b in zip(want, got):
            numpy.testing.assert_array_equal(a, b)


def test_keys_are_bounded_and_a_weight_change_drops_the_others():
    a = torch.nn.Linear(2, 2)
    cache = token_cache.TokenCache(10)
    from spacy_elmo.bilm.engine.weights_key import weights_key

    for context in range(token_cache.MAX_KEYS + 2):
        entries = cache.validate(weights_key(a, context))
        cache.add(["x"], torch.ones(1, 2), entries)
    assert len(cache._entries) == token_cache.MAX_KEYS and len(cache) == token_cache.MAX_KEYS
    with torch.no_grad():
        a.weight.add_(1)
    cache.validate(weights_key(a, 0))
    assert len(cache) == 0 and len(cache._entries) == 1


def test_another_thread_between_validate_and_lookup(allennlp_dir, monkeypatch):
    """What another thread could do between this thread's `validate` and `lookup`: a bfloat16
    call on the same cache. It cannot (the lock is held), and would change nothing here."""
    bilm = load_bilm(allennlp_dir)
    tokens = ["The", "bank", "of", "the", "river"]
    with torch.no_grad():
        want = bilm.encode_tokens(tokens)
    bilm.enable_cache(1000)
    with torch.no_grad():
        bilm.encode_tokens(tokens[:2])  # some of them cached in float32
    validate = token_cache.TokenCache.validate
    seen = {"injected": False, "other thread got the lock": None}

    def other_thread_slips_in(self, key):
        entries = validate(self, key)
        if not seen["injected"]:
            seen["injected"] = True
            got = []
            lock = getattr(self, "lock", None)
            probe = threading.Thread(target=lambda: got.append(lock is None or lock.acquire(blocking=False)))
            probe.start()
            probe.join()
            if got[0] and lock is not None:
                lock.release()
            seen["other thread got the lock"] = got[0]
            with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
                assert bilm.encode_tokens(tokens).dtype == torch.bfloat16  # the bfloat16 thread's batch
        return entries

    monkeypatch.setattr(token_cache.TokenCache, "validate", other_thread_slips_in)
    with torch.no_grad():
        got = bilm.encode_tokens(tokens)
    assert got.dtype == torch.float32 and torch.equal(got, want)
    assert seen == {"injected": True, "other thread got the lock": False}
    with torch.no_grad():
        assert torch.equal(bilm.encode_tokens(tokens), want)  # the float32 entries survived the bfloat16 call
