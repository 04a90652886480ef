"""Regression: the caches' keys put weak references on parameters, which torch's `swap_tensors` refuses.

`WeightsKey` held a weak reference to every tensor it covered, and the global optimizer hook that
marks stepped parameters (for fused optimizers, which do not move `_version`) kept them in a
`WeakIdKeyDictionary`. Module conversions that swap tensors (`torch.__future__.
set_swap_module_params_on_conversion(True)`, and always for tensor-subclass parameters) then failed
with "Couldn't swap": for a BiLM after one call, and for any model of the process that an optimizer
had stepped once spacy_elmo was imported. The keys now hold the tensors, the marks are an attribute
of each tensor, and a BiLM drops its keys when it converts its parameters.
"""
import numpy
import pytest
import torch

from spacy_elmo.bilm.engine.weights_key import weights_key
from spacy_elmo.io import load_bilm

SENTENCE = [["The", "cat", "sat", "."]]


@pytest.fixture
def swapping():
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    yield
    torch.__future__.set_swap_module_params_on_conversion(before)


def test_another_model_stepped_by_an_optimizer_still_converts(swapping):
    linear = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(linear.parameters(), fused=False)
    linear(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    linear.double()
    assert linear.weight.dtype == torch.float64


def test_a_bilm_used_and_stepped_converts_and_computes_afresh(allennlp_dir, swapping):
    model = load_bilm(allennlp_dir)
    model.eval()
    model.embed(SENTENCE)  # fills the token cache and the start state, under keys of the weights
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    sum(p.sum() for p in model.parameters()).backward()
    optimizer.step()
    model.eval()
    float32 = model.embed(SENTENCE)[0]
    model.double()
    assert next(model.parameters()).dtype == torch.float64
    model.float()
    numpy.testing.assert_allclose(model.embed(SENTENCE)[0], float32, atol=1e-6)


def test_a_key_still_tells_replaced_and_stepped_weights(allennlp_dir):
    model = load_bilm(allennlp_dir)
    key = weights_key(model)
    assert key == weights_key(model)
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()  # fused: no _version moves; the step's mark does
    assert key != weights_key(model)
    stepped = weights_key(model)
    model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()}, assign=True)
    assert stepped != weights_key(model)  # new tensors, whatever their ids and addresses
