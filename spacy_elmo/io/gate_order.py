"""The order of the LSTM's four gate blocks, which differs between weight formats.

The biLM stores its gates as (i, f, o, j), so that the three sigmoid gates
are one contiguous slice (`bilm/lstm.py`); TensorFlow's LSTMCell, and so the
published ELMo files, use (i, j, f, o). Weights are permuted on import and export.
"""
from typing import Sequence

import torch

# published (TensorFlow) order i, j, f, o  ->  internal order i, f, o, j
TF_TO_INTERNAL = (0, 2, 3, 1)
INTERNAL_TO_TF = (0, 3, 1, 2)


def permute_gates(tensor: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    """Reorder the four gate blocks along the last axis."""
    blocks = tensor.chunk(4, dim=-1)
    return torch.cat([blocks[i] for i in order], dim=-1)


__all__ = ["INTERNAL_TO_TF", "TF_TO_INTERNAL", "permute_gates"]
