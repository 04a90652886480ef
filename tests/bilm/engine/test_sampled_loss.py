"""The sampled softmax's loss with its backward by hand: values and gradients against PyTorch's ops."""
import pytest
import torch

from spacy_elmo.bilm.engine.sampled_loss import sampled_softmax_nll


def test_sampled_loss_matches_logsumexp_with_hits_and_under_autocast():
    """Against PyTorch's logsumexp, with accidental hits (a whole row of them included), in
    float32 and under bfloat16 autocast (computed in the weights' float32)."""
    g = torch.Generator().manual_seed(0)
    n, S, d = 40, 5, 6
    hidden, weight = torch.randn(n, d, generator=g), torch.randn(S, d, generator=g)
    bias, true = torch.randn(S, generator=g), torch.randn(n, generator=g)
    hit_rows = torch.tensor([0, 3, 3, 15, 39, 39, 39, 39, 39])
    hit_cols = torch.tensor([4, 0, 2, 1, 0, 1, 2, 3, 4])
    weights = torch.arange(1.0, n + 1)
    ref = [t.clone().requires_grad_() for t in (hidden, weight, bias, true)]
    logits = (ref[0] @ ref[1].t() + ref[2]).index_put((hit_rows, hit_cols), torch.tensor(float("-inf")))
    expected = torch.logsumexp(torch.cat([ref[3][:, None], logits], 1), 1) - ref[3]
    (expected * weights).sum().backward()
    for autocast in (False, True):
        leaves = [t.clone().requires_grad_() for t in (hidden, weight, bias, true)]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            nll = sampled_softmax_nll(*leaves, hit_rows, hit_cols)
        assert nll.dtype == torch.float32
        torch.testing.assert_close(nll, expected.detach(), rtol=1e-5, atol=1e-5)
        assert abs(nll[39].item()) < 1e-6  # every sample a hit: only the true class is left
        (nll * weights).sum().backward()
        for mine, theirs in zip(leaves, ref):
            assert mine.grad.dtype == torch.float32
            torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-5, atol=1e-5)


def test_sampled_loss_refuses_a_second_backward():
    hidden = torch.randn(4, 3, requires_grad=True)
    nll = sampled_softmax_nll(hidden, torch.randn(5, 3), torch.zeros(5), torch.zeros(4),
                              torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    nll.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="twice"):
        nll.sum().backward()
