"""Data parallelism when launched by torchrun (WORLD_SIZE > 1): DDP over NCCL on GPUs, gloo on
CPUs. Every rank draws its slice of the same global batch (see `data.sampler`), so a run on
N processes trains on exactly the data of a run on one."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_world(device_type: str) -> World:
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return World(dist.get_rank(), size, int(os.environ.get("LOCAL_RANK", "0")))


def mean_over_ranks(value: torch.Tensor, world: World) -> torch.Tensor:
    if world.size > 1:
        dist.all_reduce(value, op=dist.ReduceOp.AVG if value.is_cuda else dist.ReduceOp.SUM)
        if not value.is_cuda:  # gloo has no AVG
            value /= world.size
    return value


def barrier(world: World) -> None:
    if world.size > 1:
        dist.barrier()
