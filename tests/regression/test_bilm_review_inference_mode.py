"""Regression: a model loaded inside `torch.inference_mode()` could not embed, now it embeds with the usual bits.

The caches' key read every weight's `_version`, which inference tensors do
not have ("Inference tensors do not track version counter"), so a server
that loads its model lazily in an inference-mode handler failed on its first
request. An inference tensor's version now reads as a constant: outside
inference mode it cannot be modified in place, so no change is missed.
"""
import numpy
import torch

from spacy_elmo.bilm.engine.weights_key import weights_key
from spacy_elmo.io import load_bilm

SENTENCES = [["Hello", "world"], ["The", "bank", "of", "the", "river", "."]]


def test_a_model_loaded_in_inference_mode_embeds(allennlp_dir):
    want = load_bilm(allennlp_dir).embed(SENTENCES)
    with torch.inference_mode():
        bilm = load_bilm(allennlp_dir)
        assert next(bilm.parameters()).is_inference()
        bilm.enable_cache(100)
        inside = bilm.embed(SENTENCES)
        again = bilm.embed(SENTENCES)  # through the token cache and the kept start state
    outside = bilm.embed(SENTENCES)
    for expected, *got in zip(want, inside, again, outside):
        for array in got:
            numpy.testing.assert_array_equal(array, expected)


def test_the_key_of_inference_tensors_still_follows_identity_and_context():
    with torch.inference_mode():
        layer = torch.nn.Linear(3, 3)
    key = weights_key(layer)
    assert key == weights_key(layer) and key != weights_key(layer, "bfloat16")
    layer.weight = torch.nn.Parameter(torch.zeros(3, 3))
    assert key != weights_key(layer)  # another tensor
