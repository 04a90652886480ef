"""Regression: the character encoder called directly in eval mode, with autograd on, lost its gradients.

In eval mode its products went through the engine, whose oneDNN and int8 products have no
backward: the output said `requires_grad=True`, and every encoder parameter got no gradient
(a UserWarning only). `BiLM.forward` turns autograd off in eval mode, so only direct calls of the
exported `CharCNNEncoder` met it. Where autograd needs the product it is now torch's own.
"""
import pytest
import torch

from spacy_elmo.bilm.engine import available
from spacy_elmo.io import load_bilm


@pytest.mark.parametrize("backend", available())
def test_eval_mode_gradients_reach_the_encoder(allennlp_dir, backend):
    model = load_bilm(allennlp_dir)
    model.backend = backend
    encoder = model.token_encoder.eval()
    char_ids = torch.as_tensor(model.char_encoder.encode(["The", "cat", "sat"]))  # with <S> and </S> first
    encoder(char_ids).sum().backward()
    assert encoder.char_embed.grad is not None and encoder.char_embed.grad.abs().sum() > 0
    assert all(w.grad is not None for w in encoder.conv_weights)
    with torch.no_grad():  # without autograd the engine computes it, as before
        assert not encoder(char_ids).requires_grad
