"""Crash-safe, code-free training checkpoints.

A checkpoint is one file holding everything a run needs to continue exactly:
model and softmax weights, optimizer state, step and data position, the
training losses since the last log row and the last evaluation, every
random generator's state (python's, numpy's, torch's, the training GPU's when
it trains on one, and the sampler's) and, for float16 on a GPU, the gradient
scaler's state. It
holds only tensors and plain values (dicts, lists, tuples, strings, numbers,
None) and is read with PyTorch's safe loader (`weights_only=True`), so a
checkpoint file from elsewhere cannot run code; anything else in it, a key
missing or unknown, or a value of the wrong type is refused with one
`CheckpointError` naming the file and the problem.

It is written to a temporary file, flushed to disk and renamed over the
previous one (`io/atomic.py`), so a kill at any moment leaves either the old
or the new checkpoint, never a torn one; when writing fails (disk full), the
previous checkpoint is untouched and the error is reported.
"""
import random
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import numpy
import torch

from ..bilm.errors import SpacyElmoError
from ..faults import fault_point
from ..io.atomic import atomic_path


class CheckpointError(SpacyElmoError, RuntimeError):
    pass


def rng_state(device: Optional[torch.device] = None) -> Dict[str, Any]:
    """Python's, numpy's and torch's global generator states, as plain values and tensors.

    On a CUDA `device` (the one this process trains on) also that GPU's generator ("cuda"),
    which draws the dropout masks there: without it a resumed GPU run would not continue
    exactly. Only that device's: asking for every GPU's state would start CUDA on all of them."""
    np_state: Any = numpy.random.get_state()  # a tuple (numpy's stubs say dict)
    version, internal, gauss = random.getstate()
    state = {
        "python": [int(version), list(internal), gauss],
        "numpy": [str(np_state[0]), np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
        "torch": torch.get_rng_state(),
    }
    if device is not None and device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: Dict[str, Any], device: Optional[torch.device] = None) -> None:
    """Restore what `rng_state` saved. The GPU generator's state ("cuda") goes to a CUDA `device`;
    it is ignored on the CPU (a GPU run resumed on a CPU), and a checkpoint without it (written on
    a CPU, or before it was saved) leaves the GPU's generator as it is."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    numpy.random.set_state((kind, numpy.asarray(keys, dtype=numpy.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and device is not None and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


def save_checkpoint(path: Path, state: Dict[str, Any]) -> None:
    """Write atomically; on failure (disk full...) the previous checkpoint is untouched."""
    path = Path(path)
    problem = _problem(state)
    if problem:
        raise CheckpointError(f"{path}: refusing to write a malformed checkpoint: {problem}")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                torch.save(state, handle)
            fault_point("checkpoint.write")
    except (OSError, RuntimeError) as err:
        previous = "the previous checkpoint is intact" if path.exists() else "no earlier checkpoint exists"
        raise CheckpointError(
            f"{path}: could not write the checkpoint ({' '.join(str(err).split())}{_free_space(path.parent)}); "
            f"{previous}"
        ) from err


def _free_space(directory: Path) -> str:
    """", N MB free on its disk": torch reports a full disk as "unexpected pos 668928 vs 668816"."""
    try:
        return f"; {shutil.disk_usage(directory).free / 2**20:,.1f} MB free on its disk"
    except OSError:
        return ""


def load_checkpoint(path: Path) -> Dict[str, Any]:
    """The checkpoint's contents, read without running any code from the file; checked."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint to resume from")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for a bad file
        text = str(err)
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        if found:
            raise CheckpointError(
                f"{path}: refused: the file holds objects other than tensors and plain values "
                f"({found.group(1)}); it was not written by spacy_elmo pretrain, and loading it could run code"
            ) from None
        # the safe loader's own reason where it gave one, else the first line
        reason = re.search(r"WeightsUnpickler error:\s*(\S[^\n]*)", text)
        detail = reason.group(1) if reason else (text.strip().splitlines() or [""])[0]
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__}: {detail})") from None
    problem = _problem(state)
    if problem:
        raise CheckpointError(f"{path}: not a spacy_elmo pretraining checkpoint: {problem}")
    return state


# -- the checkpoint's layout ------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_list(value: Any, item: Callable[[Any], bool]) -> bool:
    return isinstance(value, (list, tuple)) and all(item(v) for v in value)


def _is_byte_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.uint8


def _model(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items())


def _optimizer(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("state"), dict)
        and _is_list(value.get("param_groups"), lambda g: isinstance(g, dict) and _is_list(g.get("params"), _is_int))
    )


_PROGRESS_INTS = ("step", "epoch", "batches_in_epoch", "tokens")


def _window(value: Any) -> bool:
    """The losses since the last log row (absent or None in checkpoints written before they were kept)."""
    return value is None or (
        isinstance(value, dict)
        and set(value) == {"loss", "count", "tokens", "distill"}
        and _is_number(value["loss"])
        and _is_int(value["count"]) and value["count"] >= 0
        and _is_int(value["tokens"]) and value["tokens"] >= 0
        and _is_list(value["distill"], _is_number)
    )


def _last_eval(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(k, str) and _is_number(v)
                                                             for k, v in value.items()))


def _progress(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and all(_is_int(value.get(k)) and value[k] >= 0 for k in _PROGRESS_INTS)
        and _is_number(value.get("elapsed", 0.0))
        and (value.get("best") is None or _is_number(value["best"]))
        and _window(value.get("window"))
        and _last_eval(value.get("last_eval"))
    )


def _rng(value: Any) -> bool:
    if not isinstance(value, dict) or not {"python", "numpy", "torch"} <= set(value) <= {
        "python", "numpy", "torch", "cuda"
    }:
        return False
    if "cuda" in value and not _is_byte_tensor(value["cuda"]):  # the training GPU's generator, if any
        return False
    python, np_state = value["python"], value["numpy"]
    return (
        _is_list(python, lambda _: True)
        and len(python) == 3
        and _is_int(python[0])
        and _is_list(python[1], _is_int)
        and (python[2] is None or _is_number(python[2]))
        and _is_list(np_state, lambda _: True)
        and len(np_state) == 5
        and isinstance(np_state[0], str)
        and _is_list(np_state[1], _is_int)
        and len(np_state[1]) == 624
        and all(_is_int(v) for v in np_state[2:4])
        and _is_number(np_state[4])
        and _is_byte_tensor(value["torch"])
    )


def _carried(value: Any) -> bool:
    return value is None or (
        _is_list(value, lambda part: _is_list(part, lambda t: isinstance(t, torch.Tensor)))
        and len(value) == 2
        and len(value[0]) == len(value[1])
    )


def _scaler(value: Any) -> bool:
    """A GradScaler's state_dict: names to numbers (scale, growth factors, tracker)."""
    return isinstance(value, dict) and all(isinstance(k, str) and _is_number(v) for k, v in value.items())


def _word_table(value: Any) -> bool:
    if not isinstance(value, dict) or not _is_int(value.get("dim")) or value["dim"] < 1:
        return False
    vocab = value.get("vocab")
    return (
        isinstance(vocab, dict)
        and _is_list(vocab.get("words"), lambda w: isinstance(w, str))
        and _is_list(vocab.get("specials"), lambda w: isinstance(w, str))
        and (value.get("info") is None or isinstance(value["info"], dict))
    )


# key: (required, check, what it must be)
_LAYOUT: Dict[str, Tuple[bool, Callable[[Any], bool], str]] = {
    "model": (True, _model, "a mapping of parameter names to tensors"),
    "optimizer": (True, _optimizer, "an optimizer state (state, param_groups)"),
    "progress": (True, _progress, f"a mapping with non-negative integers {', '.join(_PROGRESS_INTS)} "
                 "(and the loss window and last evaluation, where present)"),
    "rng": (True, _rng, "the python, numpy and torch (and optionally cuda) generator states"),
    "sampler": (
        True, lambda v: _is_list(v, _is_byte_tensor) and len(v) > 0, "a list of generator states (uint8 tensors)"
    ),
    "vocab": (True, lambda v: _is_list(v, lambda w: isinstance(w, str)) and len(v) > 0, "a list of words"),
    "carried": (False, _carried, "None or the carried LSTM state [h tensors, c tensors]"),
    "config": (False, lambda v: v is None or isinstance(v, str), "the run's config as text"),
    "cwd": (False, lambda v: isinstance(v, str), "the working directory its [paths] are relative to"),
    "start": (False, lambda v: v is None or isinstance(v, dict), "the provenance of the model it started from"),
    "word_table": (False, _word_table, "the word table's vocabulary (words, specials), dim and table.json"),
    "distill": (False, _model, "the distillation map's parameters ([training.distill])"),
    "scaler": (False, _scaler, "the gradient scaler's state (float16 on a GPU)"),
    # every process's generators under DDP ("rng" is rank 0's): their dropout masks differ by rank
    "rngs": (False, lambda v: _is_list(v, _rng) and len(v) > 0, "a list of generator states, one per process"),
}


def _problem(state: Any) -> str:
    """What is wrong with a checkpoint's contents ('' if nothing)."""
    if not isinstance(state, dict):
        return f"it holds a {type(state).__name__}, not a mapping"
    missing = [k for k, (required, _, _) in _LAYOUT.items() if required and k not in state]
    unknown = [str(k) for k in state if k not in _LAYOUT]
    if missing or unknown:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(unknown)}"] if unknown else []
        )
        return "keys: " + "; ".join(parts)
    for key, (_, check, what) in _LAYOUT.items():
        if key in state and not check(state[key]):
            return f"'{key}' must be {what}"
    return ""


__all__ = ["save_checkpoint", "load_checkpoint", "rng_state", "set_rng_state", "CheckpointError"]
