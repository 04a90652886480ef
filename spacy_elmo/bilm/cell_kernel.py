"""The LSTM cell update of one inference step as one compiled pass (optional).

`_lstm_cell.c` computes the four gate sigmoids, the (doubled, clipped) cell
and the projection input `m` in one pass over the step's gates, where eager
PyTorch needs a fused-sigmoid product plus seven element-wise passes. It is
built at install time where a C compiler with OpenMP exists; it runs on x86-64
CPUs with AVX2 and FMA. Anywhere else (or with `ENABLED = False`, for A/B runs
and for the tests that compare both) `usable()` is false and the LSTM keeps
PyTorch's ops (`lstm._cell_update`). Rows are independent: a row's result is
the same bits whatever the number of rows or threads.
"""
from typing import Optional

import torch

try:
    from . import _lstm_cell
except ImportError:  # not built here: no compiler at install time, or a platform it does not target
    _lstm_cell = None

ENABLED = True

_AVAILABLE: Optional[bool] = None


def available() -> bool:
    """Whether the kernel is built and this CPU can run it."""
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = _lstm_cell is not None and bool(_lstm_cell.available())
    return _AVAILABLE


def usable(x: torch.Tensor) -> bool:
    """Whether the cell of a step on tensors like `x` may go through the kernel."""
    return ENABLED and x.device.type == "cpu" and x.dtype == torch.float32 and not torch.is_grad_enabled() and available()


def update(
    gates: torch.Tensor,
    c2: torch.Tensor,
    m: torch.Tensor,
    cell_clip: float,
    addend: Optional[torch.Tensor] = None,
    addend_index: Optional[torch.Tensor] = None,
) -> None:
    """`lstm._cell_update` from the gates' pre-activations (j's doubled), in place.

    gates (rows, 4H): the step product without activation; c2 (rows, H): the
    doubled cell, updated; m (rows, H): receives o (sigmoid(c2) - 1/2).
    addend (n, 4H) and addend_index (rows,) int64: row b's gates get
    addend[addend_index[b]] added first (the input products of a layer whose
    inputs are rows of a token table, computed once per distinct token).
    """
    rows, hidden = c2.shape
    checks = [(gates, (rows, 4 * hidden), torch.float32), (c2, (rows, hidden), torch.float32), (m, (rows, hidden), torch.float32)]
    if addend is not None:
        checks += [(addend, (addend.shape[0], 4 * hidden), torch.float32), (addend_index, (rows,), torch.int64)]
    for t, shape, dtype in checks:
        if t is None or t.shape != shape or t.dtype != dtype or t.device.type != "cpu" or not t.is_contiguous():
            got = "None" if t is None else f"{t.dtype} {tuple(t.shape)}"
            raise ValueError(f"cell kernel: expected a contiguous {dtype} CPU tensor of shape {shape}, got {got}")
    clip2 = 2.0 * cell_clip if cell_clip else float("inf")
    add = (addend.data_ptr(), addend.shape[0], addend_index.data_ptr()) if addend is not None else (0, 0, 0)
    _lstm_cell.update(gates.data_ptr(), c2.data_ptr(), m.data_ptr(), rows, hidden, clip2, torch.get_num_threads(), *add)


__all__ = ["ENABLED", "available", "update", "usable"]
