"""Multi-GPU pretraining, checked on CPU: each rank's device, the order of set_device and
the process group, the backend, and the device of every collective's tensor.

Regression: under NCCL every step all-reduced a CPU tensor (`Dist.any`), which
NCCL cannot do, and no `torch.cuda.set_device(local_rank)` preceded the
collectives. (The two-process run itself is
test_two_gloo_processes_hold_identical_weights, below; on GPUs,
benchmarks/gpu_check.sh.)
"""
import json
import os
import subprocess

import pytest
import torch

from spacy_elmo.pretrain import distributed
from spacy_elmo.pretrain.distributed import Dist, init_distributed, rank_device
from tests.conftest import torchrun_command


@pytest.fixture
def cuda_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.mark.parametrize("requested,local_rank,world,expected", [
    (None, 1, True, "cuda:1"),
    ("cuda", 3, True, "cuda:3"),
    ("cuda:0", 3, True, "cuda:0"),  # an explicit index wins
    ("cpu", 1, True, "cpu"),
    (None, 0, False, "cpu"),  # one process: the CPU unless asked
    ("cuda", 0, False, "cuda:0"),
])
def test_device_per_rank(cuda_present, requested, local_rank, world, expected):
    assert rank_device(requested, local_rank, distributed=world) == torch.device(expected)


def test_device_per_rank_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    assert rank_device(None, 1, distributed=True) == torch.device("cpu")


class _Recorder:
    def __init__(self, monkeypatch) -> None:
        self.calls: list = []
        monkeypatch.setattr(torch.cuda, "set_device",
                            lambda device: self.calls.append(("set_device", torch.device(device))))
        monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
        monkeypatch.setattr(distributed.dist, "init_process_group",
                            lambda backend, **kwargs: self.calls.append(("init_process_group", backend)))
        monkeypatch.setattr(distributed.dist, "new_group", self.new_group)

    def new_group(self, backend, timeout):
        self.calls.append(("new_group", backend, timeout))
        return "waiting"


def _torchrun_env(monkeypatch, rank: int, local_rank: int, world: int = 4) -> None:
    for name, value in (("WORLD_SIZE", world), ("RANK", rank), ("LOCAL_RANK", local_rank)):
        monkeypatch.setenv(name, str(value))


def test_gpu_ranks_set_their_device_before_the_group_and_use_a_cpu_and_cuda_backend(cuda_present, monkeypatch):
    recorder = _Recorder(monkeypatch)
    _torchrun_env(monkeypatch, rank=3, local_rank=1)
    state = init_distributed()
    assert recorder.calls[:2] == [("set_device", torch.device("cuda:1")), ("init_process_group", "cpu:gloo,cuda:nccl")]
    assert state.device == torch.device("cuda:1") and (state.rank, state.local_rank, state.world_size) == (3, 1, 4)


def test_cpu_ranks_use_gloo_and_set_no_device(monkeypatch):
    recorder = _Recorder(monkeypatch)
    _torchrun_env(monkeypatch, rank=1, local_rank=1, world=2)
    state = init_distributed("cpu")
    assert recorder.calls[:1] == [("init_process_group", "gloo")]
    assert state.device == torch.device("cpu")


def test_the_others_wait_for_the_main_process_in_a_group_with_a_long_timeout(monkeypatch):
    """Regression: while the main process tokenized the corpus or built the teacher cache (hours on a
    CPU), the others waited at a barrier of the training group, whose timeout is torch's default (30
    minutes for gloo): the run ended with a timeout. They now wait in a gloo group of its own whose
    timeout is PREPARATION_WAIT (days); a training step's collectives keep the default."""
    recorder = _Recorder(monkeypatch)
    _torchrun_env(monkeypatch, rank=1, local_rank=1, world=2)
    state = init_distributed("cpu")
    assert recorder.calls == [("init_process_group", "gloo"), ("new_group", "gloo", distributed.PREPARATION_WAIT)]
    assert distributed.PREPARATION_WAIT.total_seconds() >= 24 * 3600
    waits = []
    monkeypatch.setattr(distributed.dist, "barrier", lambda group=None: waits.append(group))
    state.wait_for_main()
    state.barrier()
    assert waits == ["waiting", None]
    Dist().wait_for_main()  # one process: nothing to wait for
    assert waits == ["waiting", None]


def test_single_process_joins_nothing(monkeypatch):
    recorder = _Recorder(monkeypatch)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    state = init_distributed()
    assert recorder.calls == [] and not state.enabled and state.device == torch.device("cpu")


class _Stop(Exception):
    pass


def test_the_stop_flag_is_reduced_on_the_rank_device(monkeypatch):
    """`meta` stands in for a GPU: the tensor handed to all_reduce must be on the rank's device."""
    seen = []

    def all_reduce(tensor, op=None):
        seen.append(tensor.device)
        raise _Stop  # a meta tensor has no value to read back

    monkeypatch.setattr(distributed.dist, "all_reduce", all_reduce)
    with pytest.raises(_Stop):
        Dist(rank=1, world_size=2, local_rank=1, device=torch.device("meta")).any(True)
    assert seen == [torch.device("meta")]


def test_the_stop_flag_on_cpu(monkeypatch):
    def all_reduce(tensor, op=None):
        assert tensor.device.type == "cpu"
        tensor.fill_(1.0)  # another rank asked to stop

    monkeypatch.setattr(distributed.dist, "all_reduce", all_reduce)
    assert Dist(rank=0, world_size=2).any(False) is True
    assert Dist().any(False) is False  # one process: no collective at all


def test_trainer_takes_the_rank_device(tiny_config_path, small_corpus, tmp_path, cuda_present, monkeypatch):
    from spacy_elmo.pretrain import Trainer, load_config

    recorder = _Recorder(monkeypatch)
    _torchrun_env(monkeypatch, rank=1, local_rank=0, world=2)
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus)})
    trainer = Trainer(config, tmp_path / "run", progress=False)
    assert trainer.device == torch.device("cuda:0")
    assert recorder.calls[0] == ("set_device", torch.device("cuda:0"))


def test_two_gloo_processes_hold_identical_weights(tiny_config_path, small_corpus, tmp_path):
    out = subprocess.run(
        [*torchrun_command(2),
         "-m", "spacy_elmo", "pretrain", str(tiny_config_path), str(tmp_path / "ddp"), "--quiet",
         "--paths.train", str(small_corpus), "--training.max_steps", "4", "--training.threads", "1"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "ddp" / "log.jsonl").read_text().splitlines()]
    checksums = [r["replica_checksums"] for r in rows if "replica_checksums" in r]
    assert len(checksums) == 1 and len(checksums[0]) == 2 and checksums[0][0] == checksums[0][1]
    assert rows[0]["step"] == 4
