"""The small product a fast backend is checked with, once per process, before it is trusted.

Made the same way whatever the caller's settings: on the CPU (a default device of `meta` or a GPU
failed the check for good), in float32 (a float64 default dtype made the operators refuse it), with
autocast off (under `torch.autocast("cpu")` the reference product came back in bfloat16 and
disagreed), and without gradients. A failed check is kept for the process, so it must fail only
where the backend does.
"""
from contextlib import contextmanager
from typing import Iterator, Tuple

import torch


@contextmanager
def plain_cpu_math() -> Iterator[None]:
    """No gradients and no CPU autocast, for the block."""
    with torch.no_grad(), torch.autocast("cpu", enabled=False):
        yield


def probe_tensors() -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x of (3, 8), w of (5, 8), b of (5,)): float32 CPU tensors of distinct values."""
    def values(start: float, end: float, n: int) -> torch.Tensor:
        return torch.linspace(start, end, n, device="cpu", dtype=torch.float32)

    return values(-1.0, 1.0, 24).view(3, 8), values(-0.5, 0.7, 40).view(5, 8), values(0.1, 0.3, 5)


__all__ = ["plain_cpu_math", "probe_tensors"]
