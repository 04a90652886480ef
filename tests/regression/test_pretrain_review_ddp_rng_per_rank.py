"""Regression: a resumed pretraining run under torchrun did not continue as the uninterrupted one.

The checkpoint kept the torch, numpy and Python generators of process 0 only, and a resume gave
that one state to every process. The processes draw different dropout masks from the first step
on (their batches differ), so after a resume process 1 drew process 0's masks: with dropout, the
resumed run's weights differed from the uninterrupted run's. Every process's generators are now
gathered into the checkpoint ("rngs") and each process gets its own back.
Two gloo processes; the stop is a fault injected at a fixed step (SIGTERM delivered by the
process to itself, spacy_elmo/faults.py), not a signal sent after a sleep.
"""
import os
import subprocess

import torch
from safetensors.torch import load_file

from spacy_elmo.pretrain.checkpoint import load_checkpoint
from tests.conftest import torchrun_command


def _torchrun(config, corpus, output, *extra, fault=""):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SPACY_ELMO_FAULT": fault}
    return subprocess.run(
        [*torchrun_command(2),
         "-m", "spacy_elmo", "pretrain", str(config), str(output), "--quiet", "--paths.train", str(corpus),
         "--training.max_steps", "4", "--training.threads", "1", "--model.dropout", "0.2", *extra],
        capture_output=True, text=True, env=env, timeout=600,
    )


def test_a_resumed_ddp_run_with_dropout_ends_with_the_uninterrupted_weights(
        tiny_config_path, small_corpus, tmp_path):
    whole = _torchrun(tiny_config_path, small_corpus, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr[-3000:]
    stopped = _torchrun(tiny_config_path, small_corpus, tmp_path / "split", fault="pretrain.step:2:term")
    assert stopped.returncode != 0
    saved = load_checkpoint(tmp_path / "split" / "checkpoint.pt")
    assert saved["progress"]["step"] == 2 and len(saved["rngs"]) == 2
    assert not torch.equal(saved["rngs"][0]["torch"], saved["rngs"][1]["torch"])  # the processes' differ
    resumed = _torchrun(tiny_config_path, small_corpus, tmp_path / "split", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected = load_file(str(tmp_path / "whole" / "model-last" / "bilm.safetensors"))
    found = load_file(str(tmp_path / "split" / "model-last" / "bilm.safetensors"))
    assert expected.keys() == found.keys()
    for name in expected:
        assert torch.equal(expected[name], found[name]), name
