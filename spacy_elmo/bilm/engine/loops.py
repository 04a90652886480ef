"""The LSTM layers without gradients: the fast loops the `mkl`, `onednn` and `onednn+kernel` engines share.

Each layer runs one direction at a time, one step per position. Rows arrive
sorted by decreasing length, so the rows still running at step t are a
prefix of the batch and no work is spent on padding; a row that finishes
keeps its last state. Every product is computed at `product_rows.product_rows`
rows (finished or scratch rows fill it up), so a row's numbers never depend
on its batch.

The arithmetic of a step is TensorFlow's projected LSTM cell, rearranged so
that one sigmoid pass serves all four gates and the cell is touched few times:

* the j gate's weights and bias are doubled, so with s_j = sigmoid(2 z_j),
  tanh(z_j) = 2 s_j - 1 (PyTorch's CPU tanh costs about three sigmoids);
* the cell is carried doubled (c2 = 2c, exact in floating point), so
  tanh(c) = 2 sigmoid(c2) - 1 needs no scaling pass;
* the projection weights are doubled, so m = o (sigmoid(c2) - 1/2) projects to
  o tanh(c) W_proj.

Two loops:

* `dense_direction`: a step multiplies `[x_t, h_{t-1}]` (K = 2P) by
  `[W_ih; W_hh]`: nothing of size batch x time x 4H is ever materialised.
  Every layer of `mkl` and `onednn`, the upper layers of `onednn+kernel`.
* `table_direction`: the first layer of `onednn+kernel`, whose inputs are
  rows of the batch's token table. `table W_ih + b` is computed once per
  distinct token (`table_products`); a step multiplies h_{t-1} alone
  (K = P) by W_hh, and the kernel adds each row's input product before its
  sigmoids.

The step functions (`mkl_step`, `onednn_step`, `kernel_step`,
`kernel_table_step`) are the only difference between the engines: each
engine passes its own to `run_layer`.
"""
from functools import partial
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import torch

from ..lstm import forget_offset
from . import cell_kernel, onednn_ops as onednn
from .product_rows import MAX_ROWS, pad_rows, product_rows

Clips = Tuple[float, float]
DenseStep = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
TableStep = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class DirectionWeights(NamedTuple):
    """One direction of one layer as the loops read it.

    gates: `[W_ih; W_hh]` with the j columns doubled, (2P, 4H) for PyTorch's
        products, packed for oneDNN's; bias (4H,): the bias with TensorFlow's
        forget +1, j doubled; out: W_proj doubled, (H, P) or packed.
    recurrent, input: W_hh and W_ih alone, packed (the first layer of
        `onednn+kernel`: `table_direction` and `table_products`).
    """

    gates: torch.Tensor
    bias: torch.Tensor
    out: torch.Tensor
    recurrent: Optional[torch.Tensor] = None
    input: Optional[torch.Tensor] = None


LayerWeights = Tuple[DirectionWeights, DirectionWeights]


def prepare_weights(
    w_ih: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor, w_proj: torch.Tensor, packed: bool,
    split: bool = False,
) -> LayerWeights:
    """Both directions' `DirectionWeights` from a layer's parameters (2, ., .).

    packed: laid out for oneDNN's products (else PyTorch's); split: W_ih and
    W_hh also packed alone, for `table_direction` (a packed first layer read
    as token-table rows)."""
    H, P = w_hh.shape[2] // 4, w_ih.shape[1]
    scale = w_ih.new_ones((4 * H,))
    scale[3 * H :] = 2.0  # the j gate (internal order i, f, o, j)
    stacked = torch.cat([w_ih, w_hh], dim=1).mul_(scale)
    biases = (bias + forget_offset(H, bias)) * scale
    if not packed:
        proj2 = w_proj * 2.0
        forward, backward = (DirectionWeights(stacked[d], biases[d, 0], proj2[d]) for d in range(2))
        return forward, backward
    forward, backward = (
        DirectionWeights(
            gates=onednn.pack(stacked[d].t()),
            bias=biases[d].reshape(-1).contiguous(),
            out=onednn.pack(w_proj[d].t() * 2.0),
            recurrent=onednn.pack(stacked[d, P:].t()) if split else None,
            input=onednn.pack(stacked[d, :P].t()) if split else None,
        )
        for d in range(2)
    )
    return forward, backward


def run_layer(
    weights: LayerWeights,
    step: Callable[..., torch.Tensor],
    library: str,
    *,
    inputs: Optional[torch.Tensor] = None,
    table: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    h0: torch.Tensor,
    c0: torch.Tensor,
    lengths: Sequence[int],
    clips: Clips,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer, both directions, rows sorted by decreasing length.

    step: the engine's dense step (`mkl_step`, `onednn_step`, `kernel_step`);
    library: whose row rule pads the products ("mkl" or "onednn"). Give
    `inputs` (2, batch, time, P) for `dense_direction`, or `table` = (token
    table (n, P), index (2, batch, time)) for `table_direction` (the first
    layer on `onednn+kernel`). Returns the outputs (2, batch, time, P),
    zeros past each row's length, and every row's final h and c.
    """
    counts = active_counts(lengths)
    cell_clip, proj_clip = clips
    outs, finals_h, finals_c = [], [], []
    for d, w in enumerate(weights):
        if table is not None:
            token_table, index = table
            if w.input is None or w.recurrent is None:
                raise ValueError("token-table inputs need the first layer's weights prepared for onednn+kernel")
            input_products = table_products(token_table, w.input, w.bias)
            table_step = partial(kernel_table_step, recurrent=w.recurrent, input_products=input_products, out=w.out,
                                 cell_clip=cell_clip, proj_clip=proj_clip)
            out, h_n, c_n = table_direction(index=index[d], h0=h0[d], c0=c0[d], counts=counts, step=table_step)
            del input_products, table_step  # freed before the next direction's are computed
        else:
            assert inputs is not None
            dense_step = partial(step, w=w, cell_clip=cell_clip, proj_clip=proj_clip)
            out, h_n, c_n = dense_direction(inputs=inputs[d], h0=h0[d], c0=c0[d], counts=counts, step=dense_step,
                                            library=library)
        outs.append(out)
        finals_h.append(h_n)
        finals_c.append(c_n)
    return torch.stack(outs), torch.stack(finals_h), torch.stack(finals_c)


def dense_direction(
    inputs: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, counts: List[int], step: DenseStep, library: str
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One direction over dense inputs (batch, time, P); h0 (batch, P), c0 (batch, H).

    `step(xh, c2, m)` computes one step for the rows of xh = [x_t, h_{t-1}],
    updating c2 and m in place, and returns h_t.
    """
    batch, time, P = inputs.shape
    H = c0.shape[1]
    rows = product_rows(batch, library)
    xh = inputs.new_zeros((rows, 2 * P))  # [x_t, h_{t-1}]; rows past the running ones fill the product
    xh[:batch, P:] = h0
    c2 = inputs.new_zeros((rows, H), dtype=c0.dtype)  # the doubled cell
    c2[:batch] = c0 * 2.0
    m = inputs.new_empty((rows, H))
    out = inputs.new_zeros((batch, time, P))
    h_n, c_n = h0.clone(), c0.clone()
    for t, running in enumerate(counts):
        height = product_rows(running, library)  # never above `rows`: non-decreasing in its argument
        xh[:running, :P] = inputs[:running, t]
        h = step(xh[:height], c2[:height], m[:height])
        out[:running, t] = h[:running]
        xh[:height, P:] = h
        _keep_final_states(t, counts, h, c2, h_n, c_n)
    return out, h_n, c_n


def table_direction(
    index: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, counts: List[int], step: TableStep
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One direction whose inputs are token-table rows: index (batch, time); h0 (batch, P), c0 (batch, H).

    `step(h, c2, m, table_rows)` computes one step for the rows of h = h_{t-1}
    reading the given table rows, updating c2 and m in place, and returns h_t.
    """
    batch, time = index.shape
    P, H = h0.shape[1], c0.shape[1]
    rows = product_rows(batch, "onednn")
    # per step, the table row each product row reads: int64 whatever the index's integer type (the kernel reads int64)
    table_rows = index.new_zeros((time, rows), dtype=torch.long)
    table_rows[:, :batch] = index.t()
    h = h0.new_zeros((rows, P))
    h[:batch] = h0
    c2 = c0.new_zeros((rows, H))
    c2[:batch] = c0 * 2.0
    m = c0.new_empty((rows, H))
    out = h0.new_zeros((batch, time, P))
    h_n, c_n = h0.clone(), c0.clone()
    for t, running in enumerate(counts):
        height = product_rows(running, "onednn")
        h = step(h[:height], c2[:height], m[:height], table_rows[t, :height])  # the next step is no higher
        out[:running, t] = h[:running]
        _keep_final_states(t, counts, h, c2, h_n, c_n)
    return out, h_n, c_n


def _keep_final_states(
    t: int, counts: List[int], h: torch.Tensor, c2: torch.Tensor, h_n: torch.Tensor, c_n: torch.Tensor
) -> None:
    """Rows whose last step is t keep its h and (undoubled) cell as their final state."""
    running = counts[t]
    still_running = counts[t + 1] if t + 1 < len(counts) else 0
    if still_running < running:
        h_n[still_running:running] = h[still_running:running]
        c_n[still_running:running] = c2[still_running:running] * 0.5


# -- one step per engine: the only place the engines' loops differ ------------------------
def mkl_step(xh: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, *, w: DirectionWeights, cell_clip: float,
             proj_clip: float) -> torch.Tensor:
    """PyTorch's products (MKL, or cuBLAS on a GPU), the gate arithmetic in PyTorch's operators."""
    gates = torch.addmm(w.bias, xh, w.gates).sigmoid_()
    cell_update(gates, c2, m, cell_clip)
    h = torch.mm(m, w.out)
    return h.clamp_(-proj_clip, proj_clip) if proj_clip else h


def onednn_step(xh: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, *, w: DirectionWeights, cell_clip: float,
                proj_clip: float) -> torch.Tensor:
    """oneDNN's products, the sigmoid fused into the step product; the projection clipped after it."""
    cell_update(onednn.linear(xh, w.gates, w.bias, "sigmoid"), c2, m, cell_clip)
    return onednn.linear(m, w.out, clip=proj_clip)


def kernel_step(xh: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, *, w: DirectionWeights, cell_clip: float,
                proj_clip: float) -> torch.Tensor:
    """oneDNN's products without activation; sigmoids and cell update in one compiled pass."""
    cell_kernel.update(onednn.linear(xh, w.gates, w.bias), c2, m, cell_clip)
    return onednn.linear(m, w.out, clip=proj_clip)


def kernel_table_step(h: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, table_rows: torch.Tensor, *,
                      recurrent: torch.Tensor, input_products: torch.Tensor, out: torch.Tensor, cell_clip: float,
                      proj_clip: float) -> torch.Tensor:
    """`kernel_step` for token-table inputs: the step product is h W_hh alone (`recurrent`,
    packed), the kernel adds each row's precomputed input product before the sigmoids."""
    cell_kernel.update(onednn.linear(h, recurrent), c2, m, cell_clip, input_products, table_rows)
    return onednn.linear(m, out, clip=proj_clip)


def cell_update(gates: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, cell_clip: float) -> None:
    """The cell from the gates' sigmoids (i, f, o and j scaled by 2), in place.

    c2 (the doubled cell) is updated and m (o tanh(c), halved) written into
    the given buffers, so a step allocates nothing here. With s_j =
    sigmoid(2 z_j), tanh(z_j) = 2 s_j - 1, so the doubled cell c2' = f c2 +
    2 i tanh(z_j) = f c2 + 4 i s_j - 2 i; and o tanh(c) = 2 o (sigmoid(c2) -
    1/2), the 2 being folded into the projection weights.
    """
    s_i, s_f, s_o, s_j = gates.chunk(4, dim=-1)
    c2.mul_(s_f).addcmul_(s_i, s_j, value=4.0).sub_(s_i, alpha=2.0)
    if cell_clip:
        c2.clamp_(-2.0 * cell_clip, 2.0 * cell_clip)
    torch.sigmoid(c2, out=m).sub_(0.5).mul_(s_o)


def table_products(table: torch.Tensor, packed_input: torch.Tensor, bias: torch.Tensor,
                   max_rows: int = MAX_ROWS) -> torch.Tensor:
    """`table W_ih + bias` (n, 4H) on oneDNN, in products of at most `max_rows` rows
    at the heights `product_rows` gives (one product, not copied, for a batch's
    table: `embed`'s batches hold at most 8,192 tokens)."""
    n = table.shape[0]
    parts = []
    for start in range(0, n, max_rows):
        part = table[start : start + max_rows]
        k = part.shape[0]
        padded = pad_rows(part, product_rows(k, "onednn", "table")).contiguous()
        parts.append(onednn.linear(padded, packed_input, bias)[:k])
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def active_counts(lengths: Sequence[int]) -> List[int]:
    """Rows still running at each step (lengths sorted in decreasing order)."""
    counts, active = [], len(lengths)
    for t in range(lengths[0] if lengths else 0):
        while active > 0 and lengths[active - 1] <= t:
            active -= 1
        counts.append(active)
    return counts


__all__ = ["DirectionWeights", "LayerWeights", "cell_update", "kernel_step", "mkl_step", "onednn_step",
           "prepare_weights", "run_layer", "table_products"]
