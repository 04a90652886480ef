"""The `reference` engine: the model's own recurrence (`lstm.reference_layer`), with autograd.

Every row runs every step and every product goes through PyTorch's operators
as written: slow, and the definition the other engines are tested against.
The same path serves inference and training (with the stack's dropout in
training mode).
"""
from typing import List


from ..lstm import BiLSTMStack, LSTMState, TokenRows, reference_layer
from .base import Engine, LayerInputs, LayerOutput, StackOutput, run_layers
from .product_rows import product_rows


class ReferenceEngine(Engine):
    name = "reference"

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        x = inputs.x
        assert x is not None  # this engine reads dense inputs
        rows = product_rows(x.shape[1], "mkl")
        return reference_layer(x, inputs.h0, inputs.c0, inputs.lengths, *stack.layer_parameters(layer), stack.clips,
                               rows=rows)

    def _infer_sorted(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        dropout = stack.dropout if stack.training else 0.0
        return run_layers(stack, rows.gather(), state, lambda layer, x, h0, c0: self.infer_layer(
            stack, layer, LayerInputs(x, None, h0, c0, lengths)), dropout=dropout)

    def train_stack(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        return self.infer_stack(stack, rows, lengths, state)


__all__ = ["ReferenceEngine"]
