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

`train` settles the run (device, corpus, identity) and builds a `Trainer` once. The loop in
`Trainer.fit` is a few named calls per step: the shared `train_step` (`train/step.py`, which
`plan`'s throughput probe also times), the cross-rank loss all-reduce, the stability monitor,
the update, validation, logging, the checkpoint save and the signal check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Iterator
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
from archaudit.train import step as training
from archaudit.train.distributed import World, init_world, mean_loss_over_ranks
from archaudit.train.interrupts import SignalsAtStepEnd
from archaudit.train.monitor import StabilityMonitor
from archaudit.train.provenance import environment, require_same_run, run_spec
from archaudit.train.signals import SignalLog
from archaudit.train.step import Batch, StepOutput, autocast

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainResult:
        return cls(**data)


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


@torch.no_grad()
def validation_loss(
    model: nn.Module, sampler: BatchSampler, recipe: Recipe, device: torch.device, n_seq: int
) -> float:
    """Mean next-token cross-entropy (nats/token) over fixed held-out batches."""
    model.eval()
    total = torch.zeros((), device=device)
    for i in range(recipe.eval_batches):
        x, y = sampler.batch((i,), n_seq)
        with autocast(device, recipe):
            logits = model(x.to(device))
        total += nn.functional.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten())
    model.train()
    return float(total) / recipe.eval_batches


@dataclass(frozen=True)
class RunInputs:
    """What `train` settles before a trainer is built: the run and where it trains."""

    model_cfg: ModelConfig
    """With the tokenizer's vocabulary."""
    recipe: Recipe
    seed: int
    corpus: TokenCorpus
    spec: dict[str, Any]
    """The run's identity (`provenance.run_spec`), written to spec.json."""
    out: Path
    device: torch.device
    world: World


@dataclass
class Tally:
    """What this process's loop has counted so far; the result is made from it."""

    status: str = "ok"
    diverged_step: int | None = None
    last_loss: float | None = None
    last_val: float | None = None
    session_tokens: int = 0
    session_time: float = 0.0


def train(
    model_cfg: ModelConfig,
    recipe: Recipe,
    out_dir: str | Path,
    *,
    seed: int = 0,
    hooks: tuple[MetricsHook, ...] = (),
) -> TrainResult:
    """Train (or resume, or return the stored result of) the run in `out_dir`. A directory
    that holds another run (model, hashed recipe, seed or corpus differ) is refused, naming
    the keys that differ."""
    out = Path(out_dir)
    check_train_target(out)
    device, world = place(recipe)
    corpus = prepare_corpus(recipe)
    model_cfg = dataclasses.replace(model_cfg, vocab_size=corpus.tokenizer.vocab_size)
    spec = run_spec(model_cfg, recipe, seed, corpus)
    stored_spec = read_json_object(out / SPEC) if (out / SPEC).is_file() else None
    if stored_spec is not None:
        require_same_run(out, stored_spec, spec)
    if (out / TRAIN_RESULT).is_file():
        return stored_result(out)
    run = RunInputs(model_cfg, recipe, seed, corpus, spec, out, device, world)
    return Trainer(run, hooks).fit()


def place(recipe: Recipe) -> tuple[torch.device, World]:
    """The device and the process group this process trains on. Under torchrun each rank
    takes the GPU of its local rank."""
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    device = resolve_device(recipe.device)
    world = init_world(device.type)
    if world.size > 1 and device.type == "cuda":
        device = torch.device("cuda", world.local_rank)
        torch.cuda.set_device(device)
    training.set_matmul_precision(device)
    return device, world


def micro_batch(model_cfg: ModelConfig, recipe: Recipe, world: World) -> int:
    """Sequences per micro-step, all ranks together; each rank draws its share of them."""
    micro = recipe.sequences_per_step(model_cfg.context_length) // recipe.grad_accumulation
    if micro % world.size:
        raise ConfigError(
            f"{micro} sequences per micro-step cannot be split "
            f"evenly over {world.size} ranks; adjust recipe.batch_tokens"
        )
    return micro


class Trainer:
    """One run's model, training step, monitor, data and checkpoint state, built once and
    restored from the newest checkpoint when there is one. `fit` runs the loop from there."""

    def __init__(self, run: RunInputs, hooks: tuple[MetricsHook, ...] = ()) -> None:
        self.run, self.hooks, self.tally = run, hooks, Tally()
        recipe, cfg, world = run.recipe, run.model_cfg, run.world
        self.micro = micro_batch(cfg, recipe, world)
        self.tokens_per_step = recipe.sequences_per_step(cfg.context_length) * cfg.context_length
        torch.manual_seed(derive_seed(run.seed, "init"))
        model = build_model(cfg).to(run.device)
        self.params, self.active_params = count_parameters(model), model.active_parameters()
        if world.is_main:
            _write_spec(run.out, run.spec, run.corpus)
            (run.out / ENV).write_text(json.dumps(environment(run.device), indent=2))
        self.parts = training.build_training(model, recipe, run.device, world)
        self.monitor = StabilityMonitor()
        self.signal_log = SignalLog() if recipe.log_signals else None
        torch.manual_seed(derive_seed(run.seed, "dropout"))
        self.state = ckpt.TrainingState(model, self.parts.optimizer, self.monitor)
        self.start = ckpt.resume(run.out, self.state)
        if world.is_main:
            _truncate_jsonl(run.out / METRICS, self.start)
            _truncate_jsonl(run.out / EVENTS, self.start)
        if self.signal_log is not None:  # the norms since the last validation, as logged
            self.signal_log.resume(run.out / METRICS)
        order = data_order_seed(recipe, run.seed)
        self.train_data = BatchSampler(run.corpus.train, cfg.context_length, order)
        self.val_data = BatchSampler(run.corpus.val, cfg.context_length, recipe.data_seed + 1)

    def fit(self) -> TrainResult:
        """Train from the resumed step to the last, or until the run diverges or a signal
        stops it after a saved step."""
        recipe, world = self.run.recipe, self.run.world
        with self.progress_bar() as bar, SignalsAtStepEnd(world) as signals:
            for step in range(self.start, recipe.steps):
                t0 = time.perf_counter()
                out = training.train_step(self.parts, step, self.batches(step))
                # the cross-rank all-reduce, before any rank asks `stop_now`
                loss, any_signal = mean_loss_over_ranks(out.loss, signals.signalled, world)
                signals.agree(any_signal)
                routing = routing_metrics(self.parts.model)  # {} without MoE layers
                if self.diverged(step + 1, loss, out.grad_norm, routing):
                    break
                training.apply_update(self.parts)
                if self.signal_log is not None:
                    self.signal_log.observe(out.grad_norm)
                row = self.record(step + 1, loss, out, routing, time.perf_counter() - t0)
                if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
                    row["val_loss"] = self.validate(row)
                self.log(row, bar)
                saved = self.checkpoint_if_due(step + 1)
                self.stop_if_signalled(step + 1, signals, saved)
        return self.result(signals)

    def batches(self, step: int) -> Iterator[Batch]:
        """This rank's micro-batches of `step`, drawn as the step asks for them."""
        world = self.run.world
        for m in range(self.run.recipe.grad_accumulation):
            yield self.train_data.batch((step, m), self.micro, world.rank, world.size)

    def diverged(self, step: int, loss: float, grad_norm: float, routing: dict[str, Any]) -> bool:
        """Give the step to the stability monitor and log what it flags. True when the run
        diverged (its update is then never applied)."""
        events = self.monitor.observe(step, loss, grad_norm)
        events += self.monitor.observe_routing(step, routing.get("moe_top_share", []))
        _append_jsonl(self.run.out / EVENTS, events, self.run.world)
        if not any(e["event"] == "diverged" for e in events):
            return False
        self.tally.status, self.tally.diverged_step = "diverged", step
        warn(f"run diverged at step {step} (loss {loss}, grad norm {grad_norm}); stopping cleanly")
        return True

    def record(
        self, step: int, loss: float, out: StepOutput, routing: dict[str, Any], seconds: float
    ) -> dict[str, Any]:
        """The metrics row of a finished step, counted in the tally."""
        self.tally.session_tokens += self.tokens_per_step
        self.tally.session_time += seconds
        self.tally.last_loss = loss
        return {
            "step": step,
            "tokens": step * self.tokens_per_step,
            "loss": loss,
            "lr": out.lr,
            "grad_norm": out.grad_norm,
            "tokens_per_s": self.tokens_per_step / seconds,
            **routing,
        }

    def validate(self, row: dict[str, Any]) -> float:
        """The validation loss; its forward passes also give the row its instability signals
        (`train/signals.py`) unless the recipe turns them off."""
        run, log = self.run, self.signal_log
        capture = contextlib.nullcontext() if log is None else log.capture(self.parts.model, row)
        with capture:
            self.tally.last_val = validation_loss(
                self.parts.model, self.val_data, run.recipe, run.device, self.micro
            )
        return self.tally.last_val

    def log(self, row: dict[str, Any], bar: Any) -> None:
        """Append the row to metrics.jsonl, hand it to the hooks and advance the bar."""
        _append_jsonl(self.run.out / METRICS, [row], self.run.world)
        for hook in self.hooks:
            hook(row)
        bar.update(advance=1, loss=row["loss"], tps=row["tokens_per_s"])

    def checkpoint_if_due(self, step: int) -> bool:
        """Save every `checkpoint_every` steps and at the last step; True when saved."""
        recipe = self.run.recipe
        due = step % recipe.checkpoint_every == 0 or step == recipe.steps
        if due:
            self.save(step)
        return due

    def stop_if_signalled(self, step: int, signals: SignalsAtStepEnd, saved: bool) -> None:
        """After a signal, save this step (if not just saved) and raise KeyboardInterrupt.
        Asked after the save, so that a signal during the save stops here too."""
        stop = signals.stop_now()
        if stop and step < self.run.recipe.steps:
            if not saved:
                self.save(step)
            warn(f"{stop}: saved a checkpoint at step {step}; a rerun resumes there")
            raise KeyboardInterrupt

    def save(self, step: int) -> None:
        run = self.run
        ckpt.save(run.out, step, self.state, keep=run.recipe.keep_checkpoints, world=run.world)

    def progress_bar(self) -> contextlib.AbstractContextManager:
        stats = "loss {task.fields[loss]:.3f}  {task.fields[tps]:,.0f} tok/s"
        fields = {"loss": float("nan"), "tps": 0.0}
        return progress("train", self.run.recipe.steps, completed=self.start, stats=stats, **fields)

    def result(self, signals: SignalsAtStepEnd) -> TrainResult:
        """The run's result, stored in train.json. A signal in the last step stops the
        process once the result is stored."""
        tally, run = self.tally, self.run
        completed = tally.diverged_step - 1 if tally.diverged_step else run.recipe.steps
        result = TrainResult(
            status=tally.status,
            steps=completed,
            tokens=completed * self.tokens_per_step,
            final_loss=tally.last_loss,
            val_loss=tally.last_val,
            tokens_per_s=tally.session_tokens / tally.session_time if tally.session_time else 0.0,
            params=self.params,
            diverged_step=tally.diverged_step,
            flops_per_token=training_flops_per_token(run.model_cfg, self.active_params),
            active_params=self.active_params,
        )
        if run.world.is_main:
            atomic_write_text(run.out / TRAIN_RESULT, json.dumps(result.to_json(), indent=2))
        if signals.stop_now():
            raise KeyboardInterrupt
        return result


def stored_result(out: Path) -> TrainResult:
    """The result a finished run stored in train.json (a garbled one is refused, naming it)."""
    path = out / TRAIN_RESULT
    try:
        return TrainResult.from_json(read_json_object(path) or {})
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
