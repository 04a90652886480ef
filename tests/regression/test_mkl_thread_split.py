"""Regression: on 2 threads the `mkl` backend's trimmed run (boundary steps
skipped) differed from the full run in the last bits.

MKL splits a product's rows between its threads in blocks of 4 and computes a
remainder of 1 to 3 rows with another kernel, so on 2 threads a row of a
product 9 to 11 rows high came out different from the same row in a product
12 rows high. The two runs' step products have different heights (the full
run also carries the rows that are at their closing boundary), so a sentence
got different bits. The suite passed on a loaded machine (where it ran with
fewer threads) and failed on an idle one. MKL products are now computed at a
multiple of 4 rows (engine/product_rows.py). The thread count is set here, not taken from
the machine, so the test is the same on any machine.
"""
import random

import numpy
import pytest
import torch

from spacy_elmo.bilm.engine import backends
from spacy_elmo.bilm.engine.product_rows import product_rows
from spacy_elmo.io import load_bilm


@pytest.fixture
def threads():
    """Set PyTorch's thread count for one test; the previous count comes back after."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def test_mkl_heights_are_multiples_of_the_row_block():
    for product in ("step", "encoder"):
        assert all(product_rows(n, "mkl", product) % 4 == 0 for n in range(0, 3000))


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_mkl_rows_do_not_depend_on_the_product_height(threads, n_threads):
    """The measurement behind engine/product_rows.py, for the step products' shape."""
    threads(n_threads)
    generator = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(shape, generator=generator) for shape in [(160, 64), (64, 512), (512,)])
    tallest = torch.addmm(b, x, w)
    for n in range(1, 160):
        height = product_rows(n, "mkl")
        assert torch.equal(torch.addmm(b, x[:height], w)[:n], tallest[:n]), (n, height)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_trimmed_run_is_the_full_run_on_any_thread_count(allennlp_dir, ewt_sentences, threads, n_threads):
    reason = backends.unavailable_reason("mkl")
    if reason:
        pytest.skip(reason)
    threads(n_threads)
    model = load_bilm(allennlp_dir)
    model.backend = "mkl"
    rng = random.Random(n_threads)
    sentences = [["word"], [], *rng.sample(ewt_sentences, 20), ["two", "words"]]
    with torch.no_grad():
        trimmed = model(sentences)
        full = model(sentences, keep_boundaries=True)
    for i, n in enumerate(trimmed.lengths.tolist()):
        assert torch.equal(trimmed.layers[:, i, :n], full.layers[:, i, 1 : n + 1]), i
    # and a sentence's layers do not depend on its batch
    alone = model.embed([sentences[5]])[0]
    assert numpy.array_equal(model.embed(sentences)[5], alone)
