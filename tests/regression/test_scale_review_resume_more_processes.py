"""Regression: resuming a sharded pretraining run with more processes than its corpus shares trained
nothing and called the run finished.

A run started with `[corpus] shard = "files"` on one file in one process has one share; resumed under
torchrun with two processes, process 1 was dealt no share, so every epoch ended before its first step:
the run burnt all its remaining epochs, exited 0 and marked itself finished. The shares are fixed when a
run starts (the positions in the checkpoint are per share), so such a resume is now refused before any
work, with one `CheckpointError` line saying how many processes it can resume with.
"""
import hashlib

import pytest

from spacy_elmo.pretrain import Trainer, load_config
from spacy_elmo.pretrain import distributed
from spacy_elmo.pretrain.checkpoint import CheckpointError, load_checkpoint

from ..pretrain.runs import _overrides


def test_resume_with_more_processes_than_shares_is_refused(tiny_config_path, small_corpus, tmp_path, monkeypatch):
    run = tmp_path / "run"
    first = _overrides([small_corpus], **{"corpus.shard": "files", "training.max_steps": 2})
    Trainer(load_config(tiny_config_path, first), run, device="cpu", progress=False).run()
    shards = load_checkpoint(run / "checkpoint.pt")["progress"]["shards"]
    assert shards["shares"] == [[0, 0, 1]]
    before = hashlib.sha256((run / "checkpoint.pt").read_bytes()).hexdigest()
    # process 0 of 2 under torchrun; the group is not needed before the refusal
    for name, value in (("WORLD_SIZE", "2"), ("RANK", "0"), ("LOCAL_RANK", "0")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(distributed.dist, "new_group", lambda **kwargs: None)
    again = _overrides([small_corpus], **{"corpus.shard": "files", "training.max_steps": 10})
    trainer = Trainer(load_config(tiny_config_path, again), run, device="cpu", progress=False)
    with pytest.raises(CheckpointError) as caught:
        trainer.run(resume=True)
    message = str(caught.value)
    assert "1 share(s), fewer than the 2 processes" in message and "at most 1 process" in message
    assert "\n" not in message
    assert hashlib.sha256((run / "checkpoint.pt").read_bytes()).hexdigest() == before
