"""The fused recurrence equals plain autograd, and the state semantics hold."""
import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, BiLSTMStack, LSTMState


def _stack(cell_clip=0.5, proj_clip=0.3, skip=True):
    torch.manual_seed(0)
    config = BiLMConfig(
        lstm_dim=8, projection_dim=4, n_layers=2, cell_clip=cell_clip, proj_clip=proj_clip,
        use_skip_connections=skip, filters=((1, 4),), n_highway=0,
    )
    stack = BiLSTMStack(config).double()
    for p in stack.parameters():
        p.data.normal_(0, 0.8)
    return stack


def _run(stack, fused, x, lengths, h0, c0):
    stack.fused = fused
    outs, final = stack(x, lengths, LSTMState(tuple(h0), tuple(c0)))
    w = torch.linspace(-1, 1, outs[-1].numel(), dtype=torch.double).view_as(outs[-1])
    loss = (outs[-1] * w).sum() + (outs[0] ** 2).sum()
    loss = loss + sum((h ** 3).sum() for h in final.h) + sum((0.7 * c).sum() for c in final.c)
    grads = torch.autograd.grad(loss, [x, *h0, *c0, *stack.parameters()])
    return [o.detach() for o in outs], final, grads


def test_fused_backward_equals_autograd():
    for clips in ((0.5, 0.3), (None, None)):
        stack = _stack(*clips)
        x = torch.randn(2, 5, 7, 4, dtype=torch.double, requires_grad=True)
        lengths = torch.tensor([7, 3, 0, 5, 7])
        h0 = [torch.randn(2, 5, 4, dtype=torch.double, requires_grad=True) for _ in range(2)]
        c0 = [torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True) for _ in range(2)]
        fused = _run(stack, True, x, lengths, h0, c0)
        plain = _run(stack, False, x, lengths, h0, c0)
        for a, b in zip(fused[0], plain[0]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
        for a, b in zip(fused[2], plain[2]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_fused_gradcheck():
    stack = _stack()
    lengths = torch.tensor([3, 1, 2])
    x = torch.randn(2, 3, 3, 4, dtype=torch.double, requires_grad=True)

    def fn(inputs):
        outs, final = stack(inputs, lengths)
        return outs[-1].sum() + final.h[0].sum() + final.c[1].sum()

    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)


def test_final_state_is_each_rows_last_step_and_padding_is_zero():
    stack = _stack()
    x = torch.randn(2, 3, 6, 4, dtype=torch.double)
    lengths = torch.tensor([6, 2, 4])
    with torch.no_grad():
        outs, final = stack(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(final.h[-1][:, b], outs[-1][:, b, n - 1] - (outs[-2][:, b, n - 1]))
        assert torch.all(outs[-1][:, b, n:] == 0)


def test_no_grad_path_equals_grad_path():
    """Inference runs its own loop (stacked [x, h] product, tanh via sigmoid): same numbers."""
    for clips, skip in (((0.5, 0.3), True), ((None, None), False)):
        stack = _stack(*clips, skip=skip)
        x = torch.randn(2, 5, 6, 4, dtype=torch.double)
        lengths = torch.tensor([5, 6, 0, 1, 3])
        state = LSTMState(
            tuple(torch.randn(2, 5, 4, dtype=torch.double) for _ in range(2)),
            tuple(torch.randn(2, 5, 8, dtype=torch.double) for _ in range(2)),
        )
        with torch.no_grad():
            a, final_a = stack(x, lengths, state)
        b, final_b = stack(x.clone().requires_grad_(), lengths, state)
        for p, q in zip([*a, *final_a.h, *final_a.c], [*b, *final_b.h, *final_b.c]):
            torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-12)
        assert torch.equal(final_a.h[0][:, 2], state.h[0][:, 2])  # an empty row keeps its state


def test_no_grad_path_float32_within_reference_tolerance():
    stack = _stack().float()
    x = torch.randn(2, 8, 30, 4) * 2
    lengths = torch.tensor([30, 29, 12, 1, 30, 7, 8, 15])
    with torch.no_grad():
        a, _ = stack(x, lengths)
    b, _ = stack(x.clone().requires_grad_(), lengths)
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-6)


def test_onednn_and_mkl_inference_paths_agree(monkeypatch):
    """Inference runs on oneDNN where usable (float32 CPU), else on MKL: same numbers."""
    from spacy_elmo.bilm import onednn

    stack = _stack().float()
    x = torch.randn(2, 9, 25, 4) * 2
    with torch.no_grad():
        if not onednn.usable(x):
            pytest.skip("this PyTorch build has no oneDNN linear operators (or they are disabled)")
    lengths = torch.tensor([25, 3, 0, 1, 25, 7, 8, 15, 2])
    state = LSTMState(tuple(torch.randn(2, 9, 4) for _ in range(2)), tuple(torch.randn(2, 9, 8) for _ in range(2)))
    with torch.no_grad():
        dnn, final_dnn = stack(x, lengths, state)
        monkeypatch.setattr(onednn, "ENABLED", False)
        assert not onednn.usable(x)
        mkl, final_mkl = stack(x, lengths, state)
    for p, q in zip([*dnn, *final_dnn.h, *final_dnn.c], [*mkl, *final_mkl.h, *final_mkl.c]):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert torch.equal(final_dnn.c[1][:, 2], state.c[1][:, 2])  # an empty row keeps its state


def test_onednn_is_used_only_where_it_applies():
    from spacy_elmo.bilm import onednn

    x = torch.zeros(3, 4)
    with torch.no_grad():
        assert not onednn.usable(x.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert not onednn.usable(x)
    assert not onednn.usable(x)  # gradients on: the training path


def test_onednn_probe_falls_back_when_the_operator_fails(monkeypatch):
    """A build whose oneDNN lacks the primitive (or computes it wrongly) takes the MKL path."""
    from spacy_elmo.bilm import onednn

    def broken(*args):
        raise RuntimeError("could not create a primitive descriptor")

    monkeypatch.setattr(onednn, "_WORKS", None)
    monkeypatch.setattr(onednn, "_LINEAR", broken)
    stack = _stack().float()
    x = torch.randn(2, 3, 4, 4)
    with torch.no_grad():
        assert not onednn.usable(x)
        out, _ = stack(x, torch.tensor([4, 2, 1]))  # runs, on MKL
    assert out[-1].shape == (2, 3, 4, 4)
