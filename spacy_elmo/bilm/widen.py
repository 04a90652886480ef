"""Widen a trained biLM's projection (`projection_dim`) without changing what it computes.

A wider projection gives each direction's layers more output dimensions,
for a second objective (a distillation target) to use beside the language
model's features instead of displacing them. The widened biLM starts as
the trained one: per direction its first `projection_dim` output
dimensions are the old ones and the new dimensions are exactly zero,
because the new projection columns (the token layer's and every LSTM
layer's) start at zero. The LSTMs' input and recurrent weights for the new
dimensions start small and random (`scale` of their Glorot bound): were
they zero too, a zero input behind a zero weight would get no gradient and
the new dimensions would never train.

Layers come out as [forward old; forward new; backward old; backward new]:
`old_dims` gives where the old model's dimensions sit in the new layers.
The widened biLM is on the trained one's device, in its dtype.
"""
import math
from dataclasses import replace
from typing import List

import torch

from .language_model import SoftmaxHead
from .model import BiLM
from .token_encoder import CharCNNEncoder


def widen_projection(bilm: BiLM, projection_dim: int, scale: float = 0.1, seed: int = 0) -> BiLM:
    """A new biLM with `projection_dim` outputs per direction, computing what `bilm` does in its
    old dimensions and zeros in the new ones (until trained). `bilm` is left unchanged."""
    _check_scale(scale)
    old = bilm.config.projection_dim
    if projection_dim <= old:
        raise ValueError(f"projection_dim {projection_dim} must be larger than the model's {old}")
    if isinstance(bilm.token_encoder, CharCNNEncoder) and not bilm.token_encoder.has_projection:
        raise ValueError(
            "this biLM's character CNN has no projection (its filters add up to projection_dim), "
            "so the token layer cannot be widened without changing it"
        )
    if (isinstance(bilm.token_encoder, CharCNNEncoder) and not bilm.config.has_word_table
            and projection_dim == bilm.config.n_filters):
        raise ValueError(
            f"projection_dim {projection_dim} is the character CNN's width: a biLM of that size has no "
            "token projection, so it would not compute what this one does; choose another size"
        )
    wide = BiLM(
        replace(bilm.config, projection_dim=projection_dim),
        vocab=bilm.input_vocab,
        boundary_strings=bilm.boundary_strings,
        backend=bilm.backend,
        word_table_vocab=bilm.word_table_vocab,
        char_dictionary=bilm.char_dictionary,
    )
    # the source's device and dtype before its values are copied in (a float64 model's values
    # would lose their last bits passing through float32)
    wide.to(device=bilm.device, dtype=_float_dtype(bilm))
    generator = torch.Generator().manual_seed(seed)
    source, target = bilm.state_dict(), wide.state_dict()
    extra = projection_dim - old
    with torch.no_grad():
        for name, value in source.items():
            new = target[name]
            if new.shape == value.shape:
                new.copy_(value)
                continue
            # every widened tensor keeps its old values in place; what it gains is zero...
            new.zero_()
            new[tuple(slice(0, n) for n in value.shape)] = value
            if name.startswith(("lstm.weight_ih.", "lstm.weight_hh.")):
                # ...except the rows that read the new input dimensions (2, P, 4H): small, random
                bound = scale * (6.0 / (new.shape[1] + new.shape[2])) ** 0.5
                rows = torch.empty(new.shape[0], extra, new.shape[2]).uniform_(-bound, bound, generator=generator)
                new[:, old:] = rows.to(device=new.device, dtype=new.dtype)
        wide.load_state_dict(target)
    wide.train(bilm.training)
    return wide


def _check_scale(scale: float) -> None:
    """Raise ValueError unless `scale` is a finite number >= 0, before a biLM is built: a negative
    one failed in torch's uniform_ ("expects from <= to") and a NaN one too, as RuntimeErrors."""
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"scale must be a finite number >= 0, got {scale}")


def _float_dtype(bilm: BiLM) -> torch.dtype:
    """The dtype of the biLM's floating-point parameters (integer buffers keep theirs)."""
    return next(p.dtype for p in bilm.parameters() if p.is_floating_point())


def widen_softmax(head: SoftmaxHead, projection_dim: int) -> SoftmaxHead:
    """A softmax over a widened biLM's top layer that scores as `head` does: the output
    embeddings' new columns start at zero (they read the new dimensions, which start at zero too)."""
    if head.kind == "adaptive":
        raise ValueError("the adaptive softmax's clusters project the top layer; widen a full or sampled one")
    if projection_dim <= head.dim:
        raise ValueError(f"projection_dim {projection_dim} must be larger than the softmax's {head.dim}")
    wide = SoftmaxHead(head.n_vocab, projection_dim, head.kind, head.n_samples)
    with torch.no_grad():
        wide.weight.zero_()
        wide.weight[:, : head.dim] = head.weight
        wide.bias.copy_(head.bias)
    return wide


def old_dims(old_projection_dim: int, projection_dim: int) -> List[int]:
    """Indices, in a widened model's layers (2 * projection_dim wide), of the old model's dimensions."""
    return list(range(old_projection_dim)) + list(range(projection_dim, projection_dim + old_projection_dim))


__all__ = ["old_dims", "widen_projection", "widen_softmax"]
