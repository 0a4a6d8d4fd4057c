"""The training loop: one model, one recipe, one seed → a run directory.

Writes `spec.json` (resolved config, recipe hash, seed), `env.json`, `metrics.jsonl` (one row per
step), `events.jsonl` (spikes, rising gradient norm, divergence), `checkpoint/` and finally
`train.json` (names: `archaudit.rundir`). Rerunning on the same directory resumes from the newest
valid checkpoint and reproduces the uninterrupted run exactly: batches are keyed by step, and
every RNG state, the optimizer and the stability monitor are in the checkpoint.

Checkpoints are taken only at step boundaries, where the step they record and the weights,
optimizer, monitor and RNG states agree. SIGINT and SIGTERM are recorded, not raised: the step
they arrive in finishes, is saved, and then the trainer raises KeyboardInterrupt. An exception
inside a step (a hook, validation, a second signal) saves nothing, so the partial step is rolled
back to the newest checkpoint when the run is rerun.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from archaudit.config import ModelConfig, Recipe
from archaudit.data.corpus import TokenCorpus, prepare_corpus
from archaudit.data.sampler import BatchSampler
from archaudit.data.tokenizers import HFTokenizer
from archaudit.errors import ConfigError, DataError
from archaudit.files import atomic_write_text, read_json_object
from archaudit.model import build_model, count_parameters, training_flops_per_token
from archaudit.model.moe import routing_metrics
from archaudit.progress import progress, warn
from archaudit.rundir import (
    ENV,
    EVENTS,
    METRICS,
    SPEC,
    TOKENIZER,
    TRAIN_RESULT,
    check_train_target,
)
from archaudit.train import checkpoint as ckpt
from archaudit.train.distributed import (
    World,
    checkpoint_activations,
    choose_strategy,
    full_norm,
    gradient_sync,
    init_world,
    parallelize,
)
from archaudit.train.interrupts import SignalsAtStepEnd
from archaudit.train.monitor import StabilityMonitor
from archaudit.train.optim import lr_at, make_optimizer
from archaudit.train.provenance import environment, require_same_run, run_spec

MetricsHook = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class TrainResult:
    status: str  # "ok" | "diverged"
    steps: int
    tokens: int
    final_loss: float | None
    val_loss: float | None
    tokens_per_s: float
    params: int
    diverged_step: int | None = None
    flops_per_token: float = 0.0
    active_params: int = 0
    """Parameters a token's forward multiplies by (MoE: k of E experts); 0 in older results."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def derive_seed(seed: int, stream: str) -> int:
    """Independent streams (init, dropout, data order) from one run seed."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{stream}".encode()).digest()[:4], "little")


def data_order_seed(recipe: Recipe, seed: int) -> int:
    """Fixed by the recipe (default: seeds differ only in init), or also by the run seed."""
    if recipe.vary_data_order:
        return derive_seed(seed, f"data:{recipe.data_seed}")
    return recipe.data_seed


def resolve_device(name: str) -> torch.device:
    """The torch device `name` means here; a device this machine lacks is a ConfigError."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"device {name!r} is not a torch device (e.g. cpu, cuda:0)") from None
    if device.type == "cpu":
        return device
    backend = getattr(torch, device.type, None)
    if not (backend and backend.is_available()):
        raise ConfigError(f"device {name!r}: this machine has no {device.type} device")
    if device.index is not None and device.index >= backend.device_count():
        count = backend.device_count()
        raise ConfigError(f"device {name!r}: this machine has {count} {device.type} device(s)")
    return device


def autocast(device: torch.device, recipe: Recipe) -> contextlib.AbstractContextManager:
    """bf16 autocast with fp32 master weights; `auto` means bf16 on CUDA, fp32 on CPU."""
    bf16 = recipe.precision == "bf16" or (recipe.precision == "auto" and device.type == "cuda")
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)


@torch.no_grad()
def validation_loss(
    model: nn.Module, sampler: BatchSampler, recipe: Recipe, device: torch.device, n_seq: int
) -> float:
    """Mean next-token cross-entropy (nats/token) over fixed held-out batches."""
    model.eval()
    total = 0.0
    for i in range(recipe.eval_batches):
        x, y = sampler.batch((i,), n_seq)
        with autocast(device, recipe):
            logits = model(x.to(device))
        total += nn.functional.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten())
    model.train()
    return float(total) / recipe.eval_batches


def train(
    model_cfg: ModelConfig,
    recipe: Recipe,
    out_dir: str | Path,
    *,
    seed: int = 0,
    hooks: tuple[MetricsHook, ...] = (),
) -> TrainResult:
    """Train (or resume, or return the stored result of) the run in `out_dir`. A directory that
    holds another run (model, hashed recipe, seed or corpus differ) is refused, naming the keys."""
    out = Path(out_dir)
    check_train_target(out)
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    device = resolve_device(recipe.device)
    world = init_world(device.type)
    if world.size > 1 and device.type == "cuda":
        device = torch.device("cuda", world.local_rank)
        torch.cuda.set_device(device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 for fp32 matmuls; in env.json
    corpus = prepare_corpus(recipe)
    model_cfg = dataclasses.replace(model_cfg, vocab_size=corpus.tokenizer.vocab_size)
    spec = run_spec(model_cfg, recipe, seed, corpus)
    if (out / SPEC).is_file():
        require_same_run(out, read_json_object(out / SPEC), spec)
    if (out / TRAIN_RESULT).is_file():
        return stored_result(out)
    n_seq = recipe.sequences_per_step(model_cfg.context_length)
    if n_seq // recipe.grad_accumulation % world.size:
        raise ConfigError(
            f"{n_seq // recipe.grad_accumulation} sequences per micro-step cannot be split "
            f"evenly over {world.size} ranks; adjust recipe.batch_tokens"
        )
    torch.manual_seed(derive_seed(seed, "init"))
    model = build_model(model_cfg).to(device)
    params, active_params = count_parameters(model), model.active_parameters()
    flops_per_token = training_flops_per_token(model_cfg, active_params)
    if world.is_main:
        _write_spec(out, spec, corpus)
        (out / ENV).write_text(json.dumps(environment(device), indent=2))
    if recipe.activation_checkpointing:
        checkpoint_activations(model)
    # Shard (FSDP2 replaces parameters in place) before the optimizer is given them.
    step_model = parallelize(model, choose_strategy(recipe.parallel, params, device, world), device)
    if recipe.compile:
        step_model = torch.compile(step_model)
    optimizer = make_optimizer(model, recipe)
    monitor = StabilityMonitor()
    torch.manual_seed(derive_seed(seed, "dropout"))

    state = ckpt.TrainingState(model, optimizer, monitor)
    start = ckpt.resume(out, state)
    if world.is_main:
        _truncate_jsonl(out / METRICS, start)
        _truncate_jsonl(out / EVENTS, start)

    train_sampler = BatchSampler(
        corpus.train, model_cfg.context_length, data_order_seed(recipe, seed)
    )
    val_sampler = BatchSampler(corpus.val, model_cfg.context_length, recipe.data_seed + 1)
    micro = n_seq // recipe.grad_accumulation

    def save(step: int) -> None:
        ckpt.save(out, step, state, keep=recipe.keep_checkpoints, world=world)

    tokens_per_step = n_seq * model_cfg.context_length
    status, diverged_step, last_loss, last_val = "ok", None, None, None
    session_tokens, session_time = 0, 0.0
    stats = "loss {task.fields[loss]:.3f}  {task.fields[tps]:,.0f} tok/s"
    bar_fields = {"loss": float("nan"), "tps": 0.0}
    with (
        progress("train", recipe.steps, completed=start, stats=stats, **bar_fields) as bar,
        SignalsAtStepEnd(world) as signals,
    ):
        for step in range(start, recipe.steps):
            t0 = time.perf_counter()
            lr = lr_at(step, recipe)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss_sum = torch.zeros((), device=device)
            for m in range(recipe.grad_accumulation):
                x, y = train_sampler.batch((step, m), micro, world.rank, world.size)
                with gradient_sync(step_model, sync=m == recipe.grad_accumulation - 1):
                    with autocast(device, recipe):
                        loss = step_model(x.to(device), targets=y.to(device))
                    (loss / recipe.grad_accumulation).backward()
                loss_sum += loss.detach()
            grad_norm = full_norm(nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip))
            loss_value = signals.mean_loss(loss_sum / recipe.grad_accumulation)
            events = monitor.observe(step + 1, loss_value, grad_norm)
            routing = routing_metrics(model)  # {} without MoE layers
            events += monitor.observe_routing(step + 1, routing.get("moe_top_share", []))
            _append_jsonl(out / EVENTS, events, world)
            if any(e["event"] == "diverged" for e in events):
                status, diverged_step = "diverged", step + 1
                warn(
                    f"run diverged at step {step + 1} (loss {loss_value}, "
                    f"grad norm {grad_norm}); stopping cleanly"
                )
                break
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            session_tokens += tokens_per_step
            session_time += dt
            last_loss = loss_value
            row: dict[str, Any] = {
                "step": step + 1,
                "tokens": (step + 1) * tokens_per_step,
                "loss": loss_value,
                "lr": lr,
                "grad_norm": grad_norm,
                "tokens_per_s": tokens_per_step / dt,
                **routing,
            }
            if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
                last_val = validation_loss(model, val_sampler, recipe, device, micro)
                row["val_loss"] = last_val
            _append_jsonl(out / METRICS, [row], world)
            for hook in hooks:
                hook(row)
            bar.update(advance=1, loss=loss_value, tps=tokens_per_step / dt)
            periodic = (step + 1) % recipe.checkpoint_every == 0 or step + 1 == recipe.steps
            if periodic:
                save(step + 1)
            stop = signals.stop_now()  # asked after the save: a signal during it stops here too
            if stop and step + 1 < recipe.steps:
                if not periodic:
                    save(step + 1)
                warn(f"{stop}: saved a checkpoint at step {step + 1}; a rerun resumes there")
                raise KeyboardInterrupt

    completed = diverged_step - 1 if diverged_step else recipe.steps
    result = TrainResult(
        status=status,
        steps=completed,
        tokens=completed * tokens_per_step,
        final_loss=last_loss,
        val_loss=last_val,
        tokens_per_s=session_tokens / session_time if session_time else 0.0,
        params=params,
        diverged_step=diverged_step,
        flops_per_token=flops_per_token,
        active_params=active_params,
    )
    if world.is_main:
        atomic_write_text(out / TRAIN_RESULT, json.dumps(result.to_json(), indent=2))
    if signals.stop_now():  # it arrived in the last step: the result is stored, now stop
        raise KeyboardInterrupt
    return result


def stored_result(out: Path) -> TrainResult:
    """The result a finished run stored in train.json (a garbled one is refused, naming it)."""
    path = out / TRAIN_RESULT
    try:
        return TrainResult(**read_json_object(path))
    except TypeError as err:
        raise DataError(f"{path} is not a training result ({err})") from None


def _write_spec(out: Path, spec: dict[str, Any], corpus: TokenCorpus) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / SPEC, json.dumps(spec, indent=2))
    if isinstance(corpus.tokenizer, HFTokenizer):
        corpus.tokenizer.save(out / TOKENIZER)


def _append_jsonl(path: Path, rows: list[dict[str, Any]], world: World) -> None:
    if rows and world.is_main:
        with open(path, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()


def _truncate_jsonl(path: Path, step: int) -> None:
    """Drop rows past `step`: a resumed run rewrites them exactly as the lost process would
    have. A torn last line (killed mid-write) is dropped too."""
    if not path.is_file():
        return
    kept = [line + "\n" for line in path.read_text(errors="replace").splitlines()]
    atomic_write_text(path, "".join(line for line in kept if _logged_step(line) <= step))


def _logged_step(line: str) -> float:
    """The step of one log line; a line that is not a step's record sorts last (dropped)."""
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return float("inf")
    logged = row.get("step", 0) if isinstance(row, dict) else None
    return logged if type(logged) is int else float("inf")
