"""Data-parallel pretraining over processes: torchrun / torch.distributed.

Launched under `torchrun --nproc_per_node N`, every process trains a replica
on its share of the batches; DistributedDataParallel averages the gradients,
so all replicas hold identical weights after every step. Without torchrun's
environment this is a single process and every helper is a no-op.

Devices and backends. On GPUs each process owns the GPU of its LOCAL_RANK:
`torch.cuda.set_device` is called before the process group is created, so
every collective (NCCL's and the object collectives' staging tensors) runs on
the rank's own GPU. The group is created with the backend string
"cpu:gloo,cuda:nccl": CUDA tensors go through NCCL, CPU tensors through gloo,
so a collective on a CPU tensor (e.g. `all_gather_object` of the CPU sampler
state) cannot fail under NCCL. The stop flag (`Dist.any`) is reduced on the
rank's device. On CPU the group is plain gloo.

Waiting for the main process. Before training, the main process tokenizes
the corpus and may build the teacher cache (hours on a CPU) while the others
wait (`Dist.wait_for_main`). They wait in a second, gloo group whose timeout is
`PREPARATION_WAIT`: torch's default (30 minutes for gloo, 10 for NCCL), right
for a training step's collectives, ended such runs with a timeout. A main
process that fails instead closes its connections, and the others stop then.
"""
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, List, Optional

import torch
import torch.distributed as dist

from ..bilm.errors import SpacyElmoError
from .plot import read_log

GPU_BACKEND = "cpu:gloo,cuda:nccl"
CPU_BACKEND = "gloo"
# how long the other processes wait while the main one prepares the data alone (see the module's docstring)
PREPARATION_WAIT = timedelta(days=7)


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    # the gloo group of `wait_for_main`, its timeout PREPARATION_WAIT (None: one process)
    waiting_group: Any = None

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def wait_for_main(self) -> None:
        """Every process waits here until all have arrived, for up to PREPARATION_WAIT: the barrier after
        work the main process does alone (tokenizing the corpus, building the teacher cache)."""
        if self.enabled:
            dist.barrier(group=self.waiting_group)

    def any(self, flag: bool) -> bool:
        """True on every rank if it is true on any (e.g. a stop request)."""
        if not self.enabled:
            return flag
        value = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item() > 0)


def rank_device(requested: Optional[str], local_rank: int, distributed: bool) -> torch.device:
    """The device this process trains on.

    Explicit requests win ("cpu", "cuda:1"); a bare "cuda" means the GPU of
    this process's LOCAL_RANK. Without a request: that GPU under torchrun when
    CUDA is available, else the CPU.
    """
    if requested is None:
        requested = "cuda" if distributed and torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", local_rank if distributed else 0)
    return device


def backend_for(device: torch.device) -> str:
    return GPU_BACKEND if device.type == "cuda" else CPU_BACKEND


class LaunchError(SpacyElmoError, ValueError):
    """The launcher's environment (WORLD_SIZE, RANK, LOCAL_RANK) is incomplete or malformed: a
    ValueError, so the commands say it in one line."""


TORCHRUN_VARIABLES = "torchrun sets WORLD_SIZE, RANK and LOCAL_RANK; a launcher of its own must set them all"


def _variable(name: str) -> Optional[int]:
    """The integer in environment variable `name` (None where unset); LaunchError if it is not one."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    try:
        return int(value)
    except ValueError:
        raise LaunchError(f"{name}={value!r} is not a whole number ({TORCHRUN_VARIABLES})") from None


def launched_world_size() -> int:
    """The number of processes torchrun started (WORLD_SIZE; 1 without torchrun), known before
    the process group is joined, so settings that need one process can be refused first."""
    world = _variable("WORLD_SIZE")
    if world is not None and world < 1:
        raise LaunchError(f"WORLD_SIZE={world} must be 1 or more ({TORCHRUN_VARIABLES})")
    return 1 if world is None else world


def launched_rank(world_size: int) -> int:
    """This process's RANK among `world_size` processes. A LaunchError (one line) where WORLD_SIZE says
    several processes and RANK is missing or out of range: without it every process would take
    itself for another's rank (a raw KeyError before)."""
    rank = _variable("RANK")
    if rank is None:
        raise LaunchError(f"WORLD_SIZE={world_size} is set but RANK is not ({TORCHRUN_VARIABLES})")
    if not 0 <= rank < world_size:
        raise LaunchError(f"RANK={rank} is not a rank of WORLD_SIZE={world_size} processes (0 to {world_size - 1})")
    return rank


def launched_local_rank(world_size: int) -> int:
    """This process's LOCAL_RANK (its GPU on its machine), required where WORLD_SIZE says several
    processes and a GPU is picked by it (LaunchError, one line, where it is missing)."""
    local_rank = _variable("LOCAL_RANK")
    if local_rank is None:
        raise LaunchError(f"WORLD_SIZE={world_size} is set but LOCAL_RANK, which picks each process's GPU, "
                          f"is not ({TORCHRUN_VARIABLES})")
    if local_rank < 0:
        raise LaunchError(f"LOCAL_RANK={local_rank} must be 0 or more ({TORCHRUN_VARIABLES})")
    return local_rank


def _picks_gpu(requested: Optional[str]) -> bool:
    """Whether `rank_device` picks the GPU by LOCAL_RANK (no request, or "cuda" without an index)."""
    if requested is None:
        return torch.cuda.is_available()
    device = torch.device(requested)
    return device.type == "cuda" and device.index is None


def init_distributed(device: Optional[str] = None) -> Dist:
    """This process's rank and device; joins the process group torchrun describes, if any.

    Under several processes RANK is required (and LOCAL_RANK where it picks the GPU): a LaunchError
    names what is missing before any group is joined."""
    world_size = launched_world_size()
    if world_size <= 1:
        return Dist(device=rank_device(device, 0, distributed=False))
    rank = launched_rank(world_size)
    # on the CPU LOCAL_RANK picks nothing, and is only recorded
    given = launched_local_rank(world_size) if _picks_gpu(device) else _variable("LOCAL_RANK")
    local_rank = rank if given is None else given
    chosen = rank_device(device, local_rank, distributed=True)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)  # before any collective: NCCL uses the current device
    if not dist.is_initialized():
        join_process_group(backend_for(chosen))
    # every process creates it, in the same order (new_group is collective)
    waiting = dist.new_group(backend=CPU_BACKEND, timeout=PREPARATION_WAIT)
    return Dist(rank=rank, world_size=world_size, local_rank=local_rank, device=chosen, waiting_group=waiting)


def join_process_group(backend: str, timeout: Optional[timedelta] = None) -> None:
    """`dist.init_process_group`, arranged so that `destroy_process_group` really destroys the group.

    torch.distributed.nn, which DistributedDataParallel imports, binds the default group as the
    default argument of its functions when it is first imported. Imported after the group exists,
    it holds the group for the life of the interpreter, so the group (and gloo's worker threads)
    outlived `destroy_process_group` and was torn down during interpreter shutdown, where a worker
    thread that still released a collective's tensor aborted the process ("terminate called
    without an active exception", SIGABRT) after a finished run. Imported first, it binds None."""
    import torch.distributed.nn  # noqa: F401  (before the group exists: see above)

    if timeout is None:
        dist.init_process_group(backend=backend)
    else:
        dist.init_process_group(backend=backend, timeout=timeout)


def shutdown(state: Dist) -> None:
    """Leave the process group. Nothing in this package holds the group afterwards (the trainer
    unwraps its DistributedDataParallel first), so its threads stop here, while the interpreter
    is whole, not during its shutdown."""
    if state.enabled and dist.is_initialized():
        dist.destroy_process_group()


def check_replicas(state: Dist, module: torch.nn.Module, log: Path, step: int) -> Optional[List[Optional[str]]]:
    """Under DDP, every replica must hold the same weights: their checksums are gathered,
    logged (main process) and compared; RuntimeError if they differ. None without DDP.

    The row names its step (`at_step`); a run resumed after it finished, which takes no step, logs
    none again (one row per finish at a step, as for the loss rows)."""
    if not state.enabled:
        return None
    digest = hashlib.sha1()
    for tensor in module.state_dict().values():
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    checksums: List[Optional[str]] = [None] * state.world_size
    dist.all_gather_object(checksums, digest.hexdigest())
    if state.is_main and not any(row.get("at_step") == step and "replica_checksums" in row for row in read_log(log)):
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"at_step": step, "replica_checksums": checksums}) + "\n")
    if len(set(checksums)) != 1:
        raise RuntimeError(f"data-parallel replicas diverged: weight checksums {checksums}")
    return checksums


__all__ = [
    "PREPARATION_WAIT", "Dist", "LaunchError", "check_replicas", "init_distributed", "launched_local_rank",
    "launched_rank", "launched_world_size", "rank_device", "backend_for", "shutdown",
]
