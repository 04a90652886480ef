"""The `int8` engine: the LSTM's and the token encoder's products in int8, opt-in and approximate.

Every inference product of the biLM (each step's `[x_t, h] [W_ih; W_hh] + b`
and projection `m W_proj` in `loops.dense_direction`, the token encoder's
convolution, highway and projection) runs as PyTorch's dynamically quantized
linear operator (`torch.ops.quantized.linear_dynamic`, fbgemm or oneDNN under
torch's quantized engine): the weights are quantized once to int8 per output
channel (symmetric, one scale per column of the float weight) and packed; at
each call the operator picks one uint8 scale and zero point for the whole
input from its range, multiplies in integers and returns float32 (inputs in
7 bits on CPUs without VNNI, see REDUCE_RANGE). The gate arithmetic between
the products is the float32 one of the other engines (the compiled cell
kernel where it is built, else PyTorch's operators); every layer reads dense
inputs (the first layer's per-token input products of `onednn+kernel` would
quantize the whole token table at one scale).

Two properties set it apart from the float32 engines, which is why `auto`
never picks it (only an explicit `backend="int8"` does):

* approximate: the layers differ from float32 by the quantization error, most
  in layer 0, whose projection reads highway outputs whose channels span very
  different ranges, the largest setting the one scale for all (tests/bilm/engine/test_int8.py holds
  the tolerance; benchmarks/RESULTS.md the measured differences and what they
  do downstream);
* not batch invariant: the input's scale is computed from every row of a
  product, so a sentence's layers depend, by as much as the quantization
  error, on which other sentences share its batch (DESIGN.md's principle
  holds for the exact engines only). Zero rows do not move the scale, so the
  padding to `product_rows` changes nothing; the other rows do. The numbers
  also differ between CPUs with and without VNNI.

Training (`train_stack`) is the `mkl` engine's float32 recurrence, and the
token encoder's products in training mode are float32 too. Tensors the
quantized operator does not serve (GPU, float64, autocast) run as `mkl` does.

NaN and infinities: the quantized operator turns them into finite numbers
(or fails, where the input's range is NaN), so a layer whose inputs, initial
state or weights are not all finite, and a token encoder product whose
input or weights are not, runs in float32 as `mkl` does: they propagate as
in the reference. With finite inputs and weights the int8 layer cannot
produce them (sigmoids are bounded, the cell grows by at most 2 a step), so
one check of a layer's or product's inputs per call (`all_finite`, a sum:
under 1% of a call) and one of the weights when they are packed suffice.
"""
import math
import warnings
from typing import Any, NamedTuple, Optional, Tuple

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ..lstm import BiLSTMStack
from . import cell_kernel, loops
from .base import LayerInputs, LayerOutput, run_loop
from .probe import plain_cpu_math, probe_tensors
from .mkl import MKLEngine
from .weights_key import WeightsKey

# 7-bit inputs (torch's default for dynamic quantization on x86) where the CPU lacks
# VNNI, whose int8 products sum pairs into saturating 16-bit integers; 8-bit with VNNI
REDUCE_RANGE = not getattr(torch.cpu, "_is_vnni_supported", lambda: False)()

_WORKS: Optional[bool] = None


def works() -> bool:
    """Once per process: does torch's dynamic int8 linear run here and agree with addmm to int8 precision?"""
    global _WORKS
    if _WORKS is None:
        _WORKS = False
        if torch.backends.quantized.engine not in ("none", None):
            try:
                with plain_cpu_math():  # whatever the caller's device, dtype and autocast: see probe.py
                    x, w, b = probe_tensors()
                    got = linear(x, pack(w, b))
                    _WORKS = bool(torch.allclose(got, torch.addmm(b, x, w.t()), atol=0.05))
            except (RuntimeError, NotImplementedError):  # a build or CPU without the quantized operators
                pass
    return _WORKS


def pack(weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> Any:
    """A float weight laid out as (out, in), quantized to int8 per output row and
    packed for `linear` (a torch script object, not a tensor)."""
    weight = weight.detach().float().contiguous()
    scales = (weight.abs().amax(dim=1) / 127.0).clamp_(min=1e-12).double()
    zero_points = torch.zeros(weight.shape[0], dtype=torch.long, device=weight.device)
    with warnings.catch_warnings():  # torch marks its quantized tensor types deprecated
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(quantized, None if bias is None else bias.detach().float())


def all_finite(*tensors: torch.Tensor) -> bool:
    """Whether every element of every tensor is finite (neither NaN nor infinite).

    By each tensor's sum, one pass without a temporary (`isfinite().all()` costs ~15 times
    more): a NaN or an infinity makes the sum NaN or infinite. A sum that overflows from
    finite elements alone answers False, which only sends the call to float32."""
    return all(math.isfinite(float(t.sum())) for t in tensors)


def linear(x: torch.Tensor, packed: Any) -> torch.Tensor:
    """`x @ W.T + bias` (float32) for W, bias packed by `pack`, x quantized per call."""
    return torch.ops.quantized.linear_dynamic(x, packed, REDUCE_RANGE)


def runs_int8(like: torch.Tensor) -> bool:
    """The quantized operator serves float32 CPU tensors outside autocast."""
    return bool(like.device.type == "cpu" and like.dtype == torch.float32 and not torch.is_autocast_enabled("cpu"))


class Int8Direction(NamedTuple):
    """One direction of one layer, packed for `linear`: gates `[W_ih; W_hh]` with the
    bias, out W_proj (the j columns and W_proj doubled, as in loops.py)."""

    gates: Any
    out: Any


def prepare_weights(w_ih: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor,
                    w_proj: torch.Tensor) -> Optional[Tuple[Int8Direction, Int8Direction]]:
    """Both directions' packed weights from a layer's float32 parameters (2, ., .); None where a
    weight is not finite (the layer then runs in float32: see the module docstring)."""
    if not all_finite(w_ih, w_hh, bias, w_proj):
        return None
    forward, backward = (Int8Direction(gates=pack(d.gates.t(), d.bias), out=pack(d.out.t()))
                         for d in loops.prepare_weights(w_ih, w_hh, bias, w_proj, packed=False))
    return forward, backward


def int8_step(xh: torch.Tensor, c2: torch.Tensor, m: torch.Tensor, *, w: Int8Direction, cell_clip: float,
              proj_clip: float) -> torch.Tensor:
    """`loops.mkl_step` with both products in int8; the cell through the compiled kernel where it is built."""
    gates = linear(xh, w.gates)
    if cell_kernel.available():
        cell_kernel.update(gates, c2, m, cell_clip)
    else:
        loops.cell_update(gates.sigmoid_(), c2, m, cell_clip)
    h = linear(m, w.out)
    return h.clamp_(-proj_clip, proj_clip) if proj_clip else h


class Int8Engine(MKLEngine):
    """`mkl` with every inference product in dynamically quantized int8 (see the module docstring:
    approximate, and a row's numbers depend on the other rows of its batch)."""

    name = "int8"

    def __init__(self, setting: Optional[str] = None) -> None:
        super().__init__(setting)
        self._encoder_kept: Optional[WeakIdKeyDictionary] = None

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        x = inputs.like
        if not runs_int8(x):
            return super().infer_layer(stack, layer, inputs)
        weights = self.kept_weights(stack, layer, x, f"int8 {torch.backends.quantized.engine}", prepare_weights)
        if weights is None or not all_finite(x, inputs.h0, inputs.c0):
            return super().infer_layer(stack, layer, inputs)  # float32: NaN and infinities propagate
        # run_layer's dense path hands each direction's weights to the step untouched
        return run_loop(stack, weights, int8_step, self.library(x), inputs._replace(table=None))

    def _product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not runs_int8(x):
            return super()._product(bias, x, weight)
        packed = self._encoder_weights(weight, bias)
        if packed is None or not all_finite(x):
            return super()._product(bias, x, weight)  # float32: NaN and infinities propagate
        return linear(x, packed)

    def _encoder_weights(self, weight: torch.Tensor, bias: torch.Tensor) -> Any:
        """A token encoder product's packed weight (from its (in, out) float weight), kept
        while the weight lives, until it or its bias changes; None where they are not finite.

        `_encoder_kept` is read once, into a local: another thread's `clear()` may set it to
        None at any moment, and a packed weight stored into the dropped dictionary is merely lost."""
        kept_weights = self._encoder_kept
        if kept_weights is None:
            kept_weights = self._encoder_kept = WeakIdKeyDictionary()
        key = WeightsKey((weight, bias), "int8", torch.backends.quantized.engine)
        kept = kept_weights.get(weight)
        if kept is not None and kept[0] == key:
            return kept[1]
        packed = pack(weight.t(), bias) if all_finite(weight, bias) else None
        kept_weights[weight] = (key, packed)
        return packed

    def clear(self) -> None:
        super().clear()
        self._encoder_kept = None


__all__ = ["Int8Engine", "all_finite", "int8_step", "linear", "pack", "runs_int8", "works"]
