"""Regression: a second-order gradient through the fast backends' training recurrence failed obscurely.

`recurrence.LayerRecurrence` has a hand-written backward pass, computed in
place with `out=` products: differentiating it (a gradient penalty,
`gradgradcheck`) failed with "bmm(): functions with out=... arguments don't
support automatic differentiation". With `create_graph=True` its gradients
now come out of a node connected to the layer's inputs and weights that
raises a RuntimeError naming the limit and the `reference` backend when a
second-order gradient reaches it (never a silent None, as PyTorch's
`once_differentiable` gives `autograd.grad` with `allow_unused=True`);
first-order gradients are the same bits with and without `create_graph`.
"""
import pytest
import torch

from tests.bilm.stacks import dense_rows, needs, small_stack

LENGTHS = [4, 2, 3]


def _loss(stack, x):
    outs, _ = stack(dense_rows(x), LENGTHS)
    return outs[-1].square().sum()


def _inputs():
    return torch.randn(2, 3, 4, 4, dtype=torch.double, generator=torch.Generator().manual_seed(1), requires_grad=True)


@pytest.mark.parametrize("backend", ["mkl", "onednn+kernel"])
def test_second_order_gradients_are_a_clear_error(backend):
    needs(backend)
    stack = small_stack(backend=backend)
    x = _inputs()
    params = [x, *stack.parameters()]
    plain = torch.autograd.grad(_loss(stack, x), params)
    graphed = torch.autograd.grad(_loss(stack, x), params, create_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(plain, graphed))  # first order: the same bits
    penalty = graphed[0].square().sum()
    with pytest.raises(RuntimeError, match="without second-order gradients.*backend='reference'"):
        torch.autograd.grad(penalty, x, retain_graph=True, allow_unused=True)
    with pytest.raises(RuntimeError, match="without second-order gradients"):
        penalty.backward()


def test_the_reference_backend_computes_them():
    stack = small_stack(backend="reference")
    x = _inputs()
    (g,) = torch.autograd.grad(_loss(stack, x), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.square().sum(), x)
    assert gg.abs().sum() > 0
