"""Regression: a sentence's layers changed in the last bits with its batch.

The soak's probe doc drifted by up to 3.6e-6 between runs: MKL computes the
rows of a product 1 to 3 rows high with another kernel than taller ones, and
the LSTM's per-step products shrink to that height at the end of a batch (or
start there, for a batch of 1 to 3 sentences). Every product is now computed
at `heights.product_rows` rows (at least 8 on the LSTM's), so with its token
vectors fixed (the token cache) a sentence gets the same bits in any batch. The
<S>/</S> vectors were the other half: recomputed with each batch's new tokens,
they came out of products of varying height; they are now computed alone,
once, and kept in the token cache (computed beside whatever came first, they
broke the serialization round trips, which compare two instances).
"""
import random

import numpy
import pytest

from spacy_elmo.bilm.engine import backends
from spacy_elmo.io import load_bilm
from spacy_elmo.resources import default_model_path

PROBE = "The bank of the river was steep , but the bank in town was closed on Monday .".split()


def _model(weights, backend):
    reason = backends.unavailable_reason(backend)
    if reason:
        pytest.skip(f"backend {backend}: {reason}")
    model = load_bilm(weights)
    model.backend = backend
    return model


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_sentence_layers_are_the_same_bits_in_any_batch(allennlp_dir, backend):
    """Every backend: oneDNN's rows are invariant from 3 rows up (heights
    rounded to a granule), the cell kernel splits rows between threads, never
    columns, MKL's products are kept at least 8 rows high."""
    model = _model(allennlp_dir, backend)
    rng = random.Random(0)
    others = [[rng.choice(PROBE) for _ in range(rng.randint(1, 30))] for _ in range(40)]
    model.enable_cache(words=sorted(set(PROBE) | {t for s in others for t in s}))
    alone = model.embed([PROBE])[0]
    batches = [
        [PROBE, others[0]],  # two rows: products 2 high without the padding rows
        [others[1], PROBE, others[2]],
        others[:5] + [PROBE],  # the probe is the longest row for its last steps
        others + [PROBE],
        [PROBE, PROBE],
    ]
    for batch in batches:
        got = model.embed(batch)[batch.index(PROBE)]
        assert numpy.array_equal(got, alone), float(numpy.abs(got - alone).max())
    # the batching budget decides which sentences share a batch: it changes no bit either
    small, large = model.embed(others, batch_tokens=64), model.embed(others, batch_tokens=50_000)
    assert all(numpy.array_equal(a, b) for a, b in zip(small, large))


def test_first_sight_and_cached_runs_agree_bit_for_bit(allennlp_dir):
    """The soak's case: the probe's tokens and boundaries computed on first sight,
    then reused while other batches bring new words."""
    model = load_bilm(allennlp_dir)
    model.enable_cache()
    first = model.embed([PROBE])[0]
    rng = random.Random(1)
    words = ["river", "money", "account", "stream", "Tuesday", "shore", "loan", "x" * 40]
    others = [[rng.choice(words + PROBE) for _ in range(rng.randint(1, 25))] for _ in range(30)]
    for batch in ([others[0], PROBE], others + [PROBE], [PROBE]):
        got = model.embed(batch)[batch.index(PROBE)]
        assert numpy.array_equal(got, first), float(numpy.abs(got - first).max())
    empty = model.embed([[]])[0]
    assert empty.shape == (first.shape[0], 0, first.shape[2])


@pytest.mark.parametrize("backend", ["mkl", "onednn"])
def test_token_vectors_do_not_depend_on_the_other_new_tokens(backend):
    """Without the cache, a batch's new tokens are encoded together: the character
    CNN groups them by length and the highway multiplies all of them, so the
    products' heights follow the batch. They are padded to `product_rows(n,
    library, "encoder")` rows (64 on MKL, 8 on oneDNN, whose 1-row products
    differ). (The shipped biLM: the fixture's CNN is too small to reach MKL's
    other kernels.)"""
    import torch

    model = _model(default_model_path(), backend)
    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyzAEIOU-'0123456789éß"
    vocab = list(dict.fromkeys("".join(rng.choice(letters) for _ in range(rng.randint(1, 16))) for _ in range(400)))
    with torch.no_grad():
        full = model.encode_uncached(vocab, with_boundaries=False)
        for height in (1, 2, 5, 17, 43, 64, 150):
            part = model.encode_uncached(vocab[:height], with_boundaries=False)
            assert torch.equal(part, full[:height]), (height, float((part - full[:height]).abs().max()))
