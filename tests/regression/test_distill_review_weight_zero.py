"""`[training.distill] weight = 0` must train exactly what the run without a teacher trains.

The bug: `build_distillation` drew from torch's global generator (the Hugging Face
teacher initialises its weights before loading them, and the map is initialised
randomly), and the LM's dropout draws from that same generator. With dropout on,
a run with a teacher at weight 0 therefore dropped other units than the run
without one, and ended with other weights. Building the distillation now happens
under a forked RNG.
"""
import numpy
import pytest
import torch

from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.word_table import write_word_table


def _weights(config_path, corpus, out, **extra):
    settings = {"paths.train": str(corpus), "training.max_steps": 2, "training.eval_every": 2,
                "training.checkpoint_every": 2, "training.threads": 1, "model.dropout": 0.3,
                "training.mode": "sentences", **extra}
    pretrain(load_config(config_path, settings), out, progress=False)
    return torch.load(out / "checkpoint.pt", weights_only=False)["model"]


def _assert_same(plain, distilled):
    assert plain.keys() == distilled.keys()
    different = [name for name in plain if not torch.equal(plain[name], distilled[name])]
    assert not different, f"weight = 0 changed {different[:3]}"


@pytest.fixture
def tiny_run(tiny_config_path, small_corpus, tmp_path):
    return lambda name, **extra: _weights(tiny_config_path, small_corpus, tmp_path / name, **extra)


def test_a_transformer_teacher_at_weight_zero_changes_nothing(tiny_run, teacher_dir):
    plain = tiny_run("plain")
    distilled = tiny_run("teacher", **{"training.distill.teacher": str(teacher_dir), "training.distill.weight": 0.0})
    _assert_same(plain, distilled)


def test_a_word_table_teacher_at_weight_zero_changes_nothing(tiny_run, tmp_path):
    words = ["the", "of", "and", "to", "in", "a"]
    table = tmp_path / "table"
    write_word_table(table, words, numpy.random.default_rng(0).normal(size=(len(words), 8)))
    plain = tiny_run("plain")
    distilled = tiny_run("table", **{"training.distill.teacher": str(table), "training.distill.weight": 0.0})
    _assert_same(plain, distilled)


def test_with_grad_clip_weight_zero_changes_nothing(tiny_run, teacher_dir):
    """grad_clip measured the norm over the map's gradients too: zeros at weight 0, yet two more tensors
    in the sum changed its rounding (1.0069928 against 1.0069927), and the weights ended 1e-6 apart.
    At weight 0 the norm is now the LM's alone."""
    clip = {"training.grad_clip": 0.5, "softmax.kind": "sampled", "softmax.n_samples": 64}
    plain = tiny_run("plain", **clip)
    distilled = tiny_run("teacher", **clip, **{"training.distill.teacher": str(teacher_dir),
                                               "training.distill.weight": 0.0})
    _assert_same(plain, distilled)
