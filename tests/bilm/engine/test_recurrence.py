"""The training path (packed rows, hand-written backward, optional compiled cell) against plain autograd."""
import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, BiLSTMStack, LSTMState
from spacy_elmo.bilm.engine import backends, cell_kernel, make_engine
from spacy_elmo.bilm.engine.recurrence import PackPlan
from tests.bilm.stacks import dense_rows


def _stack(hidden, proj, clips, dtype, skip=True):
    torch.manual_seed(0)
    config = BiLMConfig(lstm_dim=hidden, projection_dim=proj, n_layers=2, cell_clip=clips[0], proj_clip=clips[1],
                        use_skip_connections=skip, filters=((1, 4),), n_highway=0)
    stack = BiLSTMStack(config).to(dtype)
    for p in stack.parameters():
        p.data.normal_(0, 0.6)
    return stack


def _loss_and_grads(stack, backend, inputs, lengths, state, wrt=()):
    stack.engine = make_engine(backend)
    outs, final = stack(dense_rows(inputs), lengths.tolist(), state)
    w = torch.linspace(-1, 1, outs[-1].numel(), dtype=inputs.dtype).view_as(outs[-1])
    loss = (outs[-1] * w).sum() + (outs[0] ** 2).sum()
    loss = loss + sum((h ** 3).sum() for h in final.h) + sum(c.sum() for c in final.c)
    grads = torch.autograd.grad(loss, [*wrt, *stack.parameters()])
    return [o.detach() for o in outs] + [t.detach() for t in (*final.h, *final.c)], grads


def test_pack_plan_puts_each_step_in_one_block():
    plan = PackPlan([2, 0, 3, 3], time=4, device=torch.device("cpu"))
    assert plan.order.tolist() == [2, 3, 0, 1]
    assert plan.counts == [3, 3, 2] and plan.offsets == [0, 3, 6] and plan.total == 8
    padded = torch.arange(2 * 4 * 4, dtype=torch.float32).view(2, 4, 4, 1)
    packed = plan.pack(padded)
    # step 0: rows 2, 3, 0; step 1: rows 2, 3, 0; step 2: rows 2, 3
    assert packed[0, :, 0].tolist() == [8, 12, 0, 9, 13, 1, 10, 14]
    back = plan.unpack(packed, 4)
    mask = torch.tensor([[t < n for t in range(4)] for n in [2, 0, 3, 3]])
    assert torch.equal(back[0, ..., 0], torch.where(mask, padded[0, ..., 0], torch.zeros(())))
    # each position's previous step, for steps >= 1
    assert plan.previous.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("hidden,proj", [(16, 8), (13, 5)])  # 13: columns past the last multiple of 8
@pytest.mark.parametrize("clips", [(0.5, 0.3), (None, None)])
@pytest.mark.parametrize("kernel", [True, False])
def test_training_path_equals_autograd_in_float32(hidden, proj, clips, kernel, monkeypatch):
    """The training loop (cell through the kernel on `onednn+kernel`, PyTorch's ops on `mkl`)
    against the `reference` backend's plain recurrence under autograd."""
    backend = "onednn+kernel" if kernel else "mkl"
    if backends.unavailable_reason(backend):
        pytest.skip(f"backend {backend}: {backends.unavailable_reason(backend)}")
    calls = []
    real = cell_kernel.train_backward
    monkeypatch.setattr(cell_kernel, "train_backward", lambda *a: calls.append(1) or real(*a))
    stack = _stack(hidden, proj, clips, torch.float32)
    lengths = torch.tensor([7, 3, 0, 5, 7, 1])
    x = torch.randn(2, 6, 7, proj, requires_grad=True)
    state = LSTMState(tuple(torch.randn(2, 6, proj, requires_grad=True) for _ in range(2)),
                      tuple(torch.randn(2, 6, hidden, requires_grad=True) for _ in range(2)))
    wrt = (x, *state.h, *state.c)
    fast, fast_grads = _loss_and_grads(stack, backend, x, lengths, state, wrt=wrt)
    assert bool(calls) == kernel
    plain, plain_grads = _loss_and_grads(stack, "reference", x, lengths, state, wrt=wrt)
    for a, b in zip(fast, plain):
        torch.testing.assert_close(a, b, rtol=2e-6, atol=2e-6)
    for a, b in zip(fast_grads, plain_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-5)


def test_backward_can_run_twice_on_a_retained_graph():
    stack = _stack(16, 8, (0.5, 0.3), torch.float32)
    x = torch.randn(2, 3, 5, 8, requires_grad=True)
    outs, _ = stack(dense_rows(x), [5, 2, 4])
    loss = outs[-1].square().sum()
    (first,) = torch.autograd.grad(loss, x, retain_graph=True)
    (second,) = torch.autograd.grad(loss, x)
    assert torch.equal(first, second)
