"""Widening a trained biLM's projection: the same numbers in the old dimensions, zeros in the new ones,
new dimensions that train, a softmax that scores as before, and the errors."""
import numpy
import pytest
import torch

from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.bilm.widen import old_dims, widen_projection, widen_softmax

from .word_tables import SENTENCES, layers, table_bilm, table_config


@pytest.mark.parametrize("changes", [{}, {"word_table_dim": 0, "word_table_rows": 0, "word_table_specials": 0}],
                         ids=["word-table", "chars-only"])
def test_a_widened_biLM_computes_the_old_layers_and_zeros(changes):
    if changes:  # a character CNN whose filters (10) are not the projection (8): it has a projection to widen
        bilm = BiLM(table_config(**changes))
        bilm.reset_parameters(3)
        bilm.eval()
    else:
        bilm = table_bilm(seed=3)
    before = {k: v.clone() for k, v in bilm.state_dict().items()}
    wide = widen_projection(bilm, 13)
    assert wide.config.projection_dim == 13 and wide.width == 26 and not wide.training
    keep, new = old_dims(8, 13), [i for i in range(26) if i not in old_dims(8, 13)]
    for old, widened in zip(layers(bilm), layers(wide)):
        assert widened.shape == old.shape[:-1] + (26,)
        numpy.testing.assert_array_equal(widened[..., keep], old)
        assert not widened[..., new].any()
    for name, tensor in bilm.state_dict().items():  # the source model is left as it was
        torch.testing.assert_close(tensor, before[name], rtol=0, atol=0)


@pytest.mark.parametrize("scale", [0.1, 0.0])
def test_the_new_dimensions_get_gradients_only_through_random_input_weights(scale):
    """A loss on the top layer reaches the token layer's new projection columns through the LSTM's
    new input weights: random ones pass it on, zero ones (scale 0) would leave them dead, zero
    outputs behind zero weights. The top layer's new projection columns learn either way."""
    wide = widen_projection(table_bilm(seed=1), 12, scale=scale)
    wide.train()
    top = wide(SENTENCES).layers[-1]
    (top ** 2 + top).sum().backward()
    assert wide.lstm.weight_proj[1].grad[:, :, 8:].abs().sum() > 0
    token_grad = wide.token_encoder.proj_weight.grad[:, 8:].abs().sum()
    assert (token_grad > 0) if scale else (token_grad == 0)


def test_a_widened_softmax_scores_the_widened_top_layer_as_before():
    head = SoftmaxHead(7, 8, "full")
    head.reset_parameters(torch.Generator().manual_seed(0))
    wide = widen_softmax(head, 12)
    hidden, targets = torch.randn(5, 8), torch.tensor([0, 3, 6, 2, 2])
    padded = torch.cat([hidden, torch.zeros(5, 4)], dim=1)
    torch.testing.assert_close(wide.log_prob(padded, targets), head.log_prob(hidden, targets))
    with pytest.raises(ValueError, match="adaptive"):
        widen_softmax(SoftmaxHead(20, 8, "adaptive", cutoffs=[10]), 12)


def test_widening_refuses_a_narrower_size_and_a_token_layer_without_projection_before_or_after():
    bilm = table_bilm()
    with pytest.raises(ValueError, match="must be larger than the model's 8"):
        widen_projection(bilm, 8)
    plain = BiLM(table_config(projection_dim=10, word_table_dim=0, word_table_rows=0, word_table_specials=0))
    with pytest.raises(ValueError, match="no projection"):
        widen_projection(plain, 16)
    chars_only = BiLM(table_config(word_table_dim=0, word_table_rows=0, word_table_specials=0))
    with pytest.raises(ValueError, match="the character CNN's width"):
        widen_projection(chars_only, 10)  # its filters: 4 + 6
