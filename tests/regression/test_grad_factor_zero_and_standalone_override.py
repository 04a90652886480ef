"""Regression: `grad_factor = 0` still changed the biLM, and a standalone's `frozen` override was ignored.

- With every listener at `grad_factor = 0`, the biLM still ran its backward
  pass on zeros, and its parameters then held zero gradients that the
  optimizer's weight decay acted on: the weights moved, though the listener
  docs say 0 keeps the task from fine-tuning the biLM. A batch whose
  gradients are all zero now skips the backward pass, and the shim drops
  gradients after each step (torch's set_to_none), so nothing moves.
- `spacy.load(path, config={... "frozen": false})` on a pipeline whose
  tagger owns its biLM (after `replace_listeners`) showed frozen = false in
  `nlp.config` while the saved attr kept the biLM frozen. The config decides
  now (`layers/config_value.py`).
"""
import spacy
import torch

from spacy_elmo.layers.bilm_model import get_bilm

from ..conftest import tagger_pipeline

LISTENER = {"@architectures": "spacy-elmo.ElmoListener.v1", "grad_factor": 0.0}


def _snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def _moved(module, before):
    return any(not torch.equal(p.detach(), b) for p, b in zip(module.parameters(), before))


def test_grad_factor_zero_leaves_the_bilm_untouched(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=LISTENER, frozen=False)
    assert optimizer.L2 > 0  # spaCy's default Adam decays weights: the case that moved them
    bilm = nlp.get_pipe("elmo").bilm
    before = _snapshot(bilm)
    tagger = nlp.get_pipe("tagger").model
    tagger_before = [node.get_param("W").copy() for node in tagger.walk() if node.has_param("W")]
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert not _moved(bilm, before)
    tagger_after = [node.get_param("W") for node in tagger.walk() if node.has_param("W")]
    assert any((a != b).any() for a, b in zip(tagger_after, tagger_before))  # the task layers did learn


def test_grad_factor_one_still_fine_tunes(allennlp_dir):
    listener = dict(LISTENER, grad_factor=1.0)
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=listener, frozen=False)
    bilm = nlp.get_pipe("elmo").bilm
    before = _snapshot(bilm)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert _moved(bilm, before)


def test_a_frozen_override_of_a_standalone_biLM_is_what_trains(allennlp_dir, tmp_path):
    nlp, examples, _ = tagger_pipeline(allennlp_dir)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.remove_pipe("elmo")
    nlp.to_disk(tmp_path / "pipeline")
    override = {"components": {"tagger": {"model": {"tok2vec": {"frozen": False}}}}}
    for config, trains in ((override, True), ({}, False)):
        loaded = spacy.load(tmp_path / "pipeline", config=config)
        assert loaded.config["components"]["tagger"]["model"]["tok2vec"]["frozen"] is (not trains)
        bilm_model = loaded.get_pipe("tagger").model.get_ref("tok2vec").layers[0]
        assert bool(bilm_model.attrs["frozen"]) is (not trains)
        module = get_bilm(bilm_model)
        before = _snapshot(module)
        optimizer = loaded.resume_training()
        for _ in range(3):
            loaded.update([type(e)(loaded.make_doc(e.reference.text), e.reference) for e in examples], sgd=optimizer)
        assert _moved(module, before) is trains
