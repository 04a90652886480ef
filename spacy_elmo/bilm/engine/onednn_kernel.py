"""The `onednn+kernel` engine: oneDNN's products and the compiled cell kernel.

Inference: each step's gate arithmetic is one pass of the C kernel
(`cell_kernel.update`, `_lstm_cell.c`) after an activation-free oneDNN
product; the first layer reads token-table rows, so its input products
`table W_ih + b` are computed once per distinct token and the kernel adds
each row's before its sigmoids (`loops.table_direction`). Training: the
packed recurrence with the kernel's cell forward and backward. Tensors
oneDNN or the kernel do not serve run as the `mkl` engine does.
"""
from functools import partial

import torch

from ..lstm import BiLSTMStack
from . import loops
from .base import LayerInputs, LayerOutput, run_loop, runs_onednn
from .onednn import OneDNNEngine


class OneDNNKernelEngine(OneDNNEngine):
    name = "onednn+kernel"

    def reads_token_table(self, like: torch.Tensor) -> bool:
        return runs_onednn(like)

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        if not runs_onednn(inputs.like):
            return super().infer_layer(stack, layer, inputs)
        weights = self.kept_weights(stack, layer, inputs.like, "onednn+kernel",
                                    partial(loops.prepare_weights, packed=True, split=layer == 0))
        return run_loop(stack, weights, loops.kernel_step, "onednn", inputs)

    def trains_with_kernel(self, like: torch.Tensor) -> bool:
        return like.device.type == "cpu" and like.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


__all__ = ["OneDNNKernelEngine"]
