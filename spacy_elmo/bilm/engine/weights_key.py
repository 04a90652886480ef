"""The one key every cache of computed values is checked against: which weights, at which version.

A cache of values computed from weights (token vectors, the LSTM start
state, the packed inference weights) is valid while the weights are the same
tensors, unmodified, in the same precision and place. `WeightsKey` captures
exactly that from each tensor's metadata, never its values, so that it is
cheap enough to take on every call:

* identity: each tensor itself (a replaced parameter, e.g. after
  `load_state_dict(..., assign=True)` or `module.to(...)`, never matches,
  even where a new tensor reuses a freed one's address and id). A key holds
  its tensors, not weak references to them: torch's `swap_tensors` (module
  conversions with `torch.__future__.set_swap_module_params_on_conversion`,
  tensor-subclass parameters) refuses a tensor that has a weak reference;
  `BiLM` drops its keys when it converts its parameters, so an old copy is
  not kept;
* version: each tensor's `_version`, which every in-place operation bumps
  (`load_state_dict`, optimizer steps, `with torch.no_grad(): p.add_(...)`);
* optimizer steps: the step (of any `torch.optim.Optimizer`) that last held the
  tensor, or its base where it is a view. torch's fused optimizers
  (`fused=True`: Adam, AdamW, SGD, Adagrad) write the parameters without
  moving `_version`, so a global optimizer step post-hook, registered once
  when this module is imported, marks every parameter of the optimizer that
  stepped (`_mark_step`), in an attribute of the tensor (no weak reference,
  for `swap_tensors` again, on any model of the process). The marks are per
  tensor, so an optimizer training other tensors (a downstream model over a
  frozen biLM) leaves the biLM's caches alone;
* storage address, dtype, device and shape;
* the autocast state of the device, and any extra context the caller adds.

Writes through `tensor.data` outside an optimizer's step are invisible to
autograd's version counter, so they are invisible here too: after such
writes call `BiLM.clear_cache()`.
Inference tensors (made inside `torch.inference_mode()`, e.g. a model loaded
there) have no version counter at all: their version reads as a constant.
Outside inference mode they cannot be modified in place, so nothing is
missed there; an in-place write inside inference mode is, like a write
through `.data`: call `clear_cache()` after it.
"""
import itertools
import threading
from typing import Any, Callable, Iterable, Tuple

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook


class WeightsKey:
    """Identity and version of a set of tensors (plus context); compare with `==`."""

    __slots__ = ("_tensors", "_state")

    def __init__(self, tensors: Iterable[torch.Tensor], *context: Any) -> None:
        tensors = tuple(tensors)
        self._tensors: Tuple[torch.Tensor, ...] = tensors
        device_types = sorted({t.device.type for t in tensors})
        autocast = tuple(_autocast_state(kind) for kind in device_types)
        described = tuple((_version(t), _last_step(t), t.data_ptr(), t.dtype, t.device, tuple(t.shape))
                          for t in tensors)
        self._state = (described, autocast, context)

    def same_weights(self, other: "WeightsKey") -> bool:
        """Whether `other` names the same live tensors at the same versions (whatever the
        autocast state and context): values computed under either key stay valid."""
        return (
            isinstance(other, WeightsKey)
            and self._state[0] == other._state[0]
            and len(self._tensors) == len(other._tensors)
            and all(a is b for a, b in zip(self._tensors, other._tensors))
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WeightsKey) or self._state != other._state:
            return False
        # the same tensors (the same objects, not equal values)
        return len(self._tensors) == len(other._tensors) and all(
            a is b for a, b in zip(self._tensors, other._tensors))

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Tuple[Callable[[], "WeightsKey"], Tuple[()]]:
        # identity does not survive pickling: an unpickled key matches nothing, so the
        # values it guarded are recomputed
        return (_matching_nothing, ())


def _matching_nothing() -> WeightsKey:
    return WeightsKey((), object())


def _version(t: torch.Tensor) -> int:
    # an inference tensor tracks no version (reading it raises); it cannot be written in place
    # outside inference mode, so a constant stands for it
    return -1 if t.is_inference() else t._version


# the attribute of a tensor that holds the number of the last optimizer step that held it
_STEP_ATTR = "_spacy_elmo_step"
_STEP_NUMBERS = itertools.count(1)
_STEPS_LOCK = threading.Lock()


def _mark_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    """The global optimizer step post-hook: every parameter `optimizer` holds was (possibly) written,
    whether or not the step moved its `_version` (fused optimizers do not)."""
    with _STEPS_LOCK:
        step = next(_STEP_NUMBERS)
        for group in optimizer.param_groups:
            for p in group["params"]:
                setattr(p, _STEP_ATTR, step)


def _last_step(t: torch.Tensor) -> int:
    """The last optimizer step that held `t`, or its base where `t` is a view (0: none did)."""
    step = getattr(t, _STEP_ATTR, 0)
    base = t._base
    return max(step, getattr(base, _STEP_ATTR, 0)) if base is not None else step


register_optimizer_step_post_hook(_mark_step)


def _autocast_state(device_type: str) -> tuple:
    get_dtype = getattr(torch, "get_autocast_dtype", None)  # torch >= 2.4
    dtype = get_dtype(device_type) if get_dtype is not None else None
    return (device_type, torch.is_autocast_enabled(device_type), dtype)


def weights_key(module: torch.nn.Module, *context: Any) -> WeightsKey:
    """The key of every parameter and buffer of `module` (one walk over its modules)."""
    tensors = [
        t for m in module.modules() for t in (*m._parameters.values(), *m._buffers.values()) if t is not None
    ]
    return WeightsKey(tensors, *context)


__all__ = ["WeightsKey", "weights_key"]
