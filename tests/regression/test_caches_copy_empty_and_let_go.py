"""Regression: the caches were copied whole, raced a predicting thread, and kept replaced weights.

- `TokenCache` had no `__reduce__`: pickle and deepcopy walked its OrderedDicts without its lock, so
  `pickle.dumps(nlp)` or `copy.deepcopy(bilm)` beside a thread predicting with the model failed with
  "OrderedDict mutated during iteration" (218 of 284 tries in the review), and a pickle carried every
  entry (39 MB for 50,000 words) that the copy discards at its first call (the weights' key matches
  nothing there). It now copies as an empty cache of the same bounds and preloaded words, reading
  those under its lock.
- `DocCache` had a `__deepcopy__` but no `__reduce__`: a pickled pipeline (each spawned `nlp.pipe`
  worker's) carried up to `doc_cache_bytes` of layers that can never be served.
- `DocCache.clear()` kept the weights' key, which holds the weight tensors, and `from_bytes` /
  `from_disk` did not clear it: a replaced biLM stayed in memory with its layers until the next
  training batch, which a process that only predicts never runs.
- A suspended `embed_batches` generator collected in a reference cycle with its model printed
  "Exception ignored ... KeyError" (the weak key was gone before its `finally` ran).
"""
import copy
import gc
import pickle
import sys
import weakref

import torch

from spacy_elmo.bilm.engine.token_cache import TokenCache
from spacy_elmo.layers.bilm_model import model_shim
from spacy_elmo.layers.doc_cache import DocCache
from spacy_elmo.layers.loaders import read_weights
from tests.conftest import tagger_pipeline

WORDS = [f"word{i}" for i in range(200)]


def test_a_token_cache_copies_as_an_empty_one_of_the_same_settings():
    cache = TokenCache(max_size=300, learn=True, max_bytes=10**6)
    cache.pin(["<pinned>"], torch.ones(1, 4))
    cache.add(WORDS, torch.randn(len(WORDS), 4))
    assert len(cache) == 201
    for copied in (pickle.loads(pickle.dumps(cache)), copy.deepcopy(cache)):
        assert len(copied) == 0 and copied.nbytes == 0
        assert (copied.max_size, copied.learn, copied.max_bytes) == (300, True, 10**6)
        copied.add(["<pinned>"] + ["x" * 2000], torch.zeros(2, 4))  # preloaded words stay preloaded
        assert "<pinned>" in copied.current.pinned and "x" * 2000 not in copied
    assert len(cache) == 201  # the original keeps its entries


def test_a_doc_cache_copies_empty_and_clear_lets_go_of_the_weights():
    cache = DocCache(1000)
    cache.bind(("weights",))
    cache.put(("doc",), torch.zeros(10).numpy())
    for copied in (pickle.loads(pickle.dumps(cache)), copy.deepcopy(cache)):
        assert len(copied) == 0 and copied.max_bytes == 1000 and copied._weights is None
    cache.clear()
    assert len(cache) == 0 and cache._weights is None


def test_a_pickled_pipeline_carries_no_cached_layers_or_vectors(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    nlp.update(examples, sgd=optimizer)  # the frozen biLM keeps the docs' layers
    elmo = nlp.get_pipe("elmo")
    assert len(elmo.model.attrs["doc_cache"]) > 0 and len(elmo.bilm.token_cache) > 0
    copied = pickle.loads(pickle.dumps(nlp)).get_pipe("elmo")
    assert len(copied.model.attrs["doc_cache"]) == 0 and len(copied.bilm.token_cache) == 0
    doc = nlp("the cat sat")
    assert (pickle.loads(pickle.dumps(nlp))("the cat sat")._.elmo == doc._.elmo).all()


def test_from_bytes_lets_go_of_the_replaced_biLM(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    nlp.update(examples, sgd=optimizer)
    elmo = nlp.get_pipe("elmo")
    old = weakref.ref(next(elmo.bilm.parameters()))
    nlp.from_bytes(nlp.to_bytes())
    gc.collect()
    assert len(elmo.model.attrs["doc_cache"]) == 0 and old() is None


def test_a_suspended_generator_collected_with_its_model_raises_nothing(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    bilm = read_weights().bilm
    bilm.pending = bilm.embed_batches([["a", "b"], ["c"]] * 3, batch_tokens=8)  # model -> generator -> model
    next(bilm.pending)
    del bilm
    gc.collect()
    assert unraisable == []


def test_a_standalone_biLM_replaced_by_from_bytes_is_let_go_at_the_next_prediction(allennlp_dir):
    """Second look: a component with its own biLM (replace_listeners) kept the replaced biLM through its
    doc cache's key; only the elmo component cleared it."""
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    nlp.update(examples, sgd=optimizer)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.remove_pipe("elmo")
    tagger = nlp.get_pipe("tagger")
    nlp.update(examples, sgd=optimizer)
    bilm_model = next(node for node in tagger.model.walk() if "doc_cache" in node.attrs)
    assert len(bilm_model.attrs["doc_cache"]) > 0
    old = weakref.ref(next(model_shim(bilm_model).bilm.parameters()))
    tagger.from_bytes(tagger.to_bytes())
    nlp("the cat sat")
    gc.collect()
    assert len(bilm_model.attrs["doc_cache"]) == 0 and old() is None
