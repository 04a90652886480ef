"""The biLM with its softmax heads: the training objective of ELMo's first stage.

The forward LM predicts each next token, the backward LM each previous token;
both share the token encoder and the softmax; the loss is the sum of the two
directions' negative log likelihoods. An `LMBatch` holds whole sentences
(`sentence_batch`) or windows of a token stream (`spacy_elmo.pretrain`).
The softmax (`SoftmaxHead`) is `full` (exact; small vocabularies, every
evaluation), `sampled` (bilm-tf's, for training: `engine/sampled_loss.py`) or
`adaptive` (PyTorch's adaptive softmax, Grave et al. 2017).
"""
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import nn

from .engine import bulk
from .engine.sampled_loss import sampled_softmax_loss
from .lstm import LSTMState, TokenRows
from .model import BiLM
from .vocab import Vocabulary


HEAD_KINDS = ("full", "sampled", "adaptive")


class SoftmaxHead(nn.Module):
    """The softmax over the vocabulary that both directions share."""

    def __init__(self, n_vocab: int, dim: int, kind: str = "full", n_samples: int = 8192,
                 cutoffs: Optional[Sequence[int]] = None) -> None:
        super().__init__()
        if kind not in HEAD_KINDS:
            raise ValueError(f"softmax kind must be one of {HEAD_KINDS}, got {kind!r}")
        self.kind, self.n_vocab, self.dim, self.n_samples = kind, n_vocab, dim, n_samples
        if kind == "adaptive":
            default = [c for c in (2000, 10000, 50000) if c < n_vocab - 1] or [max(1, n_vocab // 2)]
            self.cutoffs = cutoffs = list(cutoffs or default)
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

    def nll(self, hidden: torch.Tensor, targets: torch.Tensor, generator: Optional[torch.Generator] = None,
            ) -> torch.Tensor:
        """Each row's training NLL (n,): sampled where configured (one set of negatives per call)."""
        if hidden.shape[0] == 0:
            return hidden.new_zeros((0,)) + hidden.sum() * 0.0
        if self.kind == "adaptive":
            return -self.adaptive(hidden, targets).output
        if self.kind == "full" or self.n_samples >= self.n_vocab:
            logits = torch.addmm(self.bias, hidden, self.weight.t())
            return nn.functional.cross_entropy(logits, targets, reduction="none")
        return sampled_softmax_loss(hidden, targets, self.weight, self.bias, self.n_samples, generator)


@dataclass
class LMBatch:
    """What each direction reads and predicts: index (2, batch, time) into [<S>, </S>] + tokens in
    processing order, targets (2, batch, time) vocabulary ids (-1: none), each row's length."""

    tokens: List[str]
    index: numpy.ndarray
    targets: numpy.ndarray
    lengths: List[int]


def sentence_batch(sentences: Sequence[Sequence[str]], vocab: Vocabulary) -> LMBatch:
    """Whole sentences: forward reads <S> w1..wn and predicts w1..wn </S>; backward
    reads </S> wn..w1 and predicts wn..w1 <S>. The closing boundary is never read:
    nothing follows it to predict."""
    table: Dict[str, int] = {}
    batch = len(sentences)
    time = max((len(s) + 1 for s in sentences), default=1)
    index = numpy.zeros((2, batch, time), dtype=numpy.int64)
    targets = numpy.full((2, batch, time), -1, dtype=numpy.int64)
    lengths = []
    for b, sentence in enumerate(sentences):
        seq = [0] + [table.setdefault(t, len(table) + 2) for t in sentence] + [1]
        ids = [vocab.bos] + vocab.encode(sentence) + [vocab.eos]
        n = len(seq) - 1
        lengths.append(n)
        index[0, b, :n] = seq[:-1]
        index[1, b, :n] = seq[::-1][:-1]
        targets[0, b, :n] = ids[1:]
        targets[1, b, :n] = ids[::-1][1:]
    return LMBatch(list(table), index, targets, lengths)


class LanguageModel(nn.Module):
    def __init__(self, bilm: BiLM, vocab: Vocabulary, head: SoftmaxHead) -> None:
        super().__init__()
        if head.n_vocab != len(vocab):
            raise ValueError(f"softmax has {head.n_vocab} classes but the vocabulary {len(vocab)} words")
        if head.dim != bilm.config.projection_dim:
            raise ValueError(f"softmax input {head.dim} != projection_dim {bilm.config.projection_dim}")
        self.bilm = bilm
        self.head = head
        self.vocab = vocab

    def forward(self, batch: LMBatch, state: Optional[LSTMState] = None, exact: bool = False,
                generator: Optional[torch.Generator] = None, train_bilm: bool = True,
                ) -> Tuple[torch.Tensor, torch.Tensor, LSTMState]:
        """(summed NLL per direction (2,), target count per direction (2,), final state).

        `exact` evaluates the full softmax whatever the head's training kind.
        `train_bilm=False` runs the biLM without gradients (only the softmax
        learns from this batch).
        """
        _, outputs, final = self.run_layers(batch, state, train_bilm)
        losses, counts = self.losses(outputs, batch, exact, generator)
        return losses, counts, final

    def run_layers(
        self, batch: LMBatch, state: Optional[LSTMState] = None, train_bilm: bool = True
    ) -> Tuple[TokenRows, List[torch.Tensor], LSTMState]:
        """The biLM over the batch: its inputs, each layer's output (processing order), final state."""
        with torch.set_grad_enabled(train_bilm and torch.is_grad_enabled()):
            return self.bilm.run(batch.tokens, batch.index, batch.lengths, state)

    def losses(self, outputs: List[torch.Tensor], batch: LMBatch, exact: bool = False,
               generator: Optional[torch.Generator] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """Summed NLL and target count per direction, from the top layer's outputs."""
        top = outputs[-1]
        targets = torch.from_numpy(batch.targets).to(top.device)
        keep = targets >= 0
        # both directions' scored positions in one call: one product and, for the
        # sampled softmax, one set of negatives per batch
        hidden = top[keep]
        if self.training and self.bilm.config.dropout > 0:
            hidden = nn.functional.dropout(hidden, self.bilm.config.dropout, True)
        gold = targets[keep]
        nll = -self.head.log_prob(hidden, gold) if exact else self.head.nll(hidden, gold, generator)
        counts = keep.flatten(1).sum(1).cpu()
        losses = torch.stack([part.sum() for part in nll.split(counts.tolist())])
        return losses, counts

    def perplexity(self, sentences: Sequence[Sequence[str]], batch_tokens: int = 4096) -> Dict[str, float]:
        """Forward, backward and mean perplexity over whole sentences (exact softmax), and the tokens scored."""
        return bulk.perplexity(self, sentences, batch_tokens)


__all__ = ["HEAD_KINDS", "LanguageModel", "LMBatch", "SoftmaxHead", "sentence_batch"]
