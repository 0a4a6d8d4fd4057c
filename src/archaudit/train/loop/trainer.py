"""The training loop: one model, one recipe, one seed → a run directory.

Writes `spec.json` (resolved config, recipe hash, seed), `env.json`, `metrics.jsonl` (one row per
step), `events.jsonl` (spikes, rising gradient norm, divergence), `checkpoint/` and finally
`train.json` (names: `archaudit.rundir`). Rerunning on the same directory resumes from the newest
valid checkpoint and reproduces the uninterrupted run exactly: batches are keyed by step, and
every RNG state, the optimizer and the callbacks' states are in the checkpoint.

Checkpoints are taken only at step boundaries, where the step they record and the weights,
optimizer, monitor and RNG states agree. SIGINT and SIGTERM are recorded, not raised: the step
they arrive in finishes, is saved, and then the trainer raises KeyboardInterrupt. An exception
inside a step (a callback, validation, a second signal) saves nothing, so the partial step is
rolled back to the newest checkpoint when the run is rerun.

`train` settles the run (device, corpus, identity) and builds a `Trainer` once. `Trainer.fit` is
one small loop: the shared `train_step` (`train/step.py`, which `plan`'s probe also times), the
cross-rank loss all-reduce and the update, skipped on the device once a loss or gradient norm is
not finite; every hook else is a callback (`train/callbacks`): MoE routing, the stability monitor,
validation, checkpointing, then the caller's (trackers). The step's values stay on the device
until the log cadence (`LOG_EVERY`, evaluation, checkpoint, last step, signal), so a step costs
no host sync on one process; the monitor then finds the same divergence step as a per-step check.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
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
from archaudit.metrics import PRIMARY_LOSS
from archaudit.model import build_model, count_parameters, training_flops_per_token
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
from archaudit.train.callbacks import Callback, Row, StepState
from archaudit.train.callbacks.checkpointing import Checkpointing
from archaudit.train.callbacks.routing import Routing
from archaudit.train.callbacks.signals import Signals
from archaudit.train.callbacks.stability import Stability
from archaudit.train.callbacks.validation import Validation
from archaudit.train.distributed import World, init_world, mean_loss_over_ranks
from archaudit.train.interrupts import SignalsAtStepEnd
from archaudit.train.provenance import environment, require_same_run, run_spec
from archaudit.train.run import RunInputs, TrainResult
from archaudit.train.step import Batch, StepClock

LOG_EVERY = 10
"""Steps between reads of the pending steps' values at most (torchtitan's default log_freq)."""


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
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Train (or resume, or return the stored result of) the run in `out_dir`, with
    `callbacks` after the trainer's own. A directory that holds another run (model, hashed
    recipe, seed or corpus differ) is refused, naming the keys that differ."""
    out = Path(out_dir)
    check_train_target(out)
    device, world = place(recipe)
    corpus = prepare_corpus(recipe)
    if model_cfg.vocab_size != corpus.tokenizer.vocab_size:  # set where the model is built
        raise ConfigError(
            f"model.vocab_size = {model_cfg.vocab_size}, but recipe.tokenizer = "
            f"{recipe.tokenizer!r} has {corpus.tokenizer.vocab_size} tokens: build the model "
            "with archaudit.data.vocabulary.trained_model"
        )
    spec = run_spec(model_cfg, recipe, seed, corpus)
    stored_spec = read_json_object(out / SPEC) if (out / SPEC).is_file() else None
    if stored_spec is not None:
        require_same_run(out, stored_spec, spec)
    if (out / TRAIN_RESULT).is_file():
        return stored_result(out)
    run = RunInputs(model_cfg, recipe, seed, corpus, spec, out, device, world)
    return Trainer(run, callbacks).fit()


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


@dataclass(frozen=True)
class Pending:
    """A trained step whose values are not read yet, and when it started and ended."""

    state: StepState
    started: Any
    ended: Any


class Trainer:
    """One run's model, training step, data, callbacks and checkpoint state, built once and
    restored from the newest checkpoint when there is one. `fit` runs the loop from there."""

    def __init__(self, run: RunInputs, callbacks: Sequence[Callback] = ()) -> None:
        self.run, self.tally = run, Tally()
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
        signals = (Signals(),) if recipe.log_signals else ()  # docs/stability.md
        self.callbacks = (
            Routing(),
            Stability(),
            Validation(),
            *signals,
            Checkpointing(),
            *callbacks,
        )
        torch.manual_seed(derive_seed(run.seed, "dropout"))
        stateful = {c.state_key: c for c in self.callbacks if c.state_key}
        self.state = ckpt.TrainingState(model, self.parts.optimizer, stateful)
        self.start = ckpt.resume(run.out, self.state)
        if world.is_main:
            _truncate_jsonl(run.out / METRICS, self.start)
            _truncate_jsonl(run.out / EVENTS, self.start)
        order = data_order_seed(recipe, run.seed)
        self.train_data = BatchSampler(run.corpus.train, cfg.context_length, order)
        self.val_data = BatchSampler(run.corpus.val, cfg.context_length, recipe.data_seed + 1)
        self.clock = StepClock(run.device)
        self.skip = torch.zeros((), device=run.device)
        """1.0 once a step's loss or gradient norm was not finite: updates are skipped."""
        self.pending: list[Pending] = []
        self.saved_step: int | None = None

    @property
    def model(self) -> nn.Module:
        """The plain module (not parallelised or compiled): what callbacks measure."""
        return self.parts.model

    def fit(self) -> TrainResult:
        """Train from the resumed step to the last, or until the run diverges or a signal
        stops it after a saved step."""
        recipe, world = self.run.recipe, self.run.world
        for callback in self.callbacks:
            callback.pre_train(self)
        with self.progress_bar() as bar, SignalsAtStepEnd(world) as signals:
            for step in range(self.start, recipe.steps):
                self.pending.append(self.train_step(step, signals))
                bar.update(advance=1)
                if not (self.log_due(step + 1) or signals.stop_now()):
                    continue
                if not self.settle(bar):
                    break
                for callback in self.callbacks:
                    callback.post_log(self, step + 1)
                self.stop_if_signalled(step + 1, signals)
        return self.result(signals)

    def train_step(self, step: int, signals: SignalsAtStepEnd) -> Pending:
        """Step `step` on the device: forward, backward, clip, the cross-rank loss, the update
        unless a step was not finite, and the callbacks' `post_step`."""
        started = self.clock.mark()
        out = training.train_step(self.parts, step, self.batches(step))
        # the cross-rank all-reduce, before any rank asks `stop_now`
        loss, any_signal = mean_loss_over_ranks(out.loss, signals.signalled, self.run.world)
        signals.agree(any_signal)
        self.skip = torch.maximum(self.skip, training.nonfinite(loss, out.grad_norm))
        training.apply_update(self.parts, self.skip)
        state = StepState(step + 1, loss, out.grad_norm, out.lr)
        for callback in self.callbacks:
            callback.post_step(self, state)
        return Pending(state, started, self.clock.mark())

    def batches(self, step: int) -> Iterator[Batch]:
        """This rank's micro-batches of `step`, drawn as the step asks for them."""
        world = self.run.world
        for m in range(self.run.recipe.grad_accumulation):
            yield self.train_data.batch((step, m), self.micro, world.rank, world.size)

    def log_due(self, step: int) -> bool:
        recipe = self.run.recipe
        return (
            len(self.pending) >= LOG_EVERY
            or self.eval_due(step)
            or step % recipe.checkpoint_every == 0
        )

    def eval_due(self, step: int) -> bool:
        return step % self.run.recipe.eval_every == 0 or step == self.run.recipe.steps

    def settle(self, bar: Any) -> bool:
        """Read the pending steps' values in one transfer, then for each step in order: its
        row, the callbacks' `record`, at an evaluation step `at_eval`, metrics.jsonl and
        `log`. False when a step diverged (its row and those after it are never written)."""
        pending, self.pending = self.pending, []
        values = torch.stack(
            [torch.stack((p.state.loss.float(), p.state.grad_norm.float())) for p in pending]
        ).tolist()
        for p, (loss, grad_norm) in zip(pending, values, strict=True):
            seconds = self.clock.seconds(p.started, p.ended)
            row = self.row(p.state, loss, grad_norm, seconds)
            for callback in self.callbacks:
                callback.record(self, p.state, row)
            if self.tally.diverged_step is not None:
                return False
            self.count(row, seconds)
            if self.eval_due(p.state.step):
                for callback in self.callbacks:
                    callback.at_eval(self, row)
                self.tally.last_val = row.get(PRIMARY_LOSS, self.tally.last_val)
            _append_jsonl(self.run.out / METRICS, [row], self.run.world)
            for callback in self.callbacks:
                callback.log(row)
            bar.update(loss=row["loss"], tps=row["tokens_per_s"])
        return True

    def row(self, state: StepState, loss: float, grad_norm: float, seconds: float) -> Row:
        return {
            "step": state.step,
            "tokens": state.step * self.tokens_per_step,
            "loss": loss,
            "lr": state.lr,
            "grad_norm": grad_norm,
            "tokens_per_s": self.tokens_per_step / seconds,
        }

    def count(self, row: Row, seconds: float) -> None:
        """Count a recorded (not diverged) step in the tally."""
        self.tally.session_tokens += self.tokens_per_step
        self.tally.session_time += seconds
        self.tally.last_loss = row["loss"]

    def diverge(self, step: int, detail: str) -> None:
        """Stop the run at `step` (a callback's `record` found it diverged)."""
        self.tally.status, self.tally.diverged_step = "diverged", step
        warn(f"run diverged at step {step} ({detail}); stopping cleanly")

    def append_events(self, events: list[dict[str, Any]]) -> None:
        _append_jsonl(self.run.out / EVENTS, events, self.run.world)

    def stop_if_signalled(self, step: int, signals: SignalsAtStepEnd) -> None:
        """After a signal, save this step (if not just saved) and raise KeyboardInterrupt.
        Asked after the save, so that a signal during the save stops here too."""
        stop = signals.stop_now()
        if stop and step < self.run.recipe.steps:
            if self.saved_step != step:
                self.save(step)
            warn(f"{stop}: saved a checkpoint at step {step}; a rerun resumes there")
            raise KeyboardInterrupt

    def save(self, step: int) -> None:
        run = self.run
        ckpt.save(run.out, step, self.state, keep=run.recipe.keep_checkpoints, world=run.world)
        self.saved_step = step

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
        for callback in self.callbacks:
            callback.post_train(self, result)
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
