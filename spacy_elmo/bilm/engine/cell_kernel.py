"""The LSTM cell of one step as one compiled pass (the `onednn+kernel` backend):
the inference update, and the training loop's forward and backward cell.

`_lstm_cell.c` computes the four gate sigmoids, the (doubled, clipped) cell
and the projection input `m` in one pass over the step's gates, where eager
PyTorch needs a fused-sigmoid product plus seven element-wise passes. It is
built at install time where a C compiler with OpenMP exists; it runs on x86-64
CPUs with AVX2 and FMA, on contiguous float32 CPU tensors. Rows are
independent: a row's result is the same bits whatever the number of rows or
threads.
"""
from typing import Any, Optional, Sequence, Tuple

import torch

_lstm_cell: Any
try:
    from . import _lstm_cell  # type: ignore[attr-defined,no-redef]  # the compiled extension (optional)
except ImportError:  # not built here: no compiler at install time, or a platform it does not target
    _lstm_cell = None

_AVAILABLE: Optional[bool] = None


def available() -> bool:
    """Whether the kernel is built and this CPU can run it."""
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = _lstm_cell is not None and bool(_lstm_cell.available())
    return _AVAILABLE


def update(
    gates: torch.Tensor,
    c2: torch.Tensor,
    m: torch.Tensor,
    cell_clip: float,
    addend: Optional[torch.Tensor] = None,
    addend_index: Optional[torch.Tensor] = None,
) -> None:
    """`loops.cell_update` from the gates' pre-activations (j's doubled), in place.

    gates (rows, 4H): the step product without activation; c2 (rows, H): the
    doubled cell, updated; m (rows, H): receives o (sigmoid(c2) - 1/2).
    addend (n, 4H) and addend_index (rows,) int64: row b's gates get
    addend[addend_index[b]] added first (the input products of a layer whose
    inputs are rows of a token table, computed once per distinct token).
    """
    rows, hidden = c2.shape
    _check([(gates, (rows, 4 * hidden), torch.float32), (c2, (rows, hidden), torch.float32),
            (m, (rows, hidden), torch.float32)])
    add: Tuple[int, int, int] = (0, 0, 0)
    if addend is not None:
        if addend_index is None:
            raise ValueError("cell kernel: an addend needs its addend_index")
        _check([(addend, (addend.shape[0], 4 * hidden), torch.float32), (addend_index, (rows,), torch.int64)])
        add = (addend.data_ptr(), addend.shape[0], addend_index.data_ptr())
    clip2 = 2.0 * cell_clip if cell_clip else float("inf")
    _lstm_cell.update(gates.data_ptr(), c2.data_ptr(), m.data_ptr(), rows, hidden, clip2, torch.get_num_threads(), *add)


def _check(tensors: Sequence[Tuple[torch.Tensor, Tuple[int, ...], torch.dtype]]) -> None:
    """The kernel reads raw memory: every tensor must be contiguous, on the CPU, of this shape and dtype."""
    for t, shape, dtype in tensors:
        if t.shape != shape or t.dtype != dtype or t.device.type != "cpu" or not t.is_contiguous():
            raise ValueError(
                f"cell kernel: expected a contiguous {dtype} CPU tensor of shape {shape}, "
                f"got {t.dtype} {tuple(t.shape)}"
            )


def train_forward(
    gates: torch.Tensor, c: torch.Tensor, c_raw: torch.Tensor, tanh_c: torch.Tensor, m: torch.Tensor, cell_clip: float
) -> None:
    """One training step's cell (see `recurrence._cell_forward`), in place.

    gates (rows, 4H): pre-activations in, activations (s_i, s_f, s_o, tanh j)
    out; c (rows, H): the previous (clipped) cell in, the new one out; c_raw,
    tanh_c, m (rows, H): written.
    """
    rows, hidden = c.shape
    f32 = torch.float32
    _check([(gates, (rows, 4 * hidden), f32)] + [(t, (rows, hidden), f32) for t in (c, c_raw, tanh_c, m)])
    clip = float(cell_clip) if cell_clip else float("inf")
    _lstm_cell.train_forward(gates.data_ptr(), c.data_ptr(), c_raw.data_ptr(), tanh_c.data_ptr(), m.data_ptr(),
                             rows, hidden, clip, torch.get_num_threads())


def train_backward(gates: torch.Tensor, d_gates: torch.Tensor, dm: torch.Tensor, dc: torch.Tensor, c_raw: torch.Tensor,
                   tanh_c: torch.Tensor, c_prev: torch.Tensor, cell_clip: float, clip_prev: bool = True) -> None:
    """The gradients of `train_forward` (see `recurrence._cell_backward`).

    gates (rows, 4H): the activations, read; d_gates (rows, 4H): receives the
    pre-activations' gradients; dc (rows, H): the carried cell gradient in,
    c_prev's gradient out.
    c_prev is read clipped to +-cell_clip where `clip_prev` (the previous
    step's c_raw), as given otherwise (the initial state).
    """
    rows, hidden = dc.shape
    f32 = torch.float32
    _check([(gates, (rows, 4 * hidden), f32), (d_gates, (rows, 4 * hidden), f32)]
           + [(t, (rows, hidden), f32) for t in (dm, dc, c_raw, tanh_c, c_prev)])
    clip = float(cell_clip) if cell_clip else float("inf")
    prev_clip = clip if clip_prev else float("inf")
    pointers = (t.data_ptr() for t in (gates, d_gates, dm, dc, c_raw, tanh_c, c_prev))
    _lstm_cell.train_backward(*pointers, rows, hidden, clip, prev_clip, torch.get_num_threads())


__all__ = ["available", "update", "train_forward", "train_backward"]
