"""Regression: words pinned in training mode kept training-mode bits in eval mode, now they are eval-mode bits.

`b.train(); b.enable_cache(0, words=[...]); b.eval()` computed the pinned
words through the training path (autograd's products, not the engine's), and
eval mode then served them: layers off by 1.67e-6 from the uncached model.
The words are now computed in eval mode, and the biLM's mode is restored.
"""
import numpy
import torch

from spacy_elmo.io import load_bilm

SENTENCES = [["The", "bank", "of", "the", "river", "."]]


def test_words_pinned_in_training_mode_are_the_eval_mode_vectors():
    want = load_bilm().embed(SENTENCES)  # the embedded English model (with a word table)
    bilm = load_bilm()
    bilm.train()
    cache = bilm.enable_cache(0, words=["The", "bank", "river"])
    assert bilm.training and all(m.training for m in bilm.modules())  # the mode is restored
    assert "bank" in cache
    bilm.eval()
    got = bilm.embed(SENTENCES)
    for a, b in zip(got, want):
        numpy.testing.assert_array_equal(a, b)
    assert cache.stats()["hits"] == 3


def test_enable_cache_in_eval_mode_is_unchanged(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    cache = bilm.enable_cache(0, words=["bank"])
    assert not bilm.training
    with torch.no_grad():
        got = bilm.encode_tokens(["bank"])
    with torch.no_grad():
        assert torch.equal(got, load_bilm(allennlp_dir).encode_tokens(["bank"]))
    assert cache.stats()["hits"] == 1
