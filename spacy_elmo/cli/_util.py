"""Shared command-line helpers."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..io.errors import WeightsError


def fail(message: str, code: int = 1) -> None:
    """Print a clear error (no traceback) and exit non-zero."""
    msg.fail(message)
    raise typer.Exit(code)


def load_weights_or_fail(path: Optional[Path], with_softmax: bool = False):
    from ..io import load_model
    from ..resources import default_model_path

    try:
        return load_model(path if path is not None else default_model_path(), with_softmax=with_softmax)
    except WeightsError as err:
        fail(str(err))


def pick_device(gpu_id: int) -> str:
    import torch

    if gpu_id < 0:
        return "cpu"
    if not torch.cuda.is_available():
        fail(f"--gpu-id {gpu_id} given but CUDA is not available to torch on this machine")
    return f"cuda:{gpu_id}"
