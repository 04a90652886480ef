"""The `onednn` engine: the fast LSTM loop with oneDNN's products.

Each step's product has the gates' sigmoid fused into it, and the
projection is clipped after its product, NaN kept (`loops.onednn_step`,
`onednn_ops.linear`); the token encoder's products run
on oneDNN too. oneDNN's operators have no autograd and compute float32 CPU
tensors outside autocast only: anything else (GPU, float64, bfloat16
autocast), and all training, runs as the `mkl` engine does.
"""
from functools import partial

import torch

from ..lstm import BiLSTMStack
from . import loops, onednn_ops
from .base import LayerInputs, LayerOutput, run_loop, runs_onednn
from .mkl import MKLEngine


class OneDNNEngine(MKLEngine):
    name = "onednn"

    def library(self, like: torch.Tensor) -> str:
        return "onednn" if runs_onednn(like) else "mkl"

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        if not runs_onednn(inputs.like):
            return super().infer_layer(stack, layer, inputs)
        weights = self.kept_weights(stack, layer, inputs.like, "onednn", partial(loops.prepare_weights, packed=True))
        return run_loop(stack, weights, loops.onednn_step, "onednn", inputs._replace(table=None))

    def _product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not runs_onednn(x):
            return super()._product(bias, x, weight)
        return onednn_ops.linear(x, weight.t(), bias)  # the (in, out) weight as a transposed view, no copy


__all__ = ["OneDNNEngine"]
