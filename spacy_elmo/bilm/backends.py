"""The biLM's backends: one explicit choice of how it computes, made once.

    reference       the plain recurrence in PyTorch's operators, as TensorFlow's
                    LSTMCell defines it: the readable definition the others are
                    tested against (slow)
    mkl             the fast LSTM loop (one [x_t, h] product per step, in-place
                    gate arithmetic) on PyTorch's products: MKL on CPU, cuBLAS on GPU
    onednn          the fast loop with oneDNN's products (sigmoid fused into the
                    step product), the token encoder's products on oneDNN too
    onednn+kernel   onednn, with the compiled cell kernel for each step's gate
                    arithmetic and the first layer's input products computed once
                    per distinct token
    auto            the best of these available here (the default)

The choice is a `BiLM` attribute (`BiLM(config, backend=...)`, `bilm.backend =
...`), the `backend` setting of `spacy-elmo.ElmoBiLM.v1` and `embed --backend`;
`spacy-elmo info` reports what `auto` resolves to. An explicit backend that
cannot run here is an error (`BackendError`), never a silent change.

What runs for a given call (`select`) also depends on its tensors: oneDNN and
the kernel compute float32 CPU tensors outside autocast, so the `onednn`
backends run anything else (GPU, float64, bfloat16 autocast) on the `mkl`
loop. With gradients (training) every backend but `reference` takes the
training loop (`lstm_train.py`), whose cell goes through the kernel on
`onednn+kernel`. docs/internals.md describes where each speed-up lives.
"""
from typing import List, NamedTuple, Optional

import torch

from . import cell_kernel, onednn

BACKENDS = ("reference", "mkl", "onednn", "onednn+kernel")
AUTO = "auto"


class BackendError(ValueError):
    """An unknown backend, or one that cannot run on this machine."""


class Backend(NamedTuple):
    """What runs for one call (see `select`)."""

    name: str

    @property
    def reference(self) -> bool:
        return self.name == "reference"

    @property
    def onednn(self) -> bool:
        """Products through oneDNN (inference)."""
        return self.name in ("onednn", "onednn+kernel")

    @property
    def kernel(self) -> bool:
        """The gate arithmetic through the compiled cell kernel (inference and training)."""
        return self.name == "onednn+kernel"

    @property
    def library(self) -> str:
        """Which library's products run: "onednn" or "mkl" (PyTorch's own)."""
        return "onednn" if self.onednn else "mkl"


def unavailable_reason(name: str) -> Optional[str]:
    """Why the named backend cannot run here, or None where it can."""
    if name not in BACKENDS:
        return f"unknown backend {name!r}; choose one of {(AUTO, *BACKENDS)}"
    if name.startswith("onednn") and not onednn.works():
        return "this PyTorch build's oneDNN linear operators are missing or give wrong numbers"
    if name == "onednn+kernel" and not cell_kernel.available():
        return (
            "the compiled cell kernel is not built (no C compiler at install) or this CPU lacks AVX2/FMA; "
            "rebuild with `python setup.py build_ext --inplace`, or choose 'onednn'"
        )
    return None


def available() -> List[str]:
    """The backends that can run here, slowest first."""
    return [name for name in BACKENDS if unavailable_reason(name) is None]


def resolve(name: str) -> str:
    """The backend a setting names: `auto` -> the best available here; an explicit
    name is checked (BackendError where it cannot run)."""
    if name == AUTO:
        return available()[-1]
    reason = unavailable_reason(name)
    if reason is not None:
        raise BackendError(f"backend {name!r}: {reason}")
    return name


def check(name: str) -> str:
    """`name` if it is a valid setting that can run here (BackendError otherwise)."""
    resolve(name)
    return name


def select(name: str, like: torch.Tensor) -> Backend:
    """What runs for tensors like `like` under the setting `name` (see the module docstring)."""
    chosen = resolve(name)
    if not chosen.startswith("onednn"):
        return Backend(chosen)
    float32_cpu = like.device.type == "cpu" and like.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
    if torch.is_grad_enabled():
        # training: oneDNN's operators have no autograd; the kernel serves the training loop's cell
        return Backend(chosen if chosen == "onednn+kernel" and float32_cpu else "mkl")
    return Backend(chosen if float32_cpu and torch.backends.mkldnn.enabled else "mkl")


__all__ = ["AUTO", "BACKENDS", "Backend", "BackendError", "available", "check", "resolve", "select",
           "unavailable_reason"]
