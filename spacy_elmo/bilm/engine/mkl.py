"""The `mkl` engine: the fast LSTM loop on PyTorch's products (MKL on CPU, cuBLAS on GPU).

Inference runs `loops.dense_direction` with `mkl_step`: one `[x_t, h]`
product per step and the gate arithmetic in place (loops.py). Training runs
the packed recurrence with its hand-written backward pass (recurrence.py),
the cell in PyTorch's element-wise operators.
"""
from functools import partial
from typing import List

import torch

from ..lstm import BiLSTMStack, LSTMState, TokenRows
from . import loops, recurrence
from .base import Engine, LayerInputs, LayerOutput, StackOutput, run_loop


class MKLEngine(Engine):
    name = "mkl"

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        weights = self.kept_weights(stack, layer, inputs.like, "mkl", partial(loops.prepare_weights, packed=False))
        return run_loop(stack, weights, loops.mkl_step, "mkl", inputs._replace(table=None))

    def train_stack(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        return recurrence.run_stack(stack, rows.gather(), lengths, state, kernel=self.trains_with_kernel(rows.table))

    def trains_with_kernel(self, like: torch.Tensor) -> bool:
        """Whether the training recurrence's cell runs through the compiled kernel."""
        return False


__all__ = ["MKLEngine"]
