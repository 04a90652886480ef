"""`paths.init_from`: a run continues a model (its weights, its softmax, where it came from) with a fresh
optimizer; a model without a softmax, a directory that is not a model, the embedded biLM."""
import dataclasses

import pytest
import torch

from spacy_elmo.io import load_model
from spacy_elmo.pretrain import SettingsError, load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint

from .runs import _config


def test_init_from_continues_a_model_with_a_fresh_optimizer(tiny_config_path, small_corpus, tmp_path):
    """--init-from: the new run starts from the model's weights (and softmax), not from random ones."""
    common = dict(paths__train=str(small_corpus), paths__dev=str(small_corpus), training__eval_every=1000,
                  training__checkpoint_every=1000)
    first = pretrain(_config(tiny_config_path, training__max_steps=40, **common), tmp_path / "first", progress=False)
    start = load_model(tmp_path / "first" / "model-last")
    # the architecture comes from the model, whatever the config says
    second_cfg = _config(tiny_config_path, paths__init_from=str(tmp_path / "first" / "model-last"),
                         training__max_steps=1, training__learning_rate=1e-9, model__lstm_dim=48, **common)
    second = pretrain(second_cfg, tmp_path / "second", progress=False)
    assert second["step"] == 1
    # one step at a vanishing learning rate: the weights and the perplexity are the start model's
    assert abs(second["dev"]["mean"] - first["dev"]["mean"]) < 1e-3 * first["dev"]["mean"]
    continued = load_model(tmp_path / "second" / "model-last")
    assert continued.bilm.config == start.bilm.config
    for name, tensor in start.bilm.state_dict().items():
        torch.testing.assert_close(continued.bilm.state_dict()[name], tensor, rtol=0, atol=1e-6)
    meta = continued.metadata
    assert meta["init_from"] == str(tmp_path / "first" / "model-last")
    assert meta["continued_from"]["tokens_seen"] == first["tokens"]
    # the optimizer is fresh: the checkpoint's Adam state has seen one step only
    state = load_checkpoint(tmp_path / "second" / "checkpoint.pt")
    assert all(s["step"] == 1 for s in state["optimizer"]["state"].values())


def test_init_from_a_model_without_softmax_starts_from_unigram_bias(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.io.native import save_native

    pretrain(_config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=20,
                     training__eval_every=1000), tmp_path / "first", progress=False)
    start = load_model(tmp_path / "first" / "model-last")
    save_native(tmp_path / "bare", start.bilm, metadata={"tokens_seen": 123})  # as the shipped model: no softmax
    fresh = pretrain(_config(tiny_config_path, paths__train=str(small_corpus), paths__dev=str(small_corpus),
                             training__max_steps=1, training__learning_rate=1e-9, training__eval_every=1000),
                     tmp_path / "fresh", progress=False)
    warm = pretrain(_config(tiny_config_path, paths__train=str(small_corpus), paths__dev=str(small_corpus),
                            paths__init_from=str(tmp_path / "bare"), training__max_steps=1,
                            training__learning_rate=1e-9, training__eval_every=1000), tmp_path / "warm", progress=False)
    # a trained biLM with a frequency-initialised softmax already beats a random model
    assert warm["dev"]["mean"] < 0.5 * fresh["dev"]["mean"]
    assert load_model(tmp_path / "warm" / "model-last").metadata["continued_from"]["tokens_seen"] == 123


def test_init_from_rejects_a_directory_that_is_not_a_native_model(tiny_config_path, small_corpus, tmp_path):
    config = _config(tiny_config_path, paths__train=str(small_corpus), paths__init_from=str(tmp_path))
    with pytest.raises(SettingsError, match="not a native spacy-elmo model"):
        pretrain(config, tmp_path / "run", progress=False)


def test_init_from_embedded_loads_the_shipped_biLM(small_corpus, tmp_path):
    from spacy_elmo.resources import default_model_path

    config = load_config(None, {"paths.train": str(small_corpus), "paths.init_from": "embedded",
                                "training.max_steps": 1, "training.learning_rate": 1e-9, "softmax.kind": "full",
                                "vocab.max_size": 2000, "training.threads": 1})
    pretrain(config, tmp_path / "run", progress=False)
    shipped = load_model(default_model_path())
    continued = load_model(tmp_path / "run" / "model-last")
    # the architecture is the shipped model's; word_table_trainable, a training setting, is the config's
    # (the shipped table was fine-tuned; a run that does not ask for it keeps the table frozen)
    assert shipped.bilm.config.word_table_trainable and not continued.bilm.config.word_table_trainable
    assert continued.bilm.config == dataclasses.replace(shipped.bilm.config, word_table_trainable=False)
    name = "lstm.weight_hh.1"
    torch.testing.assert_close(continued.bilm.state_dict()[name], shipped.bilm.state_dict()[name], rtol=0, atol=1e-6)


def test_a_widened_model_continues_where_the_narrow_one_stopped(tiny_config_path, small_corpus, tmp_path):
    """scripts/widen_bilm.py, then --init-from: the wider run starts at the narrow model's perplexity
    (its softmax widened too), its config takes the new projection_dim, and the script refuses to
    overwrite a model or to narrow one."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "widen_bilm.py"
    common = dict(paths__train=str(small_corpus), paths__dev=str(small_corpus), training__eval_every=1000,
                  training__checkpoint_every=1000)
    first = pretrain(_config(tiny_config_path, training__max_steps=20, **common), tmp_path / "first", progress=False)
    widen = [sys.executable, str(script), str(tmp_path / "first" / "model-last"), str(tmp_path / "wide")]
    done = subprocess.run(widen + ["--projection-dim", "40"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    wide = load_model(tmp_path / "wide")
    assert wide.bilm.config.projection_dim == 40 and wide.head.dim == 40
    assert wide.metadata["widened_from"]["projection_dim"] == 32
    second = pretrain(_config(tiny_config_path, paths__init_from=str(tmp_path / "wide"), training__max_steps=1,
                              training__learning_rate=1e-9, **common), tmp_path / "second", progress=False)
    assert abs(second["dev"]["mean"] - first["dev"]["mean"]) < 1e-3 * first["dev"]["mean"]
    assert load_config(tmp_path / "second" / "config.cfg")["model"]["projection_dim"] == 40
    continued = load_model(tmp_path / "second" / "model-last").metadata["continued_from"]
    assert continued["widened_from"]["projection_dim"] == 32
    again = subprocess.run(widen + ["--projection-dim", "64"], capture_output=True, text=True)
    assert again.returncode == 1 and "not empty" in again.stdout + again.stderr
    narrower = subprocess.run(widen[:-1] + [str(tmp_path / "narrow"), "--projection-dim", "16"],
                              capture_output=True, text=True)
    assert narrower.returncode == 1 and "must be larger" in narrower.stdout + narrower.stderr
