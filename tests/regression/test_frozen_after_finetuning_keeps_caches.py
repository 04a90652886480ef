"""Regression: a biLM fine-tuned, then frozen in the same process, lost its caches on every call.

thinc's shim leaves a fine-tuned biLM in torch's train mode. `embed_batches` switched it to eval
mode to embed and then back through `BiLM.train(True)`, which clears the token cache and moves
`cache_generation` on (weights are about to change): so each frozen epoch embedded every sentence
again (3, 3, 3 sentences over three epochs of the same docs, where a biLM frozen from the start
embeds 3, 0, 0), and the token cache was empty after each prediction. Embedding changes no weights,
so the mode is now put back without clearing; a weight change still invalidates the caches.
"""
import pytest
import torch

from spacy_elmo.bilm.model import BiLM

from ..conftest import tagger_pipeline


@pytest.fixture
def embedded_sentences(monkeypatch):
    counts = []
    real = BiLM.embed_batches

    def counting(self, sentences, *args, **kwargs):
        counts[-1] += len(sentences)
        return real(self, sentences, *args, **kwargs)

    monkeypatch.setattr(BiLM, "embed_batches", counting)
    return counts


def test_frozen_epochs_after_finetuning_reuse_the_doc_cache(allennlp_dir, embedded_sentences):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=False)
    nlp.update(examples, sgd=optimizer)
    elmo = nlp.get_pipe("elmo")
    elmo.frozen = True
    for _ in range(3):
        embedded_sentences.append(0)
        nlp.update(examples, sgd=optimizer)
    assert embedded_sentences == [len(examples), 0, 0]


def test_a_prediction_keeps_the_token_cache_and_a_weight_change_still_counts(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=False)
    nlp.update(examples, sgd=optimizer)
    elmo = nlp.get_pipe("elmo")
    elmo.frozen = True
    before = nlp("the dog sat in the south")._.elmo.copy()
    assert elmo.bilm.token_cache is not None and len(elmo.bilm.token_cache) > 0
    with torch.no_grad():
        next(elmo.bilm.parameters()).add_(0.5)
    assert not (nlp("the dog sat in the south")._.elmo == before).all()
