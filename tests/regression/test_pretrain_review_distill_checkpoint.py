"""Regression: a distillation checkpoint held the whole language model twice.

`DistilledLM` registers the language model as its submodule `lm`, so its `state_dict()`,
saved as the checkpoint's "distill", repeated every tensor of "model" under "lm.". The
checkpoint now keeps the distillation's own parameters alone there, and loads them so;
a checkpoint written the old way (with the "lm." copies) still resumes, to the same weights."""
import shutil

import numpy
import pytest
import torch

from spacy_elmo.pretrain import Interrupted, load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint, save_checkpoint


def _config(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.pretrain.word_table import write_word_table

    words = ["the", "of", "and", "a", "to", "in", ",", "."]  # a word table teacher: no transformers needed
    write_word_table(tmp_path / "table", words, numpy.random.default_rng(0).normal(size=(8, 5)), dtype="float32")
    return load_config(tiny_config_path, {
        "paths.train": str(small_corpus), "training.max_steps": 4, "training.eval_every": 1000,
        "training.checkpoint_every": 1000, "training.threads": 1,
        "training.distill.teacher": str(tmp_path / "table"), "training.distill.layer": "token",
    })


def test_the_checkpoint_keeps_the_map_alone_and_old_checkpoints_resume(tiny_config_path, small_corpus, tmp_path,
                                                                       inject, monkeypatch):
    config = _config(tiny_config_path, small_corpus, tmp_path)
    pretrain(config, tmp_path / "whole", progress=False)
    inject("pretrain.step:2:int")
    with pytest.raises(Interrupted):
        pretrain(config, tmp_path / "new", progress=False)
    monkeypatch.delenv("SPACY_ELMO_FAULT")
    state = load_checkpoint(tmp_path / "new" / "checkpoint.pt")
    assert state["progress"]["step"] == 2
    assert sorted(state["distill"]) == ["map.bias", "map.weight"]  # no "lm." copies of "model"

    # the same checkpoint as the old code wrote it: the language model repeated under "lm."
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    old = dict(state, distill={**{f"lm.{k}": v.clone() for k, v in state["model"].items()}, **state["distill"]})
    save_checkpoint(tmp_path / "old" / "checkpoint.pt", old)

    for name in ("new", "old"):
        assert pretrain(config, tmp_path / name, resume=True, progress=False)["step"] == 4
    whole = load_checkpoint(tmp_path / "whole" / "checkpoint.pt")
    for name in ("new", "old"):
        resumed = load_checkpoint(tmp_path / name / "checkpoint.pt")
        assert sorted(resumed["distill"]) == ["map.bias", "map.weight"]
        for part in ("model", "distill"):
            assert resumed[part].keys() == whole[part].keys()
            for key, tensor in whole[part].items():
                torch.testing.assert_close(resumed[part][key], tensor, rtol=0, atol=0, msg=f"{name} {part} {key}")
