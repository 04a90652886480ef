"""Faults: SIGKILL during pretraining and embedding, a full disk at checkpoint time."""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy
import pytest
import torch

from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.checkpoint import CheckpointError, load_checkpoint

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.fixture
def corpus(tmp_path, data_dir):
    import gzip

    with gzip.open(data_dir / "pretrain_en" / "heldout.txt.gz", "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(120)]
    path = tmp_path / "corpus.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _pretrain_args(corpus, out, every=3):
    return [sys.executable, "-m", "spacy_elmo", "pretrain", str(CONFIGS / "pretrain_tiny.cfg"), str(out), "--quiet",
            "--paths.train", str(corpus), "--training.max_epochs", "6", "--training.checkpoint_every", str(every),
            "--training.eval_every", "1000", "--softmax.kind", "sampled", "--softmax.n_samples", "64"]


def test_sigkill_at_random_points_then_resume_reaches_the_same_weights(corpus, tmp_path):
    reference = subprocess.run(_pretrain_args(corpus, tmp_path / "ref"), env=ENV, capture_output=True, text=True)
    assert reference.returncode == 0, reference.stderr
    rng = random.Random(1234)
    run = tmp_path / "run"
    kills = 0
    seen_steps = []
    for attempt in range(3):
        resume = ["--resume"] if (run / "checkpoint.pt").exists() else []
        before = (run / "checkpoint.pt").stat().st_mtime_ns if resume else None
        proc = subprocess.Popen(_pretrain_args(corpus, run) + resume, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # wait until this process has written a checkpoint, then kill it at a random moment
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            path = run / "checkpoint.pt"
            if path.exists() and path.stat().st_mtime_ns != before:
                break
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if (run / "checkpoint.pt").exists():
            state = load_checkpoint(run / "checkpoint.pt")  # never torn: always loadable
            step = state["progress"]["step"]
            assert step % 3 == 0 or (run / "model-last").exists()  # checkpoints land on the interval
            seen_steps.append(step)
        assert not list(run.glob(".*.tmp")) or kills  # a temp file may remain only from a kill mid-write
    final = subprocess.run(_pretrain_args(corpus, run) + ["--resume"], env=ENV, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    assert kills >= 1 and seen_steps == sorted(seen_steps)
    a = torch.load(tmp_path / "ref" / "checkpoint.pt", weights_only=False)
    b = torch.load(run / "checkpoint.pt", weights_only=False)
    assert a["progress"]["step"] == b["progress"]["step"]
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], rtol=0, atol=0)


def test_disk_full_while_checkpointing_keeps_the_previous_one(corpus, tmp_path, monkeypatch):
    import spacy_elmo.pretrain.checkpoint as checkpoint

    config = load_config(CONFIGS / "pretrain_tiny.cfg", {
        "paths.train": str(corpus), "training.checkpoint_every": 2, "training.max_steps": 8, "training.eval_every": 1000})
    real_save = torch.save
    calls = {"n": 0}

    def failing_save(obj, handle, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            handle.write(b"partial bytes")
            raise OSError(28, "No space left on device")
        return real_save(obj, handle, *args, **kwargs)

    monkeypatch.setattr(checkpoint.torch, "save", failing_save)
    with pytest.raises(CheckpointError, match="No space left on device.*previous checkpoint is intact"):
        pretrain(config, tmp_path / "run", progress=False)
    state = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert state["progress"]["step"] == 2
    assert not list((tmp_path / "run").glob(".*.tmp"))
    monkeypatch.setattr(checkpoint.torch, "save", real_save)
    result = pretrain(config, tmp_path / "run", resume=True, progress=False)
    assert result["step"] == 8


def test_embed_killed_then_resumed_or_overwritten(allennlp_dir, tmp_path):
    rng = random.Random(7)
    lines = [" ".join(rng.choice(["the", "cat", "sat", "on", "a", "mat", ",", "."]) for _ in range(rng.randint(0, 40)))
             for _ in range(3000)]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n")
    base = [sys.executable, "-m", "spacy_elmo", "embed", str(text), "OUT", "--weights", str(allennlp_dir), "--quiet"]
    out = tmp_path / "out.hdf5"
    reference = subprocess.run([a.replace("OUT", str(tmp_path / "ref.hdf5")) for a in base], env=ENV, capture_output=True, text=True)
    assert reference.returncode == 0, reference.stderr
    cmd = [a.replace("OUT", str(out)) for a in base]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    partial = out.with_name(out.name + ".partial")
    deadline = time.time() + 60
    while not partial.exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "an interrupted run must never leave OUTPUT looking complete"
    assert partial.exists()
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
