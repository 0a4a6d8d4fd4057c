"""The training loop: one model, one recipe, one seed → a run directory.

Writes `spec.json` (resolved config, recipe hash, seed), `env.json`, `metrics.jsonl` (one row per
step), `events.jsonl` (spikes, rising gradient norm, divergence), `checkpoint/` and finally
`train.json`. Rerunning on the same directory resumes from the newest valid checkpoint and
reproduces the uninterrupted run exactly: batches are keyed by step, and every RNG state, the
optimizer and the stability monitor are in the checkpoint.
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

from archaudit.config import ModelConfig, Recipe, recipe_hash, to_dict
from archaudit.data.corpus import TokenCorpus, prepare_corpus
from archaudit.data.sampler import BatchSampler
from archaudit.data.tokenizers import HFTokenizer
from archaudit.errors import ConfigError
from archaudit.files import atomic_write_text
from archaudit.model import build_model, count_parameters, training_flops_per_token
from archaudit.progress import progress, warn
from archaudit.train import checkpoint as ckpt
from archaudit.train.distributed import World, barrier, init_world, mean_over_ranks
from archaudit.train.monitor import StabilityMonitor
from archaudit.train.optim import lr_at, make_optimizer
from archaudit.train.provenance import environment

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
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


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
    """Train (or resume, or return the stored result of) the run in `out_dir`."""
    out = Path(out_dir)
    done = out / "train.json"
    if done.is_file():
        return TrainResult(**json.loads(done.read_text()))
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    device = resolve_device(recipe.device)
    world = init_world(device.type)
    if world.size > 1 and device.type == "cuda":
        device = torch.device("cuda", world.local_rank)
        torch.cuda.set_device(device)
    corpus = prepare_corpus(recipe)
    model_cfg = dataclasses.replace(model_cfg, vocab_size=corpus.tokenizer.vocab_size)
    n_seq = recipe.sequences_per_step(model_cfg.context_length)
    if n_seq // recipe.grad_accumulation % world.size:
        raise ConfigError(
            f"{n_seq // recipe.grad_accumulation} sequences per micro-step cannot be split "
            f"evenly over {world.size} ranks; adjust recipe.batch_tokens"
        )
    torch.manual_seed(derive_seed(seed, "init"))
    model = build_model(model_cfg).to(device)
    params = count_parameters(model)
    flops_per_token = training_flops_per_token(model_cfg, params)
    if world.is_main:
        _write_spec(out, model_cfg, recipe, seed, corpus)
        (out / "env.json").write_text(json.dumps(environment(device), indent=2))
    optimizer = make_optimizer(model, recipe)
    monitor = StabilityMonitor()
    torch.manual_seed(derive_seed(seed, "dropout"))

    start = 0
    state = ckpt.load_latest(out / "checkpoint")
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        monitor.load_state_dict(state["monitor"])
        ckpt.set_rng_state(state["rng"])
        start = state["step"]
    if world.is_main:
        _truncate_jsonl(out / "metrics.jsonl", start)
        _truncate_jsonl(out / "events.jsonl", start)

    train_sampler = BatchSampler(
        corpus.train, model_cfg.context_length, data_order_seed(recipe, seed)
    )
    val_sampler = BatchSampler(corpus.val, model_cfg.context_length, recipe.data_seed + 1)
    micro = n_seq // recipe.grad_accumulation
    step_model: nn.Module = model
    if world.size > 1:
        step_model = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    if recipe.compile:
        step_model = torch.compile(step_model)

    def save(step: int) -> None:
        if world.is_main:
            ckpt.save_checkpoint(
                out / "checkpoint",
                step,
                {
                    "step": step,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "monitor": monitor.state_dict(),
                    "rng": ckpt.rng_state(),
                },
                keep=recipe.keep_checkpoints,
            )
        barrier(world)

    tokens_per_step = n_seq * model_cfg.context_length
    status, diverged_step, last_loss, last_val = "ok", None, None, None
    session_tokens, session_time = 0, 0.0
    step = start
    stats = "loss {task.fields[loss]:.3f}  {task.fields[tps]:,.0f} tok/s"
    bar_fields = {"loss": float("nan"), "tps": 0.0}
    with progress("train", recipe.steps, completed=start, stats=stats, **bar_fields) as bar:
        try:
            for step in range(start, recipe.steps):
                t0 = time.perf_counter()
                lr = lr_at(step, recipe)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                loss_sum = torch.zeros((), device=device)
                for m in range(recipe.grad_accumulation):
                    x, y = train_sampler.batch((step, m), micro, world.rank, world.size)
                    sync = m == recipe.grad_accumulation - 1 or world.size == 1
                    no_sync = getattr(step_model, "no_sync", contextlib.nullcontext)
                    with contextlib.nullcontext() if sync else no_sync():
                        with autocast(device, recipe):
                            loss = step_model(x.to(device), targets=y.to(device))
                        (loss / recipe.grad_accumulation).backward()
                    loss_sum += loss.detach()
                grad_norm = float(nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip))
                loss_value = float(mean_over_ranks(loss_sum / recipe.grad_accumulation, world))
                events = monitor.observe(step + 1, loss_value, grad_norm)
                _append_jsonl(out / "events.jsonl", events, world)
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
                }
                if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
                    last_val = validation_loss(model, val_sampler, recipe, device, micro)
                    row["val_loss"] = last_val
                _append_jsonl(out / "metrics.jsonl", [row], world)
                for hook in hooks:
                    hook(row)
                bar.update(advance=1, loss=loss_value, tps=tokens_per_step / dt)
                if (step + 1) % recipe.checkpoint_every == 0 or step + 1 == recipe.steps:
                    save(step + 1)
        except KeyboardInterrupt:
            warn(f"interrupted: saving a checkpoint at step {step} so a rerun resumes there")
            save(step)
            raise

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
    )
    if world.is_main:
        atomic_write_text(done, json.dumps(result.to_json(), indent=2))
    return result


def _write_spec(
    out: Path, cfg: ModelConfig, recipe: Recipe, seed: int, corpus: TokenCorpus
) -> None:
    spec = {
        "model": to_dict(cfg),
        "recipe": to_dict(recipe),
        "recipe_hash": recipe_hash(recipe),
        "seed": seed,
        "tokenizer": recipe.tokenizer,
        "corpus_key": corpus.key,
        "bytes_per_token": corpus.bytes_per_token,
    }
    path = out / "spec.json"
    if path.is_file():
        old = json.loads(path.read_text())
        differs = [
            k for k in ("model", "recipe_hash", "seed", "corpus_key") if old.get(k) != spec[k]
        ]
        if differs:
            raise ConfigError(
                f"{out} already holds a different run (differs in: {', '.join(differs)}); "
                "choose another --out or delete that directory"
            )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(spec, indent=2))
    if isinstance(corpus.tokenizer, HFTokenizer):
        corpus.tokenizer.save(out / "tokenizer.json")


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
    kept = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("step", 0) <= step:
            kept.append(line + "\n")
    atomic_write_text(path, "".join(kept))
