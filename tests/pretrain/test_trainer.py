"""Pretraining's trainer: the reference's own check, resume exactness, interruption, gradient accumulation,
the softmax warm-up, and its model in the component."""
import json
import os
import subprocess
import sys

import pytest
import torch

from spacy_elmo.bilm.language_model import sentence_batch
from spacy_elmo.io import load_model
from spacy_elmo.pretrain import Interrupted, SettingsError, TokenizedCorpus, Trainer, load_config, pretrain

from .runs import _config, _overrides, _trainer


def test_reference_check_tiny_biLM_reaches_low_perplexity(tiny_config_path, bilm_tf_dir, tmp_path):
    """bilm-tf's own test: on its tiny corpus and vocabulary, test perplexity < 20."""
    data = bilm_tf_dir / "train" / "data.txt"
    config = _config(
        tiny_config_path,
        paths__train=str(data),
        paths__dev=str(data),
        paths__vocab=str(bilm_tf_dir / "train" / "vocab.txt"),
        training__max_epochs=50,
    )
    result = pretrain(config, tmp_path / "run", progress=False)
    assert result["dev"]["mean"] < 20
    lm = load_model(tmp_path / "run" / "model-best").language_model()
    sentences = [line.split() for line in data.read_text().splitlines() if line.strip()]
    assert lm.perplexity(sentences)["mean"] < 20
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log and all("dev_mean" in row for row in log)
    assert (tmp_path / "run" / "perplexity.png").stat().st_size > 1000


def _weights(run_dir):
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    return state["model"], state["progress"]["step"]


@pytest.mark.parametrize("mode", ["sentences", "stream"])
def test_resumed_run_reaches_the_same_weights(tiny_config_path, small_corpus, tmp_path, mode):
    common = dict(paths__train=str(small_corpus), training__mode=mode,
                  training__max_epochs=3 if mode == "sentences" else 1,
                  training__checkpoint_every=2, training__eval_every=100, training__batch_size=16,
                  training__unroll_steps=8, model__dropout=0.1, softmax__kind="sampled", softmax__n_samples=64)
    full = pretrain(_config(tiny_config_path, **common), tmp_path / "full", progress=False)
    total = full["step"]
    assert total >= 6
    first = pretrain(_config(tiny_config_path, training__max_steps=total // 2, **common), tmp_path / "resumed",
                     progress=False)
    assert first["step"] == total // 2
    pretrain(_config(tiny_config_path, **common), tmp_path / "resumed", resume=True, progress=False)
    a, step_a = _weights(tmp_path / "full")
    b, step_b = _weights(tmp_path / "resumed")
    assert step_a == step_b == total
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


def test_sigterm_leaves_a_usable_checkpoint_and_resume_matches(tiny_config_path, small_corpus, tmp_path):
    """SIGTERM at step 5 (the process signals itself there: spacy_elmo/faults.py)."""
    from spacy_elmo.faults import VARIABLE

    args = [
        sys.executable, "-m", "spacy_elmo", "pretrain", str(tiny_config_path), "OUT", "--quiet",
        "--paths.train", str(small_corpus), "--training.max_steps", "12", "--training.checkpoint_every", "3",
        "--training.eval_every", "1000", "--softmax.kind", "sampled", "--softmax.n_samples", "64",
    ]
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["OMP_NUM_THREADS"] = "1"
    reference = subprocess.run([a.replace("OUT", str(tmp_path / "ref")) for a in args], env=env, capture_output=True,
                               text=True)
    assert reference.returncode == 0, reference.stderr
    run = tmp_path / "run"
    proc = subprocess.run([a.replace("OUT", str(run)) for a in args], env={**env, VARIABLE: "pretrain.step:5:term"},
                          capture_output=True, text=True)
    assert proc.returncode == 143, proc.stderr  # SIGTERM: 128 + 15
    assert "resume" in proc.stderr + proc.stdout
    interrupted_at = torch.load(run / "checkpoint.pt", weights_only=True)["progress"]["step"]
    assert interrupted_at == 5  # the checkpoint is written at the signal, not at the interval
    assert (run / "model-last" / "bilm.safetensors").exists()
    resumed = subprocess.run([a.replace("OUT", str(run)) for a in args] + ["--resume"], env=env, capture_output=True,
                             text=True)
    assert resumed.returncode == 0, resumed.stderr
    a, step_a = _weights(tmp_path / "ref")
    b, step_b = _weights(run)
    assert step_a == step_b == 12
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


def test_refuses_to_overwrite_a_run_and_needs_train(tiny_config_path, small_corpus, tmp_path):
    with pytest.raises(SettingsError, match="paths"):
        pretrain(load_config(tiny_config_path), tmp_path / "r", progress=False)
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=2)
    pretrain(config, tmp_path / "r", progress=False)
    with pytest.raises(SettingsError, match="--resume"):
        pretrain(config, tmp_path / "r", progress=False)


def test_interrupted_exception_type():
    assert issubclass(Interrupted, Exception)


def test_pretrained_model_loads_into_the_component(tiny_config_path, small_corpus, tmp_path):
    import numpy
    import spacy

    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=2)
    pretrain(config, tmp_path / "r", progress=False)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tmp_path / "r" / "model-best")})
    doc = nlp("Text for the freshly trained biLM .")
    lm = load_model(tmp_path / "r" / "model-best")
    numpy.testing.assert_allclose(doc._.elmo, lm.bilm.embed([[t.text for t in doc]])[0], atol=1e-5)


def test_softmax_warmup_trains_the_softmax_alone_first(tiny_config_path, small_corpus, tmp_path):
    common = dict(paths__train=str(small_corpus), training__eval_every=1000, training__checkpoint_every=1000)
    pretrain(_config(tiny_config_path, training__max_steps=10, **common), tmp_path / "first", progress=False)
    start = load_model(tmp_path / "first" / "model-last")

    def run(name, steps):
        pretrain(_config(tiny_config_path, paths__init_from=str(tmp_path / "first" / "model-last"),
                         training__max_steps=steps, training__softmax_warmup_steps=3, **common),
                 tmp_path / name, progress=False)
        return load_model(tmp_path / name / "model-last")

    warm = run("warm", 3)
    for name, tensor in start.bilm.state_dict().items():
        assert torch.equal(warm.bilm.state_dict()[name], tensor), name
    assert not torch.equal(warm.head.weight, start.head.weight)
    after = run("after", 5)  # two steps past the warm-up: the biLM learns again
    assert not torch.equal(after.bilm.state_dict()["lstm.weight_hh.0"], start.bilm.state_dict()["lstm.weight_hh.0"])
    with pytest.raises(SettingsError, match="softmax_warmup_steps"):
        _config(tiny_config_path, training__softmax_warmup_steps=-1)


def test_two_half_batches_make_one_batch(tiny_config_path, small_corpus, tmp_path):
    """Accumulation: the gradients of two micro-batches equal those of their union (1e-6)."""
    extra = {"training.grad_clip": 0, "softmax.kind": "full"}
    whole = _trainer(tiny_config_path, [small_corpus], tmp_path / "a", **extra)
    halves = _trainer(tiny_config_path, [small_corpus], tmp_path / "b", **{**extra, "training.accumulate_steps": 2})
    sentences = [s for _, s in zip(range(12), whole.train_corpus.segments())]
    assert isinstance(whole.train_corpus, TokenizedCorpus)
    whole._step([sentence_batch(sentences, whole.vocab)])
    halves._step([sentence_batch(sentences[:5], halves.vocab), sentence_batch(sentences[5:], halves.vocab)])
    compared = 0
    for (name, a), (_, b) in zip(whole.lm.named_parameters(), halves.lm.named_parameters()):
        if a.grad is None:
            assert b.grad is None, name
            continue
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-6, msg=name)
        compared += 1
    assert compared > 10
    assert whole.position.tokens == halves.position.tokens == sum(len(s) + 1 for s in sentences)
    assert abs(whole.window.loss - halves.window.loss) < 1e-5


def test_accumulation_trains_with_a_step_per_two_batches(tiny_config_path, small_corpus, tmp_path):
    one = Trainer(load_config(tiny_config_path, _overrides([small_corpus])), tmp_path / "one", progress=False).run()
    two = Trainer(load_config(tiny_config_path, _overrides([small_corpus], **{"training.accumulate_steps": 2})),
                  tmp_path / "two", progress=False).run()
    assert two["step"] == one["step"] // 2
    assert two["tokens"] <= one["tokens"]


def test_shard_files_refuses_stream_mode(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.pretrain import SettingsError

    extra = {"corpus.shard": "files", "training.mode": "stream"}
    config = load_config(tiny_config_path, _overrides([small_corpus], **extra))
    with pytest.raises(SettingsError, match="shard"):
        Trainer(config, tmp_path / "run", progress=False).run()
