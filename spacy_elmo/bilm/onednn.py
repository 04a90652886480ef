"""oneDNN's linear product with a fused activation, for inference on CPU.

PyTorch's x86 builds carry oneDNN next to MKL and expose its linear
primitive (prepacked weights, an activation applied while the output is still
in cache) as `torch.ops.mkldnn`, the operators `torch.compile` emits for
frozen CPU graphs. At the biLM's shapes it beats `addmm` followed by a
separate activation pass: measured on 2 threads, a [256, 256] x [256, 4096]
LSTM step product with its sigmoid ran 1.37x faster, and the LSTMs as a whole
1.1-1.2x (benchmarks/RESULTS.md). Its rows are the same bits whatever the
product's height once it is a few rows high: with packed weights from 3 rows
up (measured up to 8,193 rows for three shapes, with and without bias, 1 and
2 threads; 1- and 2-row products differ), with plain weights (the token
encoder's) from 2 rows up; MKL switches kernels below 4 rows. Every product
here is therefore kept at least MIN_ROWS high.

Used only without autograd, for float32 CPU tensors outside autocast, where
the operators exist, `torch.backends.mkldnn` is enabled and a first small
product gives the right numbers; everything else takes the plain PyTorch
path. `ENABLED = False` switches it off (for A/B runs and for the tests that
compare both paths).
"""
from typing import Optional

import torch

ENABLED = True

try:
    _LINEAR = torch.ops.mkldnn._linear_pointwise
    _PACK = torch.ops.mkldnn._reorder_linear_weight
except (AttributeError, RuntimeError):  # a build without oneDNN
    _LINEAR = _PACK = None

_WORKS: Optional[bool] = None


def _works() -> bool:
    """Once per process: do the operators run here and agree with addmm?"""
    global _WORKS
    if _WORKS is None:
        _WORKS = False
        if _LINEAR is not None and torch.backends.mkldnn.is_available():
            try:
                with torch.no_grad():
                    x = torch.linspace(-1.0, 1.0, 24).view(3, 8)
                    w = torch.linspace(-0.5, 0.7, 40).view(5, 8)
                    b = torch.linspace(0.1, 0.3, 5)
                    packed = _PACK(w, None)
                    expected = torch.addmm(b, x, w.t())
                    got = _LINEAR(x, packed, b, "sigmoid", [], "")
                    clipped = _LINEAR(x, packed, b, "hardtanh", [-0.2, 0.3], "")
                    _WORKS = bool(
                        torch.allclose(got, torch.sigmoid(expected), atol=1e-6)
                        and torch.allclose(clipped, expected.clamp(-0.2, 0.3), atol=1e-6)
                    )
            except RuntimeError:  # e.g. a CPU or build whose oneDNN lacks the primitive
                pass
    return _WORKS


def usable(x: torch.Tensor) -> bool:
    """Whether `x` may go through oneDNN's linear product here."""
    return (
        ENABLED
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and not torch.is_grad_enabled()
        and not torch.is_autocast_enabled("cpu")
        and torch.backends.mkldnn.enabled
        and _works()
    )


# the fewest rows a product is given: oneDNN's 1-row products (and 2-row ones with
# packed weights) differ in the last bits from taller ones, which agree at every
# height measured (see the module docstring)
MIN_ROWS = 8


def padded_rows(n: int) -> int:
    """The height to compute an n-row product at: n rounded up to one of ~32
    heights per octave (at most 1/32 more rows), and at least MIN_ROWS.

    oneDNN builds a kernel for each new shape (about 0.5 ms) and caches 1,024
    of them (~65 MiB over all of EWT when every height was new); the heights
    here follow the data, so they are rounded to keep the shapes few.
    Non-decreasing in n.
    """
    granule = max(MIN_ROWS, 1 << max(0, n.bit_length() - 6))
    return -(-max(n, 1) // granule) * granule


def pad_rows(x: torch.Tensor, height: int) -> torch.Tensor:
    """x (n, k) with zero rows appended up to `height` rows (x itself if n == height)."""
    n = x.shape[0]
    return x if height == n else torch.cat([x, x.new_zeros((height - n, x.shape[1]))])


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
    clamped to +-clip in the same pass (oneDNN's "hardtanh")."""
    if clip:
        if activation != "none":
            raise ValueError(f"a clip goes with activation 'none', not {activation!r}")
        return _LINEAR(x, packed, bias, "hardtanh", [-clip, clip], "")
    return _LINEAR(x, packed, bias, activation, [], "")


__all__ = ["ENABLED", "MIN_ROWS", "linear", "pack", "pad_rows", "padded_rows", "usable"]
