"""Regression: cached values outlived the weights they were computed from.

The token cache was emptied only by `train(True)`, while the LSTM start state
and the packed inference weights were keyed on parameter versions: after
`load_state_dict` with the token cache on, the layers differed from a fresh
model with the new weights by 4.45. Every cache is now checked on every call
against one key (`spacy_elmo/bilm/engine/weights_key.py`).
"""
import copy
import pickle

import numpy
import pytest
import spacy
import torch

from spacy_elmo.io import load_bilm

SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["A", "bank", "of", "the", "river"]]


def _fresh_embed(allennlp_dir, state):
    """The layers of a new, never-cached model holding `state`."""
    fresh = load_bilm(allennlp_dir)
    fresh.load_state_dict(state)
    return fresh.embed(SENTENCES)


def _assert_same(got, expected):
    for a, b in zip(got, expected):
        numpy.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


@pytest.fixture
def cached_bilm(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    bilm.enable_cache(1000, words=["the"])
    bilm.embed(SENTENCES)  # every cache filled: tokens, start state, packed weights
    return bilm


def test_load_state_dict_with_the_token_cache(cached_bilm, allennlp_dir):
    other = load_bilm(allennlp_dir)
    other.reset_parameters(seed=3)
    cached_bilm.load_state_dict(other.state_dict())
    _assert_same(cached_bilm.embed(SENTENCES), other.embed(SENTENCES))


def test_in_place_edit_of_every_weight(cached_bilm, allennlp_dir):
    with torch.no_grad():
        for p in cached_bilm.parameters():
            p.mul_(0.9)
    _assert_same(cached_bilm.embed(SENTENCES), _fresh_embed(allennlp_dir, cached_bilm.state_dict()))


def test_in_place_edit_of_the_token_encoder_only(cached_bilm, allennlp_dir):
    with torch.no_grad():
        next(cached_bilm.token_encoder.parameters()).add_(0.05)
    _assert_same(cached_bilm.embed(SENTENCES), _fresh_embed(allennlp_dir, cached_bilm.state_dict()))


def test_fine_tuning_without_dropout_then_inference(cached_bilm, allennlp_dir):
    """An optimizer step in training mode with the LSTM's dropout off, then inference.
    (Eval mode computes without autograd: training needs train().)"""
    cached_bilm.lstm.dropout = 0.0
    cached_bilm.train()
    optimizer = torch.optim.SGD(cached_bilm.parameters(), lr=0.5)
    loss = cached_bilm(SENTENCES).layers.pow(2).sum()
    loss.backward()
    optimizer.step()
    cached_bilm.eval()
    _assert_same(cached_bilm.embed(SENTENCES), _fresh_embed(allennlp_dir, cached_bilm.state_dict()))


def test_fine_tuning_in_train_mode_then_inference(cached_bilm, allennlp_dir):
    cached_bilm.train()
    optimizer = torch.optim.Adam(cached_bilm.parameters(), lr=0.01)
    cached_bilm(SENTENCES).layers.sum().backward()
    optimizer.step()
    cached_bilm.eval()
    _assert_same(cached_bilm.embed(SENTENCES), _fresh_embed(allennlp_dir, cached_bilm.state_dict()))


def test_replaced_parameter_tensor(cached_bilm, allennlp_dir):
    """New tensors (load_state_dict(assign=True)) are new weights, whatever their address."""
    other = load_bilm(allennlp_dir)
    other.reset_parameters(seed=5)
    cached_bilm.load_state_dict({k: v.clone() for k, v in other.state_dict().items()}, assign=True)
    _assert_same(cached_bilm.embed(SENTENCES), other.embed(SENTENCES))


def test_from_disk_into_a_used_pipeline(allennlp_dir, tmp_path):
    texts = ["The cat sat on the mat .", "A bank of the river"]
    changed = spacy.blank("en")
    changed.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    changed("warm up")
    with torch.no_grad():
        for p in changed.get_pipe("elmo").bilm.parameters():
            p.mul_(1.1)
    expected = [changed(t)._.elmo for t in texts]
    changed.to_disk(tmp_path / "changed")

    used = spacy.blank("en")
    used.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    before = [used(t)._.elmo for t in texts]  # fills every cache with the original weights
    used.from_disk(tmp_path / "changed")
    after = [used(t)._.elmo for t in texts]
    assert max(float(numpy.abs(a - b).max()) for a, b in zip(before, expected)) > 1e-3
    _assert_same(after, expected)


def test_token_cache_keeps_copies_not_views_of_the_batch(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    cache = bilm.enable_cache(1000)
    with torch.no_grad():
        bilm.encode_tokens([f"word{i}" for i in range(50)])
    row_bytes = bilm.config.projection_dim * 4
    for token in ("word0", "word49"):
        _, (vector,), _ = cache.lookup([token])
        assert vector.untyped_storage().nbytes() == row_bytes  # its own storage, one row
    assert cache.nbytes == 50 * row_bytes


def test_token_cache_bounded_in_bytes(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    row_bytes = bilm.config.projection_dim * 4
    cache = bilm.enable_cache(1000, max_bytes=10 * row_bytes)
    with torch.no_grad():
        bilm.encode_tokens([f"word{i}" for i in range(50)])
    assert len(cache) == 10 and cache.nbytes == 10 * row_bytes and "word49" in cache


def test_preloaded_words_recomputed_after_a_weight_change(cached_bilm, allennlp_dir):
    cache = cached_bilm.token_cache
    assert "the" in cache
    with torch.no_grad():
        next(cached_bilm.token_encoder.parameters()).add_(0.05)
    with torch.no_grad():
        out = cached_bilm.encode_tokens(["the"])
    fresh = load_bilm(allennlp_dir)
    fresh.load_state_dict(cached_bilm.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(out[2], fresh.encode_tokens(["the"])[2], atol=1e-6, rtol=0)
    assert "the" in cache  # still preloaded


def test_weights_key_identity_version_and_context():
    from spacy_elmo.bilm.engine.weights_key import WeightsKey, weights_key

    a = torch.nn.Linear(3, 3)
    key = weights_key(a)
    assert key == weights_key(a)
    assert key != weights_key(a, "float16")
    with torch.no_grad():
        a.weight.add_(0)
    assert key != weights_key(a)  # version bumped
    key = weights_key(a)
    a.weight = torch.nn.Parameter(a.weight.detach().clone())
    assert key != weights_key(a)  # another tensor
    assert pickle.loads(pickle.dumps(key)) != key and copy.deepcopy(key) != key
    assert WeightsKey([]) == WeightsKey([])


def test_doc_cache_of_frozen_training_follows_the_weights(allennlp_dir):
    """The per-doc layers kept between epochs are dropped when the biLM's weights change."""
    from spacy.tokens import Doc

    from spacy_elmo.layers.bilm_model import predict_layers

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    model = nlp.get_pipe("elmo").model
    bilm = nlp.get_pipe("elmo").bilm
    docs = [Doc(nlp.vocab, words=s) for s in SENTENCES]
    before = predict_layers(model, bilm, docs, use_doc_cache=True)
    assert len(model.attrs["doc_cache"]) == len(docs)
    with torch.no_grad():
        bilm.lstm.weight_hh[0].mul_(1.5)  # fine-tuning, or any in-place change
    after = predict_layers(model, bilm, docs, use_doc_cache=True)
    expected = predict_layers(model, bilm, docs, use_doc_cache=False)
    assert max(float(numpy.abs(a - b).max()) for a, b in zip(before, expected)) > 1e-3
    _assert_same(after, expected)
