"""The engine: every speed path of the biLM behind one seam (base.py).

    backends.py        the backends' names, and which can run here
    base.py            `Engine`: what the model calls (infer_stack, train_stack, encoder_product)
    reference.py       `reference`: the model's recurrence as written, with autograd
    mkl.py             `mkl`: the fast loop on PyTorch's products; the packed training recurrence
    onednn.py          `onednn`: the fast loop on oneDNN's products
    onednn_kernel.py   `onednn+kernel`: oneDNN's products and the compiled cell kernel
    int8.py            `int8`: every inference product in dynamically quantized int8 (opt-in, approximate)
    loops.py           the inference loops and step functions those engines share
    recurrence.py      the training recurrence (packed rows, backward by hand)
    product_rows.py    the row counts products are padded to (batch invariance)
    onednn_ops.py, cell_kernel.py, _lstm_cell.c   the oneDNN operators and the C kernel
    token_cache.py, weights_key.py                the token-vector cache and the weights' version key

One engine object serves one biLM; it is made once from the backend setting
(`make_engine`), and the biLM's mode, never autograd state, picks inference
(eval) or training. docs/internals.md draws it and says where a new backend goes.
"""
from typing import Dict, Type

from .backends import APPROXIMATE, AUTO, BACKENDS, NAMES, BackendError, available, check, resolve, unavailable_reason
from .base import Engine
from .int8 import Int8Engine
from .mkl import MKLEngine
from .onednn import OneDNNEngine
from .onednn_kernel import OneDNNKernelEngine
from .reference import ReferenceEngine

ENGINES: Dict[str, Type[Engine]] = {
    engine.name: engine for engine in (ReferenceEngine, MKLEngine, OneDNNEngine, OneDNNKernelEngine, Int8Engine)
}


def make_engine(setting: str = AUTO) -> Engine:
    """The engine a backend setting names: "auto" (the best available here) or an
    engine's name (BackendError where it cannot run here)."""
    return ENGINES[resolve(setting)](setting)


__all__ = ["APPROXIMATE", "AUTO", "BACKENDS", "BackendError", "ENGINES", "Engine", "Int8Engine", "MKLEngine", "NAMES",
           "OneDNNEngine", "OneDNNKernelEngine", "ReferenceEngine", "available", "check", "make_engine", "resolve",
           "unavailable_reason"]
