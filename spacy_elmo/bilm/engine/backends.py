"""The backends' names, and which of them can run on this machine.

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
    int8            opt-in and approximate: every inference product in torch's
                    dynamically quantized int8 linear (fbgemm/oneDNN); the
                    layers differ from float32 by the quantization error and,
                    by as much, with the other sentences of their batch;
                    training in float32 as mkl
    auto            the best exact (float32) backend available here (the
                    default): never int8

The choice is a `BiLM` attribute (`BiLM(config, backend=...)`, `bilm.backend =
...`), the `backend` setting of `spacy-elmo.ElmoBiLM.v1` and `embed --backend`;
`spacy-elmo info` reports what `auto` resolves to. An explicit backend that
cannot run here is an error (`BackendError`), never a silent change.

Each name is one engine class (`spacy_elmo.bilm.engine`); this module only
knows the names and whether each can run here.
"""
from typing import List, Optional, Tuple

import torch

from . import cell_kernel, int8, onednn_ops
from ..errors import SpacyElmoError

# the exact backends: float32 (or the tensors' precision), the reference's numbers, batch invariant
BACKENDS = ("reference", "mkl", "onednn", "onednn+kernel")
# opt-in by name only, never `auto`: numbers that differ from the exact ones
APPROXIMATE = ("int8",)
NAMES = BACKENDS + APPROXIMATE
AUTO = "auto"


class BackendError(SpacyElmoError, ValueError):
    """An unknown backend, or one that cannot run on this machine."""


def unavailable_reason(name: str) -> Optional[str]:
    """Why the named backend cannot run here, or None where it can."""
    if name not in NAMES:
        return f"unknown backend {name!r}; choose one of {(AUTO, *NAMES)}"
    if name.startswith("onednn") and not onednn_ops.works():
        return "this PyTorch build's oneDNN linear operators are missing or give wrong numbers"
    if name == "onednn+kernel" and not cell_kernel.available():
        return (
            "the compiled cell kernel is not here (the package was built without it: no C compiler with "
            "OpenMP, or SPACY_ELMO_NO_EXTENSION=1) or this CPU lacks AVX2/FMA; choose 'onednn' (as 'auto' "
            "does), or reinstall from source with a C compiler (`pip install --force-reinstall --no-binary "
            "spacy-elmo spacy-elmo`; in a checkout, `pip install -e .`)"
        )
    if name == "int8" and not int8.works():
        return (
            "this PyTorch build has no working quantized CPU engine for dynamic int8 linear products "
            f"(torch.backends.quantized.supported_engines: {torch.backends.quantized.supported_engines})"
        )
    return None


def available(names: Tuple[str, ...] = BACKENDS) -> List[str]:
    """The exact backends (or the given names) that can run here, in their order: slowest first."""
    return [name for name in names if unavailable_reason(name) is None]


def resolve(name: str) -> str:
    """The backend a setting names: `auto` -> the best exact backend available here
    (never an APPROXIMATE one); an explicit name is checked (BackendError where it cannot run)."""
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


__all__ = ["APPROXIMATE", "AUTO", "BACKENDS", "BackendError", "NAMES", "available", "check", "resolve",
           "unavailable_reason"]
