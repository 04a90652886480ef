"""Data-parallel pretraining over processes: torchrun / torch.distributed.

Launched under `torchrun --nproc_per_node N`, every process trains a replica
on its share of the batches; DistributedDataParallel averages the gradients,
so all replicas hold identical weights after every step. NCCL on GPUs, gloo on
CPU. Without torchrun's environment this is a single process and every helper
is a no-op.
"""
import os
from dataclasses import dataclass
from typing import Optional

import torch
import torch.distributed as dist


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def any(self, flag: bool) -> bool:
        """True on every rank if it is true on any (e.g. a stop request)."""
        if not self.enabled:
            return flag
        value = torch.tensor([1.0 if flag else 0.0])
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item() > 0)


def init_distributed(device: Optional[str] = None) -> Dist:
    """Join the process group torchrun describes, if any."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Dist()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if not dist.is_initialized():
        use_cuda = (device or "").startswith("cuda") or (device is None and torch.cuda.is_available())
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return Dist(rank=rank, world_size=world_size, local_rank=local_rank)


def shutdown(state: Dist) -> None:
    if state.enabled and dist.is_initialized():
        dist.destroy_process_group()


__all__ = ["Dist", "init_distributed", "shutdown"]
