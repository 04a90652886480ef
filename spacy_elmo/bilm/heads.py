"""Language-model heads: the softmax both directions share.

`full`: the exact softmax (small vocabularies, and every evaluation);
`sampled`: bilm-tf's sampled softmax for training (`engine/sampled_loss.py`);
`adaptive`: PyTorch's adaptive softmax (Grave et al. 2017).
"""
import math
from typing import Optional, Sequence

import torch
from torch import nn

from .engine.sampled_loss import sampled_softmax_loss

HEAD_KINDS = ("full", "sampled", "adaptive")


class SoftmaxHead(nn.Module):
    def __init__(self, n_vocab: int, dim: int, kind: str = "full", n_samples: int = 8192,
                 cutoffs: Optional[Sequence[int]] = None) -> None:
        super().__init__()
        if kind not in HEAD_KINDS:
            raise ValueError(f"softmax kind must be one of {HEAD_KINDS}, got {kind!r}")
        self.kind = kind
        self.n_vocab = n_vocab
        self.dim = dim
        self.n_samples = n_samples
        if kind == "adaptive":
            cutoffs = list(cutoffs or _default_cutoffs(n_vocab))
            self.cutoffs = cutoffs
            # rarer clusters get dim / div**k wide projections; keep the last >= 1
            div = 4.0
            while div > 1.0 and dim // (div ** len(cutoffs)) < 1:
                div /= 2.0
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(dim, n_vocab, cutoffs, div_value=div)
        else:
            self.cutoffs = []
            self.weight = nn.Parameter(torch.zeros(n_vocab, dim))
            self.bias = nn.Parameter(torch.zeros(n_vocab))

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        with torch.no_grad():
            if self.kind == "adaptive":
                for p in self.adaptive.parameters():
                    if p.dim() > 1:
                        bound = 1.0 / math.sqrt(p.shape[1])
                        p.uniform_(-bound, bound, generator=generator)
                    else:
                        p.zero_()
            else:
                self.weight.normal_(0.0, 1.0 / math.sqrt(self.dim), generator=generator)
                self.bias.zero_()

    def config(self) -> dict:
        return {"kind": self.kind, "n_vocab": self.n_vocab, "dim": self.dim, "n_samples": self.n_samples,
                "cutoffs": self.cutoffs}

    def log_prob(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Exact log p(target | hidden) for each row: (n, dim), (n,) -> (n,)."""
        if self.kind == "adaptive":
            return self.adaptive(hidden, targets).output
        # in row chunks: a (rows, vocabulary) logit matrix at once can take gigabytes
        chunk = max(1, (1 << 22) // max(1, self.n_vocab))
        parts = []
        for start in range(0, hidden.shape[0], chunk):
            logits = torch.addmm(self.bias, hidden[start : start + chunk], self.weight.t())
            gold = logits.gather(1, targets[start : start + chunk, None]).squeeze(1)
            parts.append(gold - torch.logsumexp(logits, dim=-1))
        return torch.cat(parts) if parts else hidden.new_zeros((0,))

    def nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, generator: Optional[torch.Generator] = None
    ) -> torch.Tensor:
        """Each row's training negative log likelihood (n,): sampled where configured,
        with one set of negatives for all the rows of a call."""
        if hidden.shape[0] == 0:
            return hidden.new_zeros((0,)) + hidden.sum() * 0.0
        if self.kind == "adaptive":
            return -self.adaptive(hidden, targets).output
        if self.kind == "full" or self.n_samples >= self.n_vocab:
            logits = torch.addmm(self.bias, hidden, self.weight.t())
            return nn.functional.cross_entropy(logits, targets, reduction="none")
        return sampled_softmax_loss(hidden, targets, self.weight, self.bias, self.n_samples, generator)


def _default_cutoffs(n_vocab: int) -> list:
    cutoffs = [c for c in (2000, 10000, 50000) if c < n_vocab - 1]
    return cutoffs or [max(1, n_vocab // 2)]


__all__ = ["SoftmaxHead", "HEAD_KINDS"]
