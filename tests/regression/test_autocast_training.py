"""Regression: training under bfloat16 autocast crashed in the LSTM.

The training LSTM (`engine/recurrence.LayerRecurrence`) writes its products into
preallocated float32 buffers (`out=`), which autocast does not touch, while
the token encoder's output arrived in bfloat16: "mat1 and mat2 must have the
same dtype". `pretrain` with `precision = "bfloat16"` on a GPU takes the same
path (`scripts/gpu_pretrain.py` asks for it), and so did `bench_pretrain.py
--sections precision`. The LSTM now runs in its weights' dtype (float32
master weights) under autocast; the products around it stay in autocast's.
"""
import pytest
import torch

from spacy_elmo.bilm.engine import backends


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_bilm_trains_under_bfloat16_autocast(allennlp_dir, backend):
    from spacy_elmo.io import load_bilm

    reason = backends.unavailable_reason(backend)
    if reason:
        pytest.skip(reason)
    model = load_bilm(allennlp_dir)
    model.backend = backend
    model.train()
    sentences = [["The", "bank", "was", "closed", "."], ["A", "river", "bank"], ["x"]]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(sentences)
        loss = out.layers.float().pow(2).mean()
    loss.backward()
    grads = [p.grad for p in model.lstm.parameters()]
    assert all(g is not None and g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)
    # the same numbers as float32, to bfloat16's precision
    model.zero_grad()
    with torch.no_grad():
        exact = model(sentences).layers
    assert torch.allclose(out.layers.float(), exact, atol=0.1, rtol=0.05)
