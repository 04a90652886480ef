"""The `mkl` engine: the fast LSTM loop on PyTorch's products (MKL on CPU, cuBLAS on GPU).

Inference runs `loops.dense_direction` with `mkl_step`: one `[x_t, h]`
product per step and the gate arithmetic in place (loops.py). Training runs
the packed recurrence with its hand-written backward pass (recurrence.py),
the cell in PyTorch's element-wise operators.
"""
from functools import partial
from typing import List, Optional, Tuple

import torch

from ..lstm import BiLSTMStack, LSTMState, TokenRows
from . import loops, recurrence
from .base import Engine, LayerOutput, StackOutput


class MKLEngine(Engine):
    name = "mkl"

    def infer_layer(
        self, stack: BiLSTMStack, layer: int, x: Optional[torch.Tensor],
        table: Optional[Tuple[torch.Tensor, torch.Tensor]], h0: torch.Tensor, c0: torch.Tensor,
        lengths: List[int],
    ) -> LayerOutput:
        assert x is not None  # this engine reads dense inputs
        weights = self.kept_weights(stack, layer, x, "mkl", partial(loops.prepare_weights, packed=False))
        return loops.run_layer(weights, loops.mkl_step, "mkl", inputs=x, h0=h0, c0=c0, lengths=lengths,
                               clips=stack.clips)

    def train_stack(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        return recurrence.run_stack(stack, rows.gather(), lengths, state, kernel=self.trains_with_kernel(rows.table))

    def trains_with_kernel(self, like: torch.Tensor) -> bool:
        """Whether the training recurrence's cell runs through the compiled kernel."""
        return False


__all__ = ["MKLEngine"]
