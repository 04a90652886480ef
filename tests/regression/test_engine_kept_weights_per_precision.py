"""Regression: an engine kept one prepared copy of a layer's weights per layer and kind, so calls in
two precisions in turn (a float32 batch, then a float64 or bfloat16 one, then float32 again) prepared
the weights anew on every call (the key's dtype differed each time). A copy is now kept per layer,
kind, dtype and device: each precision's copy is reused, and a weight change still replaces it."""
import torch

from spacy_elmo.bilm.engine import make_engine
from tests.bilm.stacks import dense_rows, small_stack

LENGTHS = [9, 9, 4, 2, 1]


def _kept(stack, dtype):
    """The engine's kept copies prepared for inputs of `dtype`, by (layer, kind)."""
    return {slot[:2]: prepared for slot, (_, prepared) in stack.engine._kept.items() if _dtype(prepared) == dtype}


def _dtype(prepared):
    return next(t.dtype for t in _tensors(prepared))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


def test_each_precision_keeps_its_own_copy():
    stack = small_stack().eval().float()
    stack.engine = make_engine("mkl")  # one kind of prepared weights for every dtype
    rows = {dtype: dense_rows(torch.randn(2, 5, 9, 4, dtype=dtype)) for dtype in (torch.float32, torch.float64)}
    stack(rows[torch.float32], LENGTHS)
    single = _kept(stack, torch.float32)
    assert single
    stack(rows[torch.float64], LENGTHS)
    double = _kept(stack, torch.float64)
    assert double.keys() == single.keys()
    stack(rows[torch.float32], LENGTHS)
    stack(rows[torch.float64], LENGTHS)
    assert all(_kept(stack, torch.float32)[slot] is single[slot] for slot in single)  # reused, both
    assert all(_kept(stack, torch.float64)[slot] is double[slot] for slot in double)
    with torch.no_grad():
        stack.weight_hh[0].mul_(0.5)
    changed, _ = stack(rows[torch.float64], LENGTHS)
    layer0 = next(slot for slot in double if slot[0] == 0)
    assert _kept(stack, torch.float64)[layer0] is not double[layer0]
    reference, _ = stack.train()(rows[torch.float64], LENGTHS)
    for p, q in zip(changed, reference):
        torch.testing.assert_close(p.float(), q.detach().float(), rtol=0, atol=1e-5)
