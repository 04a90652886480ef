"""bilm-tf's sampled softmax: the full softmax's training approximation, and its loss by hand.

`sampled_softmax_loss` draws one set of log-uniform (Zipfian) negatives for
all the rows of a call, corrects the logits by the log of each class's
expected count and removes accidental hits; the vocabulary must be sorted by
frequency, as `Vocabulary.from_counts` does.

The loss has its backward by hand, in place where PyTorch's ops copy. Per
row the loss is `logsumexp([true, sampled logits]) - true`. Written with
PyTorch's ops, a pretraining batch's (rows, samples) logit matrix (8,000 x
1,700 floats, 54 MB, more than a CPU's caches hold) is copied to remove the
accidental hits, and logsumexp's forward and backward make new matrices for
the shifted logits, their exponent and the gradient: each copy is a pass
through main memory. Here the logits become the softmax probabilities in
place and backward scales them in place into the logits' gradient
(benchmarks/RESULTS.md, "Pretraining throughput", has the timings).
"""
import math
from typing import Any, Optional, Tuple

import torch
from torch.autograd.function import once_differentiable


class SampledSoftmaxNLL(torch.autograd.Function):
    """Each row's negative log likelihood of its true class against the sampled ones.

    hidden (n, d); weight (S, d) and bias (S,): the sampled classes' rows
    (bias already corrected by log Q); true_logits (n,): the true class's
    corrected logit; hit_rows, hit_cols: (row, sample) index pairs of
    accidental hits, whose logits count as -inf. Returns (n,).
    """

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, true_logits: torch.Tensor,
                hit_rows: torch.Tensor, hit_cols: torch.Tensor) -> torch.Tensor:
        with torch.autocast(hidden.device.type, enabled=False):  # in place: one dtype throughout
            probs = torch.addmm(bias, hidden, weight.t())
            if hit_rows.numel():
                probs.index_put_((hit_rows, hit_cols), torch.tensor(float("-inf"), dtype=probs.dtype,
                                                                    device=probs.device))
            top = torch.maximum(probs.amax(dim=1), true_logits)
            probs.sub_(top[:, None]).exp_()
            e_true = (true_logits - top).exp_()
            total = probs.sum(dim=1).add_(e_true)
            probs.div_(total[:, None])
            ctx.save_for_backward(hidden, weight, probs, e_true.div_(total))
            ctx.spent = False
            return total.log_().add_(top).sub_(true_logits)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        if ctx.spent:  # the first call scaled the probabilities in place
            raise RuntimeError("SampledSoftmaxNLL: backward through the same graph twice is not supported")
        ctx.spent = True
        hidden, weight, probs, p_true = ctx.saved_tensors
        with torch.autocast(hidden.device.type, enabled=False):
            grad = grad.to(probs.dtype)
            d_logits = probs.mul_(grad[:, None])  # d nll / d logit = p
            d_hidden = d_logits @ weight if ctx.needs_input_grad[0] else None
            d_weight = d_logits.t() @ hidden if ctx.needs_input_grad[1] else None
            d_bias = d_logits.sum(dim=0) if ctx.needs_input_grad[2] else None
            d_true = grad * (p_true - 1.0) if ctx.needs_input_grad[3] else None
        return d_hidden, d_weight, d_bias, d_true, None, None


def sampled_softmax_nll(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    true_logits: torch.Tensor,
    hit_rows: torch.Tensor,
    hit_cols: torch.Tensor,
) -> torch.Tensor:
    """`SampledSoftmaxNLL` (see there), computed in the weights' dtype (under
    autocast: the float32 master weights')."""
    dtype = weight.dtype
    return SampledSoftmaxNLL.apply(hidden.to(dtype), weight, bias.to(dtype), true_logits.to(dtype), hit_rows,
                                   hit_cols)


def sampled_softmax_loss(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    n_samples: int,
    generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    """Each row's sampled-softmax NLL (n,): hidden (n, d), targets (n,), the softmax's weight (V, d) and bias (V,)."""
    n_vocab = weight.shape[0]
    log_range = math.log(n_vocab + 1)
    u = torch.rand(n_samples, generator=generator).to(hidden.device)
    # unique() also sorts, which the accidental-hit search below relies on
    sampled = (torch.exp(u * log_range).floor().long() - 1).clamp_(0, n_vocab - 1).unique()

    def log_expected(ids: torch.Tensor) -> torch.Tensor:
        p = (torch.log(ids.double() + 2.0) - torch.log(ids.double() + 1.0)) / log_range
        # probability that a class was drawn at least once in n_samples draws
        return torch.log(-torch.expm1(n_samples * torch.log1p(-p))).to(hidden.dtype)

    true_logits = (hidden * weight[targets]).sum(-1) + bias[targets] - log_expected(targets)
    sampled_bias = bias[sampled] - log_expected(sampled)
    # a sampled class equal to the row's target is an accidental hit: it counts as -inf
    where = torch.searchsorted(sampled, targets).clamp_(max=sampled.shape[0] - 1)
    hit_rows = (sampled[where] == targets).nonzero().squeeze(1)
    return sampled_softmax_nll(hidden, weight[sampled], sampled_bias, true_logits, hit_rows, where[hit_rows])


__all__ = ["sampled_softmax_loss", "sampled_softmax_nll", "SampledSoftmaxNLL"]
