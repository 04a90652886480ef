"""Regression: `onednn+kernel` (and for the state, `int8` and `reference`) refused inputs the others took.

* An int32 index given to `BiLM.run` (int64 is documented, int32 worked on
  every other backend) reached the compiled kernel as int32 rows
  (`cell kernel: expected a contiguous torch.int64 CPU tensor`):
  `loops.table_direction` now keeps its rows in int64.
* A float64 `state=` on a float32 model ran on `mkl` and `onednn`, and failed
  on `onednn+kernel` (AssertionError), `int8` (the kernel's dtype check) and
  `reference` ("expected scalar type Float but found Double"). Every backend
  now reads the state in the dtype of the token vectors (`base.state_like`).
"""
import pytest
import torch

from spacy_elmo.bilm.engine import backends
from spacy_elmo.bilm.layout import index_rows
from spacy_elmo.io import load_bilm

SENTENCES = [["a", "b", "c"], ["d"], ["the", "a"]]


def _bilm(allennlp_dir, backend):
    reason = backends.unavailable_reason(backend)
    if reason:
        pytest.skip(f"backend {backend}: {reason}")
    bilm = load_bilm(allennlp_dir)
    bilm.backend = backend
    bilm.lstm.dropout = 0.0
    return bilm


@pytest.mark.parametrize("backend", backends.NAMES)
def test_an_int32_index_gives_the_int64_bits(allennlp_dir, backend):
    bilm = _bilm(allennlp_dir, backend)
    tokens, index, lengths = index_rows(SENTENCES, with_boundaries=True)
    with torch.no_grad():
        _, want, _ = bilm.run(tokens, index, lengths)
        _, got, _ = bilm.run(tokens, index.astype("int32"), lengths)
    assert all(torch.equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("backend", backends.NAMES)
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_a_float64_state_is_read_as_the_models_float32(allennlp_dir, backend, mode):
    bilm = _bilm(allennlp_dir, backend)
    bilm.train(mode == "train")
    generator = torch.Generator().manual_seed(0)
    state = bilm.lstm.zero_state(len(SENTENCES), torch.zeros(1, dtype=torch.float64))
    for t in (*state.h, *state.c):
        t.uniform_(-0.5, 0.5, generator=generator)
    as_float = type(state)(tuple(t.float() for t in state.h), tuple(t.float() for t in state.c))
    with torch.set_grad_enabled(mode == "train"):
        got = bilm(SENTENCES, state=state).layers
        want = bilm(SENTENCES, state=as_float).layers
    assert got.dtype == torch.float32 and torch.equal(got, want)
