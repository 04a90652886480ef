"""Small LSTM stacks with random weights, and skipping where a backend cannot run (shared by the stack's tests)."""
import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, BiLSTMStack, TokenRows
from spacy_elmo.bilm.engine import backends, make_engine


def small_stack(cell_clip=0.5, proj_clip=0.3, skip=True, backend="auto") -> BiLSTMStack:
    """Two float64 layers (8 cells, 4 projected), weights N(0, 0.8), in training mode."""
    torch.manual_seed(0)
    config = BiLMConfig(
        lstm_dim=8, projection_dim=4, n_layers=2, cell_clip=cell_clip, proj_clip=proj_clip,
        use_skip_connections=skip, filters=((1, 4),), n_highway=0,
    )
    stack = BiLSTMStack(config, engine=make_engine(backend)).double()
    for p in stack.parameters():
        p.data.normal_(0, 0.8)
    return stack


def dense_rows(inputs: torch.Tensor) -> TokenRows:
    """Dense inputs (2, batch, time, P) as the rows of a table of every position."""
    n = inputs.shape[0] * inputs.shape[1] * inputs.shape[2]
    index = torch.arange(n, device=inputs.device).view(inputs.shape[:3])
    return TokenRows(inputs.reshape(n, inputs.shape[3]), index)


def needs(name: str) -> None:
    """Skip the test where the named backend cannot run here."""
    reason = backends.unavailable_reason(name)
    if reason:
        pytest.skip(f"backend {name}: {reason}")
