"""The LSTM stack: training mode under autograd equals the reference recurrence, and the state semantics hold."""
import pytest
import torch

from spacy_elmo.bilm import LSTMState
from spacy_elmo.bilm.engine import backends, make_engine
from tests.bilm.stacks import dense_rows, needs, small_stack


_stack = small_stack


def _run(stack, backend, x, lengths, h0, c0):
    stack.engine = make_engine(backend)
    outs, final = stack(dense_rows(x), lengths, LSTMState(tuple(h0), tuple(c0)))
    w = torch.linspace(-1, 1, outs[-1].numel(), dtype=torch.double).view_as(outs[-1])
    loss = (outs[-1] * w).sum() + (outs[0] ** 2).sum()
    loss = loss + sum((h ** 3).sum() for h in final.h) + sum((0.7 * c).sum() for c in final.c)
    grads = torch.autograd.grad(loss, [x, *h0, *c0, *stack.parameters()])
    return [o.detach() for o in outs], final, grads


def test_training_loop_equals_the_reference_with_gradients():
    """The packed training loop (hand-written backward) against the reference recurrence under autograd."""
    for clips in ((0.5, 0.3), (None, None)):
        stack = _stack(*clips)
        x = torch.randn(2, 5, 7, 4, dtype=torch.double, requires_grad=True)
        lengths = [7, 3, 0, 5, 7]
        h0 = [torch.randn(2, 5, 4, dtype=torch.double, requires_grad=True) for _ in range(2)]
        c0 = [torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True) for _ in range(2)]
        fast = _run(stack, "mkl", x, lengths, h0, c0)
        plain = _run(stack, "reference", x, lengths, h0, c0)
        for a, b in zip(fast[0], plain[0]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
        for a, b in zip(fast[2], plain[2]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", ["mkl", "reference"])
def test_gradcheck(backend):
    stack = _stack(backend=backend)
    lengths = [3, 1, 2]
    x = torch.randn(2, 3, 3, 4, dtype=torch.double, requires_grad=True)

    def fn(inputs):
        outs, final = stack(dense_rows(inputs), lengths)
        return outs[-1].sum() + final.h[0].sum() + final.c[1].sum()

    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_final_state_is_each_rows_last_step_and_padding_is_zero(backend):
    needs(backend)
    stack = _stack(backend=backend).float()
    x = torch.randn(2, 3, 6, 4)
    lengths = [6, 2, 4]
    for mode in (True, False):  # training and inference
        stack.train(mode)
        outs, final = stack(dense_rows(x), lengths)
        _check_final_states(outs, final, lengths)


def test_eval_mode_records_nothing_for_autograd():
    stack = _stack(backend="mkl").eval()
    x = torch.randn(2, 3, 6, 4, dtype=torch.double, requires_grad=True)
    outs, final = stack(dense_rows(x), [6, 2, 4])
    assert not any(t.requires_grad for t in (*outs, *final.h, *final.c))
    stack.train()
    outs, _ = stack(dense_rows(x), [6, 2, 4])
    assert outs[-1].requires_grad


def _check_final_states(outs, final, lengths):
    for b, n in enumerate(lengths):
        torch.testing.assert_close(final.h[-1][:, b], outs[-1][:, b, n - 1] - (outs[-2][:, b, n - 1]))
        assert torch.all(outs[-1][:, b, n:] == 0)
