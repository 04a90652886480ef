"""oneDNN's linear product with a fused activation (the `onednn` backends' products).

PyTorch's x86 builds carry oneDNN next to MKL and expose its linear
primitive (prepacked weights, an activation applied while the output is still
in cache) as `torch.ops.mkldnn`, the operators `torch.compile` emits for
frozen CPU graphs. The activation then costs no second pass over the
output, as it does after `addmm` (benchmarks/RESULTS.md compares the two at
the biLM's shapes). The operators have no
autograd: they serve inference on float32 CPU tensors only, and `works()`
checks once per process that they exist and give the right numbers.

A clip is not fused: oneDNN's clipping post-op ("hardtanh") turns NaN into
the lower bound, where PyTorch's `clamp` (and the reference) keep it. The
projection's clip is a `clamp_` of the product's output instead, which
gives the same bits for every other value (the output is the projection's,
a quarter of the cell's width: the pass costs little).
"""
from typing import Optional

import torch

from .probe import plain_cpu_math, probe_tensors

try:
    _LINEAR = torch.ops.mkldnn._linear_pointwise
    _PACK = torch.ops.mkldnn._reorder_linear_weight
    _HAS_OPERATORS = True
except (AttributeError, RuntimeError):  # a build without oneDNN
    _HAS_OPERATORS = False

_WORKS: Optional[bool] = None


def works() -> bool:
    """Once per process: do the operators run here and agree with addmm?"""
    global _WORKS
    if _WORKS is None:
        _WORKS = False
        if _HAS_OPERATORS and torch.backends.mkldnn.is_available():
            try:
                with plain_cpu_math():  # whatever the caller's device, dtype and autocast: see probe.py
                    x, w, b = probe_tensors()
                    packed = _PACK(w, None)
                    expected = torch.addmm(b, x, w.t())
                    got = _LINEAR(x, packed, b, "sigmoid", [], "")
                    plain = _LINEAR(x, packed, b, "none", [], "")
                    _WORKS = bool(
                        torch.allclose(got, torch.sigmoid(expected), atol=1e-6)
                        and torch.allclose(plain, expected, atol=1e-6)
                    )
            except RuntimeError:  # e.g. a CPU or build whose oneDNN lacks the primitive
                pass
    return _WORKS


def pack(weight: torch.Tensor) -> torch.Tensor:
    """A weight laid out as (out, in), reordered once into oneDNN's blocked format."""
    return _PACK(weight.detach().contiguous(), None)


def linear(
    x: torch.Tensor,
    packed: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    activation: str = "none",
    clip: float = 0.0,
) -> torch.Tensor:
    """`activation(x @ W.T + bias)` with W packed by `pack`; activation: "none",
    "sigmoid" or "relu"; with `clip` (> 0, activation "none") the result is
    clamped to +-clip in place, NaN kept (see the module docstring)."""
    if clip:
        if activation != "none":
            raise ValueError(f"a clip goes with activation 'none', not {activation!r}")
        return _LINEAR(x, packed, bias, "none", [], "").clamp_(-clip, clip)
    return _LINEAR(x, packed, bias, activation, [], "")


__all__ = ["linear", "pack", "works"]
