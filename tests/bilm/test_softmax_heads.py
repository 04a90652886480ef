import math

import torch

from spacy_elmo.bilm.language_model import SoftmaxHead


def _reference_sampled(head, hidden, targets, generator):
    """The straightforward formula: [true, sampled] logits with log Q subtracted."""
    V = head.n_vocab
    log_range = math.log(V + 1)
    u = torch.rand(head.n_samples, generator=generator)
    sampled = (torch.exp(u * log_range).floor().long() - 1).clamp(0, V - 1).unique()

    def logq(ids):
        p = (torch.log(ids.double() + 2) - torch.log(ids.double() + 1)) / log_range
        return torch.log(1 - (1 - p) ** head.n_samples).float()

    true = (hidden * head.weight[targets]).sum(-1) + head.bias[targets] - logq(targets)
    logits = hidden @ head.weight[sampled].t() + head.bias[sampled] - logq(sampled)
    logits = logits.masked_fill(targets[:, None] == sampled[None, :], float("-inf"))
    full = torch.cat([true[:, None], logits], 1)
    return torch.nn.functional.cross_entropy(full, torch.zeros(len(targets), dtype=torch.long), reduction="sum")


def test_sampled_softmax_matches_reference_formula():
    torch.manual_seed(0)
    head = SoftmaxHead(500, 8, kind="sampled", n_samples=64)
    head.reset_parameters(torch.Generator().manual_seed(1))
    hidden = torch.randn(20, 8)
    targets = torch.randint(0, 30, (20,))  # frequent ids: accidental hits happen
    ours = head.nll(hidden, targets, torch.Generator().manual_seed(5)).sum()
    ref = _reference_sampled(head, hidden, targets, torch.Generator().manual_seed(5))
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-4)


def test_full_softmax_loss_equals_log_prob():
    head = SoftmaxHead(50, 4, kind="full")
    head.reset_parameters(torch.Generator().manual_seed(0))
    hidden, targets = torch.randn(7, 4), torch.randint(0, 50, (7,))
    torch.testing.assert_close(head.nll(hidden, targets).sum(), -head.log_prob(hidden, targets).sum())


def test_adaptive_head_runs_and_is_normalised():
    head = SoftmaxHead(100, 8, kind="adaptive", cutoffs=[20, 60])
    head.reset_parameters(torch.Generator().manual_seed(0))
    hidden = torch.randn(3, 8)
    total = torch.stack([head.log_prob(hidden, torch.full((3,), v)).exp() for v in range(100)]).sum(0)
    torch.testing.assert_close(total, torch.ones(3), rtol=1e-4, atol=1e-4)
    assert head.nll(hidden, torch.tensor([1, 50, 99])).sum() > 0


def test_sampled_softmax_gradients_match_reference_formula():
    head = SoftmaxHead(500, 8, kind="sampled", n_samples=64)
    head.reset_parameters(torch.Generator().manual_seed(1))
    with torch.no_grad():
        head.bias.normal_(0.0, 0.5, generator=torch.Generator().manual_seed(2))
    hidden = torch.randn(20, 8, generator=torch.Generator().manual_seed(3), requires_grad=True)
    targets = torch.randint(0, 30, (20,), generator=torch.Generator().manual_seed(4))
    head.nll(hidden, targets, torch.Generator().manual_seed(5)).sum().backward()
    ours = [hidden.grad, head.weight.grad, head.bias.grad]
    hidden.grad, head.weight.grad, head.bias.grad = None, None, None
    _reference_sampled(head, hidden, targets, torch.Generator().manual_seed(5)).backward()
    for mine, ref in zip(ours, [hidden.grad, head.weight.grad, head.bias.grad]):
        torch.testing.assert_close(mine, ref, rtol=1e-5, atol=1e-6)
