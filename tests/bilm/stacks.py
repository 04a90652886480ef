"""Small LSTM stacks with random weights, and skipping where a backend cannot run (shared by the stack's tests)."""
import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, BiLSTMStack
from spacy_elmo.bilm.engine import backends


def small_stack(cell_clip=0.5, proj_clip=0.3, skip=True, backend="auto") -> BiLSTMStack:
    """Two float64 layers (8 cells, 4 projected), weights N(0, 0.8), in training mode."""
    torch.manual_seed(0)
    config = BiLMConfig(
        lstm_dim=8, projection_dim=4, n_layers=2, cell_clip=cell_clip, proj_clip=proj_clip,
        use_skip_connections=skip, filters=((1, 4),), n_highway=0,
    )
    stack = BiLSTMStack(config, backend=backend).double()
    for p in stack.parameters():
        p.data.normal_(0, 0.8)
    return stack


def needs(name: str) -> None:
    """Skip the test where the named backend cannot run here."""
    reason = backends.unavailable_reason(name)
    if reason:
        pytest.skip(f"backend {name}: {reason}")
