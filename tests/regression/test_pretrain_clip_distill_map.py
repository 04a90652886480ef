"""Regression: gradient clipping left out the distillation map.

The optimizer trains the language model and the [training.distill] map, but
`clip_grad_norm_` was given the language model's parameters alone, so the map's
gradients were never clipped and the global norm of what was trained exceeded
grad_clip. All trained parameters are clipped together now; without distillation
the clipped set (the LM's) is exactly what it was."""
import torch

from spacy_elmo.bilm.language_model import sentence_batch

from tests.pretrain.runs import _trainer


def _table(tmp_path):
    """A word table teacher (no transformers needed): a 5-d random table of frequent words."""
    import numpy

    from spacy_elmo.pretrain.word_table import write_word_table

    words = ["the", "of", "and", "a", "to", "in", ",", "."]
    write_word_table(tmp_path / "table", words, numpy.random.default_rng(0).normal(size=(8, 5)) * 10,
                     dtype="float32")
    return tmp_path / "table"


def _norm(parameters):
    return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters if p.grad is not None])))


def test_the_distillation_maps_gradients_are_clipped_with_the_lms(tiny_config_path, small_corpus, tmp_path):
    clip = 1e-3
    trainer = _trainer(tiny_config_path, [small_corpus], tmp_path / "run", **{
        "training.grad_clip": clip, "training.distill.teacher": str(_table(tmp_path)),
        "training.distill.weight": 10.0,
    })
    assert trainer.distilled is not None
    sentences = [s for _, s in zip(range(12), trainer.train_corpus.segments())]
    trainer._step([sentence_batch(sentences, trainer.vocab)])
    map_params = [p for name, p in trainer.distilled.named_parameters() if not name.startswith("lm.")]
    assert map_params and _norm(map_params) > 0
    # the gradients stay as clipped after the optimizer's step: every trained parameter within the clip
    assert _norm(trainer.distilled.parameters()) <= clip * (1 + 1e-4)


def test_without_distillation_the_lms_parameters_are_clipped(tiny_config_path, small_corpus, tmp_path):
    trainer = _trainer(tiny_config_path, [small_corpus], tmp_path / "run", **{"training.grad_clip": 1e-3})
    assert trainer.distilled is None and trainer.trained is trainer.lm
    sentences = [s for _, s in zip(range(12), trainer.train_corpus.segments())]
    trainer._step([sentence_batch(sentences, trainer.vocab)])
    assert _norm(trainer.lm.parameters()) <= 1e-3 * (1 + 1e-4)
