"""Parallelism when launched by torchrun (WORLD_SIZE > 1): DDP or FSDP2 over NCCL on GPUs, gloo
on CPUs. Every rank draws its slice of the same global batch (see `data.sampler`), so a run on
N processes trains on exactly the data of a run on one.

Checkpoints hold full (unsharded) state dicts in parameter-name form, gathered with
`torch.distributed.checkpoint.state_dict`: a run saved on N ranks resumes on any number of
ranks, under either strategy, and a one-process run reads them as they are.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

from archaudit.model import Transformer

# torch.distributed's checkpoint, fsdp and tensor packages take seconds to import on a busy
# machine; they are imported where first needed, so commands that never train do not pay.

# fp32 weights + grads + AdamW's two moments: 16 bytes per parameter on every DDP rank.
TRAINING_BYTES_PER_PARAM = 16


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


def choose_strategy(parallel: str, n_params: int, device: torch.device, world: World) -> str:
    """ "none" on one process; else the recipe's choice, where `auto` shards (FSDP) only when
    replicated training state would fill more than half of a device's memory."""
    if world.size == 1:
        return "none"
    if parallel != "auto":
        return parallel
    if device.type == "cuda":
        memory = torch.cuda.get_device_properties(device).total_memory
        return "fsdp" if TRAINING_BYTES_PER_PARAM * n_params > memory / 2 else "ddp"
    return "ddp"


def parallelize(model: Transformer, strategy: str, device: torch.device) -> nn.Module:
    """The module the training step calls. FSDP2 shards each attention and MLP module (called
    as modules by every stream, even those that run a block's branches rather than the block),
    then the root (embeddings, norms, block scales and stream parameters), in place."""
    if strategy == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for sublayer in model.sublayers():
            fully_shard(sublayer)
        fully_shard(model)
    return model


def gradient_sync(step_model: nn.Module, sync: bool) -> contextlib.AbstractContextManager:
    """Skip the gradient all-reduce on all but the last micro-step of an accumulation."""
    set_sync = getattr(step_model, "set_requires_gradient_sync", None)
    if set_sync is not None:  # an FSDP2 module
        set_sync(sync)
    elif not sync and isinstance(step_model, nn.parallel.DistributedDataParallel):
        return step_model.no_sync()
    return contextlib.nullcontext()


def full_norm(norm: torch.Tensor) -> torch.Tensor:
    """clip_grad_norm_'s total norm as a plain tensor; under FSDP2 it is a replicated DTensor."""
    return norm.full_tensor() if hasattr(norm, "full_tensor") else norm


def full_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """(model, optimizer) state dicts, unsharded and on CPU, keyed by parameter name. Every
    rank must call this (it gathers shards); only rank 0's copy is filled."""
    from torch.distributed.checkpoint import state_dict as dcp

    full = dcp.StateDictOptions(full_state_dict=True, cpu_offload=True)
    return (
        dcp.get_model_state_dict(model, options=full),
        dcp.get_optimizer_state_dict(model, optimizer, options=full),
    )


def load_full_state(
    model: nn.Module, optimizer: torch.optim.Optimizer, model_state: dict, optim_state: dict
) -> None:
    """Load full state dicts (each rank passes the same ones) into a plain, DDP or FSDP2 model."""
    from torch.distributed.checkpoint import state_dict as dcp

    options = dcp.StateDictOptions(full_state_dict=True)
    dcp.set_model_state_dict(model, model_state, options=options)
    dcp.set_optimizer_state_dict(model, optimizer, optim_state, options=options)


def checkpoint_activations(model: Transformer) -> None:
    """Recompute each attention and MLP module's activations in the backward pass instead of
    storing them: less memory for one more forward. Parameter names do not change."""
    for sublayer in model.sublayers():
        sublayer.forward = _recomputed(sublayer.forward)


def _recomputed(forward: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run


def mean_over_ranks(value: torch.Tensor, world: World) -> torch.Tensor:
    if world.size > 1:
        dist.all_reduce(value, op=dist.ReduceOp.AVG if value.is_cuda else dist.ReduceOp.SUM)
        if not value.is_cuda:  # gloo has no AVG
            value /= world.size
    return value


def mean_loss_over_ranks(
    loss: torch.Tensor, signalled: bool, world: World
) -> tuple[torch.Tensor, bool]:
    """The step's loss averaged over ranks (on the device), and whether any rank was signalled.
    One all-reduce carries both; reading the flag is the one host sync per step with several
    ranks (none on one process)."""
    if world.size == 1:
        return loss, signalled
    flag = loss.new_tensor(float(signalled))
    reduced = mean_over_ranks(torch.stack((loss, flag)), world)
    return reduced[0], bool(reduced[1] > 0)


def barrier(world: World) -> None:
    if world.size > 1:
        dist.barrier()
