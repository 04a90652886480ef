"""The `onednn` engine: the fast LSTM loop with oneDNN's products.

Each step's product has the gates' sigmoid fused into it, and the
projection its clip (`loops.onednn_step`); the token encoder's products run
on oneDNN too. oneDNN's operators have no autograd and compute float32 CPU
tensors outside autocast only: anything else (GPU, float64, bfloat16
autocast), and all training, runs as the `mkl` engine does.
"""
from functools import partial
from typing import List, Optional, Tuple

import torch

from ..lstm import BiLSTMStack
from . import loops, onednn_ops
from .base import LayerOutput, runs_onednn
from .mkl import MKLEngine


class OneDNNEngine(MKLEngine):
    name = "onednn"

    def library(self, like: torch.Tensor) -> str:
        return "onednn" if runs_onednn(like) else "mkl"

    def infer_layer(
        self, stack: BiLSTMStack, layer: int, x: Optional[torch.Tensor],
        table: Optional[Tuple[torch.Tensor, torch.Tensor]], h0: torch.Tensor, c0: torch.Tensor,
        lengths: List[int],
    ) -> LayerOutput:
        assert x is not None  # this engine reads dense inputs
        if not runs_onednn(x):
            return super().infer_layer(stack, layer, x, table, h0, c0, lengths)
        weights = self.kept_weights(stack, layer, x, "onednn", partial(loops.prepare_weights, packed=True))
        return loops.run_layer(weights, loops.onednn_step, "onednn", inputs=x, h0=h0, c0=c0, lengths=lengths,
                               clips=stack.clips)

    def _product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not runs_onednn(x):
            return super()._product(bias, x, weight)
        return onednn_ops.linear(x, weight.t(), bias)  # the (in, out) weight as a transposed view, no copy


__all__ = ["OneDNNEngine"]
