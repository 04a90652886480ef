"""Regression: under `int8`, a call's numbers depended on what the model had embedded before.

The start state (the state after `<S>` / `</S>`, computed once and kept) was
computed from the first two rows of the token vectors of whichever batch
first needed it. `int8`'s products quantize each batch at one scale, so those
rows, and every later call's numbers, depended on that first batch (0.009
apart). The start state now reads the boundaries' vectors computed alone
(`encode_tokens([])`), which depend on the model only; on the exact backends
these are the bits of any batch's first two rows, so nothing changes there.
"""
import numpy
import pytest
import torch

from spacy_elmo.bilm.engine import backends
from spacy_elmo.bilm.engine.inference import start_state
from spacy_elmo.bilm.layout import BOS_ROW, EOS_ROW
from spacy_elmo.bilm.lstm import TokenRows
from spacy_elmo.io import load_bilm

SENTENCE = [["The", "bank", "was", "closed", "."]]
OTHERS = [["Prices", "rose", "3.5", "%", "in", "March"], ["Zürich", "!"], ["x" * 30, "and", "more", "words"]]


@pytest.mark.parametrize("cached", [False, True])
def test_int8_results_do_not_depend_on_what_came_before(allennlp_dir, cached):
    if backends.unavailable_reason("int8"):
        pytest.skip(backends.unavailable_reason("int8"))
    first = load_bilm(allennlp_dir)
    first.backend = "int8"
    later = load_bilm(allennlp_dir)
    later.backend = "int8"
    if cached:  # cached tokens are those of the batch that first saw them; these calls share none
        first.enable_cache(1000)
        later.enable_cache(1000)
    later.embed(OTHERS)
    for a, b in zip(first.embed(SENTENCE), later.embed(SENTENCE)):
        numpy.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_exact_backends_start_from_the_state_a_batch_would_give(allennlp_dir, backend):
    if backends.unavailable_reason(backend):
        pytest.skip(backends.unavailable_reason(backend))
    bilm = load_bilm(allennlp_dir)
    bilm.backend = backend
    with torch.no_grad():
        batch = bilm.encode_tokens([w for s in OTHERS for w in s])
        index = torch.tensor([[[BOS_ROW]], [[EOS_ROW]]])
        _, from_batch = bilm.lstm(TokenRows(batch[:2], index), [1])
        alone = start_state(bilm, batch)
    for a, b in zip((*alone.h, *alone.c), (*from_batch.h, *from_batch.c)):
        assert torch.equal(a, b)
