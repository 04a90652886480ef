"""Pretraining: the reference's own check, resume exactness, interruption, settings."""
import json
import os
import subprocess
import sys

import pytest
import torch

from spacy_elmo.io import load_model
from spacy_elmo.pretrain import Interrupted, SettingsError, load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint


def _config(path, **overrides):
    return load_config(path, {k.replace("__", "."): v for k, v in overrides.items()})


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
    assert proc.returncode == 130, proc.stderr
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


@pytest.mark.parametrize("overrides,message", [
    ({"training.optimiser": "adam"}, "unknown override"),
    ({"training.mode": "bogus"}, "choose one of"),
    ({"softmax.kind": "hier"}, "choose one of"),
    ({"vocab.max_size": 2}, r"\[vocab\] max_size = 2: .* 4 \(three special tokens and a word\)"),
    ({"training.learning_rate": 0}, r"\[training\] learning_rate = 0: .*greater than 0"),
    ({"training.batch_tokens": "many"}, r"\[training\] batch_tokens = 'many': .*integer"),
    # every problem at once, in one message
    ({"training.eval_every": 0, "softmax.kind": "x"},
     r"\[softmax\] kind = 'x'; choose one of .*; \[training\] eval_every"),
])
def test_bad_settings(tiny_config_path, overrides, message):
    with pytest.raises(SettingsError, match=message):
        load_config(tiny_config_path, overrides)


def test_unknown_setting_in_file(tmp_path):
    path = tmp_path / "c.cfg"
    path.write_text("[training]\nlearning_rat = 0.1\n")
    with pytest.raises(SettingsError, match="unknown setting"):
        load_config(path)


def test_docbin_and_gzip_corpora(tiny_config_path, small_corpus, tmp_path):
    import gzip

    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    docs = [nlp(line) for line in small_corpus.read_text().splitlines()[:30] if line.strip()]
    DocBin(docs=docs).to_disk(tmp_path / "c.spacy")
    with gzip.open(tmp_path / "c.txt.gz", "wt") as f:
        f.write(small_corpus.read_text())
    for train in ("c.spacy", "c.txt.gz"):
        config = _config(tiny_config_path, paths__train=str(tmp_path / train), training__max_steps=2)
        result = pretrain(config, tmp_path / f"run-{train}", progress=False)
        assert result["step"] == 2


def test_perplexity_command(tiny_config_path, small_corpus, tmp_path):
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=3)
    pretrain(config, tmp_path / "r", progress=False)
    out = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "perplexity", str(tmp_path / "r" / "model-last"), str(small_corpus),
         "--json"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) == {"forward", "backward", "mean", "tokens"} and result["tokens"] > 1000


def test_two_gloo_processes_hold_identical_weights(tiny_config_path, small_corpus, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
         "-m", "spacy_elmo", "pretrain", str(tiny_config_path), str(tmp_path / "ddp"), "--quiet",
         "--paths.train", str(small_corpus), "--training.max_steps", "4", "--training.threads", "1"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "ddp" / "log.jsonl").read_text().splitlines()]
    checksums = [r["replica_checksums"] for r in rows if "replica_checksums" in r]
    assert len(checksums) == 1 and len(checksums[0]) == 2 and checksums[0][0] == checksums[0][1]
    assert rows[0]["step"] == 4


def test_interrupted_exception_type():
    assert issubclass(Interrupted, Exception)


def test_resume_refuses_a_changed_architecture(tiny_config_path, small_corpus, tmp_path):
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=2)
    pretrain(config, tmp_path / "r", progress=False)
    changed = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=4, model__lstm_dim=32)
    with pytest.raises(SettingsError, match="different architecture.*lstm_dim"):
        pretrain(changed, tmp_path / "r", resume=True, progress=False)
    more_steps = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=4)
    assert pretrain(more_steps, tmp_path / "r", resume=True, progress=False)["step"] == 4


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
    assert continued.bilm.config == shipped.bilm.config
    name = "lstm.weight_hh.1"
    torch.testing.assert_close(continued.bilm.state_dict()[name], shipped.bilm.state_dict()[name], rtol=0, atol=1e-6)


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
