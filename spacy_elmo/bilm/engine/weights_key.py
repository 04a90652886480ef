"""The one key every cache of computed values is checked against: which weights, at which version.

A cache of values computed from weights (token vectors, the LSTM start
state, the packed inference weights) is valid while the weights are the same
tensors, unmodified, in the same precision and place. `WeightsKey` captures
exactly that from each tensor's metadata, never its values, so that it is
cheap enough to take on every call:

* identity: a weak reference to each tensor (a replaced parameter, e.g.
  after `load_state_dict(..., assign=True)` or `module.to(...)`, never
  matches, even where a new tensor reuses a freed one's address and id);
* version: each tensor's `_version`, which every in-place operation bumps
  (`load_state_dict`, optimizer steps, `with torch.no_grad(): p.add_(...)`);
* storage address, dtype, device and shape;
* the autocast state of the device, and any extra context the caller adds.

Writes through `tensor.data` are invisible to autograd's version counter, so
they are invisible here too: after such writes call `BiLM.clear_cache()`.
Inference tensors (made inside `torch.inference_mode()`, e.g. a model loaded
there) have no version counter at all: their version reads as a constant.
Outside inference mode they cannot be modified in place, so nothing is
missed there; an in-place write inside inference mode is, like a write
through `.data`: call `clear_cache()` after it.
"""
import weakref
from typing import Any, Iterable, Tuple

import torch


class WeightsKey:
    """Identity and version of a set of tensors (plus context); compare with `==`."""

    __slots__ = ("_refs", "_state")

    def __init__(self, tensors: Iterable[torch.Tensor], *context: Any) -> None:
        tensors = tuple(tensors)
        self._refs: Tuple[weakref.ref, ...] = tuple(weakref.ref(t) for t in tensors)
        device_types = sorted({t.device.type for t in tensors})
        autocast = tuple(_autocast_state(kind) for kind in device_types)
        described = tuple((_version(t), t.data_ptr(), t.dtype, t.device, tuple(t.shape)) for t in tensors)
        self._state = (described, autocast, context)

    def same_weights(self, other: "WeightsKey") -> bool:
        """Whether `other` names the same live tensors at the same versions (whatever the
        autocast state and context): values computed under either key stay valid."""
        return (
            isinstance(other, WeightsKey)
            and self._state[0] == other._state[0]
            and len(self._refs) == len(other._refs)
            and all(a() is not None and a() is b() for a, b in zip(self._refs, other._refs))
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WeightsKey) or self._state != other._state:
            return False
        # the same live tensors (a dead reference matches nothing)
        return all(a() is not None and a() is b() for a, b in zip(self._refs, other._refs))

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        # weak references do not pickle; an unpickled key matches nothing, so the
        # values it guarded are recomputed
        return (_matching_nothing, ())


def _matching_nothing() -> WeightsKey:
    return WeightsKey((), object())


def _version(t: torch.Tensor) -> int:
    # an inference tensor tracks no version (reading it raises); it cannot be written in place
    # outside inference mode, so a constant stands for it
    return -1 if t.is_inference() else t._version


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
