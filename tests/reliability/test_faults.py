"""Faults: a kill during pretraining, embedding and checkpoint writes, a full disk.

Every fault is injected deterministically (`spacy_elmo/faults.py`): the
process kills itself, or signals itself, at a given step, chunk or write, so
these tests behave the same on a fast machine and a busy one.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy
import pytest
import torch

from spacy_elmo.faults import VARIABLE
from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.checkpoint import CheckpointError, load_checkpoint

from ..conftest import heldout_corpus

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
ENV.pop(VARIABLE, None)
KILLED = -signal.SIGKILL


def _with_fault(spec: str) -> dict:
    return {**ENV, VARIABLE: spec}


@pytest.fixture
def corpus(tmp_path, data_dir):
    return heldout_corpus(data_dir, tmp_path / "corpus.txt", 120)


def _pretrain_args(corpus, out, every=3):
    return [sys.executable, "-m", "spacy_elmo", "pretrain", str(CONFIGS / "pretrain_tiny.cfg"), str(out), "--quiet",
            "--paths.train", str(corpus), "--training.max_steps", "14", "--training.checkpoint_every", str(every),
            "--training.eval_every", "1000", "--softmax.kind", "sampled", "--softmax.n_samples", "64"]


def _checkpoint_step(run: Path) -> int:
    return load_checkpoint(run / "checkpoint.pt")["progress"]["step"]  # never torn: always loadable


def test_pretraining_killed_at_fixed_points_then_resumed_reaches_the_same_weights(corpus, tmp_path):
    reference = subprocess.run(_pretrain_args(corpus, tmp_path / "ref"), env=ENV, capture_output=True, text=True)
    assert reference.returncode == 0, reference.stderr
    run = tmp_path / "run"
    # (fault, checkpoint step after the kill, a temporary file left by the kill)
    plan = [
        ("pretrain.step:4:kill", 3, False),  # between two checkpoints: step 4 is lost
        ("checkpoint.write:1:kill", 3, True),  # resumed at 3; killed writing step 6's: step 3's stays
        ("pretrain.step:5:kill", 6, False),  # resumed at 3; step 6 written, killed at step 8
        ("pretrain.step:3:kill", 6, False),  # resumed at 6; killed at step 9, before its checkpoint
    ]
    for fault, step_after, temporary_left in plan:
        resume = ["--resume"] if (run / "checkpoint.pt").exists() else []
        proc = subprocess.run(_pretrain_args(corpus, run) + resume, env=_with_fault(fault), capture_output=True,
                              text=True)
        assert proc.returncode == KILLED, (fault, proc.returncode, proc.stderr[-2000:])
        assert _checkpoint_step(run) == step_after, fault
        assert bool(list(run.glob(".checkpoint.pt.*.tmp"))) == temporary_left, fault
        for stale in run.glob(".checkpoint.pt.*.tmp"):
            stale.unlink()
    final = subprocess.run(_pretrain_args(corpus, run) + ["--resume"], env=ENV, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    a = load_checkpoint(tmp_path / "ref" / "checkpoint.pt")
    b = load_checkpoint(run / "checkpoint.pt")
    assert a["progress"]["step"] == b["progress"]["step"] == 14
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], rtol=0, atol=0)


def test_disk_full_while_checkpointing_keeps_the_previous_one(corpus, tmp_path, monkeypatch, inject):
    config = load_config(CONFIGS / "pretrain_tiny.cfg", {
        "paths.train": str(corpus), "training.checkpoint_every": 2, "training.max_steps": 8,
        "training.eval_every": 1000})
    inject("checkpoint.write:2:enospc")  # the second checkpoint's write fails
    with pytest.raises(CheckpointError, match="No space left on device.*previous checkpoint is intact"):
        pretrain(config, tmp_path / "run", progress=False)
    assert _checkpoint_step(tmp_path / "run") == 2
    assert not list((tmp_path / "run").glob(".*.tmp"))
    monkeypatch.delenv(VARIABLE)
    result = pretrain(config, tmp_path / "run", resume=True, progress=False)
    assert result["step"] == 8


def test_sigint_at_a_fixed_step_checkpoints_and_stops(corpus, tmp_path, inject):
    from spacy_elmo.pretrain import Interrupted

    config = load_config(CONFIGS / "pretrain_tiny.cfg", {
        "paths.train": str(corpus), "training.checkpoint_every": 100, "training.max_steps": 8,
        "training.eval_every": 1000})
    inject("pretrain.step:3:int")
    with pytest.raises(Interrupted, match="stopped by SIGINT at step 3"):
        pretrain(config, tmp_path / "run", progress=False)
    assert _checkpoint_step(tmp_path / "run") == 3
    assert (tmp_path / "run" / "model-last" / "bilm.safetensors").exists()


def test_embed_killed_then_resumed_or_overwritten(allennlp_dir, tmp_path):
    rng = numpy.random.default_rng(7)
    words = ["the", "cat", "sat", "on", "a", "mat", ",", "."]
    lines = [" ".join(rng.choice(words, size=rng.integers(0, 40))) for _ in range(1200)]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n")
    base = [sys.executable, "-m", "spacy_elmo", "embed", str(text), "OUT", "--weights", str(allennlp_dir), "--quiet",
            "--chunk-lines", "300"]
    out = tmp_path / "out.hdf5"
    reference = subprocess.run([a.replace("OUT", str(tmp_path / "ref.hdf5")) for a in base], env=ENV,
                               capture_output=True, text=True)
    assert reference.returncode == 0, reference.stderr
    cmd = [a.replace("OUT", str(out)) for a in base]
    killed = subprocess.run(cmd, env=_with_fault("embed.chunk:2:kill"), capture_output=True, text=True)
    assert killed.returncode == KILLED, killed.stderr[-2000:]
    assert not out.exists(), "an interrupted run must never leave OUTPUT looking complete"
    partial = out.with_name(out.name + ".partial")
    with h5py.File(partial, "r") as f:  # the two flushed chunks, nothing else
        assert sorted(int(k) for k in f.keys() if k.isdigit()) == list(range(600))
        assert f.attrs["status"] == "incomplete"
    refused = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    assert refused.returncode == 1 and "--resume" in " ".join(refused.stdout.split() + refused.stderr.split())
    resumed = subprocess.run(cmd + ["--resume"], env=ENV, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    with h5py.File(tmp_path / "ref.hdf5", "r") as a, h5py.File(out, "r") as b:
        assert sorted(a.keys()) == sorted(b.keys()) and b.attrs["status"] == "complete"
        for key in a.keys():
            if key.isdigit():
                numpy.testing.assert_allclose(a[key][...], b[key][...], atol=1e-5)
    again = subprocess.run(cmd + ["--overwrite"], env=ENV, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
