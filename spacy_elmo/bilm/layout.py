"""A batch of sentences as the LSTMs read it, and their outputs as the user reads them.

In: the distinct tokens of the batch and a (2, batch, time) index into the
token table (direction 0 reads each row in order, direction 1 reversed within
its length). Out: (L+1, batch, time, 2 * projection_dim) layers in reading
order, layer 0 being the token vector twice.
"""
from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy
import torch


@dataclass
class BiLMOutput:
    """Output of one batch: layers (L+1, batch, time, width), zeros past each row's `lengths` (batch,)."""

    layers: torch.Tensor
    lengths: torch.Tensor

    def mask(self) -> torch.Tensor:
        """(batch, time) booleans, True at each row's real positions (those before its length), on
        the layers' device: to select or weight the real tokens of `layers` without a loop."""
        time = self.layers.shape[2]
        positions = torch.arange(time, device=self.layers.device)
        return positions[None, :] < self.lengths.to(self.layers.device)[:, None]

    def unpadded(self) -> List[torch.Tensor]:
        """Per row: (L+1, length, width)."""
        return [self.layers[:, i, :n] for i, n in enumerate(self.lengths.tolist())]

    def without_boundaries(self) -> "BiLMOutput":
        """The rows without their <S> and </S> positions (layers that hold them: `lengths` counts
        both), zeros past each row's tokens."""
        inner = self.lengths - 2
        mask = torch.arange(self.layers.shape[2] - 2, device=self.layers.device)[None, :] < inner[:, None]
        return BiLMOutput(self.layers[:, :, 1:-1] * mask[None, :, :, None].to(self.layers.dtype), inner)


# index values of the sentence boundaries; a batch's tokens follow from 2 on
BOS_ROW, EOS_ROW = 0, 1


class CheckedSentences(list):
    """A list of sentences that `check_sentences` has passed (or taken from such a list): checked once
    for a whole `embed`, not again in each batch's forward."""


def check_sentences(sentences: Iterable[Sequence[str]]) -> List[Sequence[str]]:
    """`sentences` as a list (an iterator is read once, here), or a TypeError in the caller's terms where
    they are not token sequences: a str, or a flat list of tokens, would otherwise be read as sentences
    of one-character tokens, and an int or a bytes token fail deep inside. One isinstance test a token:
    nothing beside a forward. Returns a `CheckedSentences`, which passes again at no cost."""
    if isinstance(sentences, CheckedSentences):
        return sentences
    if isinstance(sentences, (str, bytes)):
        raise TypeError("sentences must be a list of sentences, each a list of tokens (str), got a str")
    sentences = sentences if isinstance(sentences, list) else list(sentences)
    for s in sentences:
        if isinstance(s, (str, bytes)) or not hasattr(s, "__len__"):
            raise TypeError(
                f"each sentence must be a list of tokens (str), got {type(s).__name__} {s!r:.40}"
                + (": for one sentence pass [tokens], not tokens" if isinstance(s, str) else "")
            )
        if not all(isinstance(t, str) for t in s):
            bad = next(t for t in s if not isinstance(t, str))
            raise TypeError(f"a token must be a str, got {type(bad).__name__} {bad!r:.40}")
    return CheckedSentences(sentences)


def index_rows(sentences: Sequence[Sequence[str]], with_boundaries: bool) -> Tuple[List[str], numpy.ndarray, List[int]]:
    """The distinct tokens, the (2, batch, time) index (0 is <S>, 1 is </S>, 2 + i is tokens[i]; direction 1
    reversed within its length; with boundaries a row is <S>, its tokens, </S>) and each row's length."""
    sentences = check_sentences(sentences)
    vocab: Dict[str, int] = {}
    rows = [[vocab.setdefault(t, len(vocab) + 2) for t in s] for s in sentences]
    if with_boundaries:
        rows = [[BOS_ROW] + r + [EOS_ROW] for r in rows]
    lengths = [len(r) for r in rows]
    index = numpy.zeros((2, len(rows), max(lengths, default=2 if with_boundaries else 0)), dtype=numpy.int64)
    for b, r in enumerate(rows):
        index[0, b, : len(r)] = r
        index[1, b, : len(r)] = r[::-1]
    return list(vocab), index, lengths


def stack_layers(tokens: torch.Tensor, outputs: List[torch.Tensor], lengths: Sequence[int]) -> torch.Tensor:
    """(L+1, batch, time, width) in reading order from the token vectors (batch, time, P) in reading
    order and the LSTM outputs in processing order: layer 0 is the token vector twice."""
    batch, time, P = tokens.shape
    device = tokens.device
    mask = torch.arange(time)[None, :] < torch.tensor(list(lengths), dtype=torch.long)[:, None]
    reverse = reverse_index(lengths, time).to(device)[..., None].expand(-1, -1, P)
    # written into one tensor by slice assignments (which autograd follows)
    layers = tokens.new_empty((len(outputs) + 1, batch, time, 2 * P))
    layers[0, ..., :P] = tokens * mask.to(device)[..., None].to(tokens.dtype)
    layers[0, ..., P:] = layers[0, ..., :P]
    for i, out in enumerate(outputs, 1):
        layers[i, ..., :P] = out[0]
        layers[i, ..., P:] = out[1].gather(1, reverse)
    return layers


def reverse_index(lengths: Sequence[int], time: int) -> torch.Tensor:
    """index[b, t] = length_b - 1 - t within the row, t past it (an involution)."""
    index = numpy.tile(numpy.arange(time), (len(lengths), 1))
    for b, n in enumerate(lengths):
        index[b, :n] = numpy.arange(n - 1, -1, -1)
    return torch.from_numpy(index)


__all__ = [
    "BiLMOutput", "BOS_ROW", "EOS_ROW", "CheckedSentences", "check_sentences", "index_rows", "reverse_index",
    "stack_layers",
]
