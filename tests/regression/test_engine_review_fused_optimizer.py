"""Regression: after a step of torch's fused Adam/AdamW, the biLM silently predicted with the pre-step weights.

Every cache of the biLM (the engine's prepared weights, the start state, the
token cache) is keyed on each weight's identity and `_version`. A fused
optimizer (`fused=True`) writes the parameters without moving `_version`, so
after its step every key still matched and the next call reused values of the
old weights (0.27 off a fresh model holding the new ones). `weights_key.py`
now registers a global optimizer step post-hook that marks the parameters of
every optimizer that steps, and the key includes the mark.
"""
import numpy
import pytest
import torch

from spacy_elmo.bilm.engine.weights_key import WeightsKey, weights_key
from spacy_elmo.io import load_bilm

SENTENCES = [["The", "bank", "was", "closed", "."], ["A", "cat", "sat"]]
FUSED = {
    "Adam": lambda params: torch.optim.Adam(params, lr=1e-3, fused=True),
    "AdamW": lambda params: torch.optim.AdamW(params, lr=1e-3, fused=True),
}


def _step(make, params) -> None:
    params = list(params)
    for p in params:
        p.grad = torch.full_like(p, 0.01)
    try:
        optimizer = make(params)
    except RuntimeError as error:  # a torch without fused CPU optimizers
        pytest.skip(str(error))
    optimizer.step()


@pytest.mark.parametrize("optimizer", sorted(FUSED))
@pytest.mark.parametrize("backend", ["mkl", "auto"])
def test_a_fused_optimizer_step_is_seen_by_every_cache(allennlp_dir, optimizer, backend):
    bilm = load_bilm(allennlp_dir)
    bilm.backend = backend
    bilm.enable_cache(1000)
    before = bilm.embed(SENTENCES)  # every cache filled: tokens, start state, prepared weights
    _step(FUSED[optimizer], bilm.parameters())
    after = bilm.embed(SENTENCES)
    fresh = load_bilm(allennlp_dir)
    fresh.backend = backend
    fresh.load_state_dict(bilm.state_dict())
    for got, want in zip(after, fresh.embed(SENTENCES)):
        numpy.testing.assert_array_equal(got, want)
    assert not numpy.array_equal(after[0], before[0])


def test_the_key_of_a_tensor_and_of_its_views_moves_with_a_fused_step():
    weight = torch.nn.Parameter(torch.ones(4, 3))
    view = weight[1:]
    key, view_key = WeightsKey([weight]), WeightsKey([view])
    _step(FUSED["Adam"], [weight])
    assert key != WeightsKey([weight]) and view_key != WeightsKey([view])


def test_a_step_of_another_model_leaves_the_biLM_caches(allennlp_dir):
    """The marks are per tensor: a downstream model trained over a frozen biLM does not empty its caches."""
    bilm = load_bilm(allennlp_dir)
    cache = bilm.enable_cache(1000)
    bilm.embed(SENTENCES)
    key, start, misses = weights_key(bilm), bilm._start[-1][1], cache.stats()["misses"]
    _step(FUSED["Adam"], torch.nn.Linear(3, 2).parameters())
    bilm.embed(SENTENCES)
    assert key == weights_key(bilm) and bilm._start[-1][1] is start and cache.stats()["misses"] == misses
