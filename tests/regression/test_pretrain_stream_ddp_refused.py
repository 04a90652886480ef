"""Regression: stream mode under torchrun carried LSTM state into the wrong batch.

The processes take turns through one batch sequence, process r taking batches r, r + W,
r + 2W, ...; in stream mode each carried its own final state from batch k into batch
k + W, whose rows continue batch k + W - 1, another process's, and only process 0's
carried state reached the checkpoint. Stream mode with more than one process is now
refused when the run starts, before any process group is joined."""
import pytest

from spacy_elmo.pretrain import SettingsError, Trainer, load_config
from spacy_elmo.pretrain import distributed
from spacy_elmo.pretrain.trainer import check_stream_processes


def _torchrun(monkeypatch, world: int) -> None:
    for name, value in (("WORLD_SIZE", world), ("RANK", 0), ("LOCAL_RANK", 0)):
        monkeypatch.setenv(name, str(value))

    def joined(*args, **kwargs):
        raise AssertionError("joined the process group before refusing the settings")

    monkeypatch.setattr(distributed.dist, "init_process_group", joined)
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)


def test_stream_mode_with_two_processes_is_refused_at_startup(tiny_config_path, small_corpus, tmp_path, monkeypatch):
    _torchrun(monkeypatch, world=2)
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.mode": "stream"})
    with pytest.raises(SettingsError, match=r'mode = "stream" needs a single process, not 2'):
        Trainer(config, tmp_path / "run", device="cpu", progress=False)
    assert not (tmp_path / "run").exists()


def test_stream_mode_in_one_process_and_sentences_mode_under_torchrun_are_fine(tiny_config_path, small_corpus):
    stream = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.mode": "stream"})
    sentences = load_config(tiny_config_path, {"paths.train": str(small_corpus)})
    check_stream_processes(stream, 1)
    check_stream_processes(sentences, 2)
    with pytest.raises(SettingsError, match="torchrun"):
        check_stream_processes(stream, 4)
