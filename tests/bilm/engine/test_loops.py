"""The inference loops of the fast engines (engine/loops.py): each computes the reference
recurrence, reads token tables where it should, and keeps its prepared weights correctly."""
import copy
import pickle

import pytest
import torch

from spacy_elmo.bilm import LSTMState, TokenRows
from spacy_elmo.bilm.engine import backends, base, loops, make_engine
from tests.bilm.stacks import dense_rows, needs, small_stack


def _stack(*args, **kwargs):
    return small_stack(*args, **kwargs).eval()


def _kept(stack, layer):
    """What the engine keeps for one layer (None where it keeps nothing)."""
    found = [prepared for (kept_layer, *_), (_, prepared) in stack.engine._kept.items() if kept_layer == layer]
    return found[0] if found else None


def test_inference_equals_the_training_loop_in_double():
    """Without gradients the fast loop (stacked [x, h] product, tanh via sigmoid) gives the same numbers."""
    for clips, skip in (((0.5, 0.3), True), ((None, None), False)):
        stack = _stack(*clips, skip=skip)
        x = torch.randn(2, 5, 6, 4, dtype=torch.double)
        lengths = [5, 6, 0, 1, 3]
        state = LSTMState(
            tuple(torch.randn(2, 5, 4, dtype=torch.double) for _ in range(2)),
            tuple(torch.randn(2, 5, 8, dtype=torch.double) for _ in range(2)),
        )
        a, final_a = stack.eval()(dense_rows(x), lengths, state)
        b, final_b = stack.train()(dense_rows(x.clone().requires_grad_()), lengths, state)
        for p, q in zip([*a, *final_a.h, *final_a.c], [*b, *final_b.h, *final_b.c]):
            torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-12)
        assert torch.equal(final_a.h[0][:, 2], state.h[0][:, 2])  # an empty row keeps its state


def _float_case():
    """A float32 stack, a token table with rows read by several positions, empty and
    one-step rows, unsorted lengths (rows are reordered inside) and a random state."""
    stack = _stack().float()
    torch.manual_seed(1)
    table = torch.randn(7, 4) * 2
    index = torch.randint(0, 7, (2, 9, 25))
    lengths = [3, 25, 0, 1, 25, 7, 8, 15, 2]
    state = LSTMState(tuple(torch.randn(2, 9, 4) for _ in range(2)), tuple(torch.randn(2, 9, 8) for _ in range(2)))
    return stack, TokenRows(table, index), lengths, state


@pytest.mark.parametrize("backend", ["mkl", "onednn", "onednn+kernel"])  # the exact fast engines
def test_every_backend_computes_the_reference_recurrence(backend, monkeypatch):
    """float32, within the reference fixtures' tolerance; the backend's own step runs."""
    needs(backend)
    stack, rows, lengths, state = _float_case()
    calls = []

    def counted(name, real):
        return lambda *a, **k: calls.append(name) or real(*a, **k)

    for name in ("mkl_step", "onednn_step", "kernel_step"):
        monkeypatch.setattr(loops, name, counted(name, getattr(loops, name)))
    monkeypatch.setattr(loops, "kernel_table_step", counted("table", loops.kernel_table_step))
    stack.engine = make_engine("reference")
    expected, final_expected = stack(rows, lengths, state)
    stack.engine = make_engine(backend)
    got, final_got = stack(rows, lengths, state)
    expected_steps = {"mkl": {"mkl_step"}, "onednn": {"onednn_step"}, "onednn+kernel": {"kernel_step", "table"}}
    assert set(calls) == expected_steps[backend]
    for p, q in zip([*got, *final_got.h, *final_got.c], [*expected, *final_expected.h, *final_expected.c]):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert torch.equal(final_got.c[1][:, 2], state.c[1][:, 2])  # an empty row keeps its state


def test_token_rows_and_dense_inputs_agree():
    rows = _float_case()[1]
    dense = dense_rows(rows.gather())
    assert torch.equal(dense.gather(), rows.gather())
    stack, _, lengths, state = _float_case()
    a, _ = stack(rows, lengths, state)
    b, _ = stack(dense, lengths, state)
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


def test_first_layer_reads_the_table_only_on_onednn_kernel(monkeypatch):
    needs("onednn+kernel")
    stack, rows, lengths, state = _float_case()
    calls = []
    real = loops.table_products
    monkeypatch.setattr(loops, "table_products", lambda *a: calls.append(a[0].shape[0]) or real(*a))
    for backend in backends.BACKENDS:
        stack.engine = make_engine(backend)
        stack(rows, lengths, state)
    assert calls == [7, 7]  # onednn+kernel's first layer, once per direction, one product per table row


def test_table_products_are_the_same_bits_in_any_chunking():
    """Rows of the per-token input products do not depend on how the table is cut."""
    needs("onednn")
    from spacy_elmo.bilm.engine import onednn_ops as onednn

    table, weight, bias = torch.randn(301, 16), torch.randn(64, 16), torch.randn(64)
    with torch.no_grad():  # oneDNN's operators have no autograd
        packed = onednn.pack(weight)
        whole = loops.table_products(table, packed, bias)
        assert torch.equal(loops.table_products(table, packed, bias, max_rows=40), whole)  # 7 x 40 + 21
    torch.testing.assert_close(whole, table @ weight.t() + bias, rtol=0, atol=1e-5)


# -- inference weights kept between calls ------------------------------------------------
def test_inference_weights_are_kept_and_follow_weight_changes(monkeypatch):
    stack = _stack().float()
    rows = dense_rows(torch.randn(2, 5, 9, 4))
    lengths = [9, 9, 4, 2, 1]
    stack(rows, lengths)
    kept = _kept(stack, 0)
    stack(rows, lengths)
    assert _kept(stack, 0) is kept  # reused, not rebuilt
    with torch.no_grad():
        stack.weight_hh[0].mul_(0.5)  # in place, as an optimizer step or load_state_dict does
    changed, _ = stack(rows, lengths)
    assert _kept(stack, 0) is not kept
    reference, _ = stack.train()(rows, lengths)  # the training loop builds nothing to keep
    for p, q in zip(changed, reference):
        torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-6)
    stack.eval()
    stack.engine = make_engine("mkl")
    stack(rows, lengths)
    assert _kept(stack, 0)[0].gates.shape == (8, 32)  # PyTorch's (in, out) layout now
    stack.engine.clear()
    assert not stack.engine._kept
    monkeypatch.setattr(base, "KEPT_WEIGHTS_MAX_BYTES", 0)
    stack(rows, lengths)
    assert not stack.engine._kept  # too large to keep: built per call


def test_first_layer_input_packs_only_where_the_kernel_reads_them():
    needs("onednn+kernel")
    stack, rows, lengths, state = _float_case()
    stack.engine = make_engine("onednn")
    stack(rows, lengths, state)
    assert _kept(stack, 0)[0].input is None
    stack.engine = make_engine("onednn+kernel")
    stack(rows, lengths, state)  # another engine: its own weights, with the packs
    assert _kept(stack, 0)[0].input is not None
    assert _kept(stack, 1)[0].input is None  # never for the upper layers


def test_clear_cache_drops_the_kept_inference_weights(allennlp_bilm):
    allennlp_bilm.embed([["A", "test", "."]])
    assert allennlp_bilm.engine._kept
    allennlp_bilm.clear_cache()
    assert not allennlp_bilm.engine._kept


def test_a_stack_with_kept_weights_copies_and_pickles():
    """oneDNN's packed tensors cannot be copied or pickled: they are left behind."""
    stack = _stack().float()
    rows = dense_rows(torch.randn(2, 3, 5, 4))
    expected, _ = stack(rows, [5, 3, 1])
    assert stack.engine._kept
    for clone in (copy.deepcopy(stack), pickle.loads(pickle.dumps(stack))):
        assert not clone.engine._kept
        got, _ = clone(rows, [5, 3, 1])
        assert all(torch.equal(a, b) for a, b in zip(got, expected))
