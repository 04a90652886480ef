"""Crash-safe training checkpoints.

A checkpoint is one file holding everything a run needs to continue exactly:
model and softmax weights, optimizer state, step and data position, and every
random generator's state. It is written to a temporary file, flushed to disk
and renamed over the previous one, so a kill at any moment leaves either the
old or the new checkpoint, never a torn one; when writing fails (disk full),
the previous checkpoint is untouched and the error is reported.
"""
import os
import random
from pathlib import Path
from typing import Any, Dict

import numpy
import torch


def rng_state() -> Dict[str, Any]:
    np_state = numpy.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: Dict[str, Any]) -> None:
    python = state["python"]
    random.setstate((python[0], tuple(python[1]), python[2]))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    numpy.random.set_state((kind, numpy.asarray(keys, dtype=numpy.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])


class CheckpointError(RuntimeError):
    pass


def save_checkpoint(path: Path, state: Dict[str, Any]) -> None:
    """Write atomically; on failure (disk full...) the previous checkpoint is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        previous = "the previous checkpoint is intact" if path.exists() else "no earlier checkpoint exists"
        raise CheckpointError(f"{path}: could not write the checkpoint ({err}); {previous}") from err
    finally:
        if tmp.exists():
            tmp.unlink()


def load_checkpoint(path: Path) -> Dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint to resume from")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # torch raises many kinds for a bad file
        raise CheckpointError(f"{path}: unreadable checkpoint ({type(err).__name__}: {err})") from None


__all__ = ["save_checkpoint", "load_checkpoint", "rng_state", "set_rng_state", "CheckpointError"]
