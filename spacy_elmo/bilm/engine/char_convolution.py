"""The character CNN's max-pooled convolutions, without the reference's wasted work.

The value is the reference's (one valid convolution per width, max-pooled
over all `max_chars` positions); two things make it cheap:

* all widths are one matrix product: each width's kernel is zero-padded to the
  widest, so one (positions, w_max * dim) x (w_max * dim, n_filters) GEMM
  serves every filter;
* tokens are grouped by their number of non-padding slots T, and only windows
  starting at positions < T are computed. Every window that starts later sees
  padding only, so its value is the same constant for every token; it enters
  the max-pool as that constant wherever the reference has such a window.
"""
from typing import TYPE_CHECKING, List

import numpy
import torch
from torch import nn

if TYPE_CHECKING:
    from ..token_encoder import CharCNNEncoder

# cap on the rows of one convolution product, so memory stays bounded
MAX_CONV_ELEMENTS = 1 << 24


def stacked_kernel(encoder: "CharCNNEncoder") -> torch.Tensor:
    """All widths as one (max_width * dim, n_filters) matrix, zero-padded."""
    dim = encoder.char_embed.shape[1]
    blocks = []
    for w, weight in zip(encoder.widths, encoder.conv_weights):
        block = weight.reshape(w * dim, -1)
        if w < encoder.max_width:
            block = nn.functional.pad(block, (0, 0, 0, (encoder.max_width - w) * dim))
        blocks.append(block)
    return torch.cat(blocks, dim=1)


def max_pooled_convolutions(encoder: "CharCNNEncoder", char_ids: torch.Tensor) -> torch.Tensor:
    """(n, n_filters) max-pooled convolutions (before the activation) of char ids (n, max_chars)."""
    kernel = stacked_kernel(encoder)
    bias = torch.cat(list(encoder.conv_biases))
    dim, wmax, max_chars = encoder.char_embed.shape[1], encoder.max_width, encoder.max_chars
    last_start = encoder.last_window_start  # per filter: a width-w window must fit in max_chars
    # the window of pure padding, shared by every token
    pad_value = encoder.char_embed[encoder.pad_id].repeat(wmax) @ kernel + bias
    lengths_np = ((char_ids != encoder.pad_id) & (char_ids != 0)).sum(dim=1).cpu().numpy()
    order = numpy.argsort(lengths_np, kind="stable")
    sorted_lengths = lengths_np[order]
    order_t = torch.from_numpy(order).to(char_ids.device)
    parts: List[torch.Tensor] = []
    starts = numpy.flatnonzero(numpy.r_[True, sorted_lengths[1:] != sorted_lengths[:-1]])
    ends = numpy.r_[starts[1:], len(order)]
    positions = torch.arange(max_chars, device=char_ids.device)
    for start, end in zip(starts.tolist(), ends.tolist()):
        n_pos = max(int(sorted_lengths[start]), 1)
        span = min(n_pos + wmax - 1, max_chars)
        # windows starting at p > last_start of a filter do not exist; the smallest last start is
        # max_chars - max_width, so tokens of fewer positions need no mask (told from Python ints:
        # asking the tensor would wait for the GPU once per length)
        mask = None
        if n_pos - 1 > max_chars - wmax:
            valid = positions[:n_pos, None] <= last_start[None, :]
            mask = torch.zeros(valid.shape, dtype=kernel.dtype, device=kernel.device)
            mask.masked_fill_(~valid, float("-inf"))
        # the constant all-padding window exists iff it starts inside max_chars
        with_pad = last_start >= n_pos
        pad_floor = torch.where(with_pad, pad_value, torch.full_like(pad_value, float("-inf")))
        rows_per_chunk = max(1, MAX_CONV_ELEMENTS // (n_pos * kernel.shape[1]))
        for lo in range(start, end, rows_per_chunk):
            idx = order_t[lo : min(end, lo + rows_per_chunk)]
            emb = encoder.char_embed[char_ids[idx, :span]]  # (n, span, dim)
            if span < n_pos + wmax - 1:  # windows reaching past max_chars (masked above) read zeros
                emb = nn.functional.pad(emb, (0, 0, 0, n_pos + wmax - 1 - span))
            windows = emb.unfold(1, wmax, 1).transpose(2, 3).reshape(-1, wmax * dim)  # (n * n_pos, wmax * dim)
            conv = encoder.product(bias, windows, kernel).view(len(idx), n_pos, -1)
            pooled = (conv if mask is None else conv + mask).amax(dim=1)
            parts.append(torch.maximum(pooled, pad_floor))
    inverse = torch.empty_like(order_t)
    inverse[order_t] = torch.arange(len(order_t), device=order_t.device)
    return torch.cat(parts, dim=0)[inverse]


__all__ = ["MAX_CONV_ELEMENTS", "max_pooled_convolutions", "stacked_kernel"]
