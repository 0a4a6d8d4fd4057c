"""One run end to end: claim → train (resuming) → evaluate → DONE. Idempotent and restartable.

Every executor launches exactly this (`archaudit run-one RUN_DIR`), so all state lives in the run
directory: a finished run is skipped, a killed one resumes from its newest checkpoint, one that
a live worker holds is left alone, and one whose DONE belongs to another run is refused. SIGTERM
(Slurm preemption, `kill`) lets the training step in progress finish, saves it as a checkpoint
and releases the claim, so a requeued job continues at once, exactly where it stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.execute.trackers import (
    TrackedRun,
    Tracker,
    check_tracker,
    tracked_run,
    tracker_callbacks,
    tracking,
)
from archaudit.audit.grid import store
from archaudit.audit.grid.claims import try_claim
from archaudit.audit.grid.plan import RunSpec
from archaudit.audit.grid.record import RoutingAtEnd, RunRecord
from archaudit.audit.launcher.launch import RunOptions, cli_command, sigterm_as_interrupt
from archaudit.config import ModelConfig, Recipe, to_dict
from archaudit.errors import ConfigError, DataError
from archaudit.files import atomic_write, atomic_write_text
from archaudit.metrics import PRIMARY_LOSS
from archaudit.names import BASELINE, ResultStatus
from archaudit.progress import log
from archaudit.rundir import ATTEMPTS, EVALS, FAILED, METRICS, checkpoint_dirs, checkpoint_step

if TYPE_CHECKING:  # the trainer (and torch) load only when a run trains
    from archaudit.train import TrainResult


def routing_summary(run_dir: Path) -> dict[str, float]:
    """An MoE run's routing at its last step, as run metrics (none without MoE layers)."""
    path = run_dir / store.METRICS
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    routing = RoutingAtEnd.of_rows(rows[-1:])
    return routing.summary() if routing else {}


def run_one(run_dir: str | Path, options: RunOptions | None = None) -> str:
    """Run one audit run to DONE. Returns "done", "skipped" (DONE already) or "busy" (a live
    worker holds the claim). A failure writes FAILED and re-raises."""
    run_dir, options = Path(run_dir), options or RunOptions()
    spec = store.read_spec(run_dir)
    if _finished(run_dir, spec):
        return "skipped"
    claim = try_claim(run_dir, options.stale_after_s)
    if claim is None:
        return "busy"
    try:
        if _finished(run_dir, spec):  # finished between our check and our claim
            return "skipped"
        claim.start_heartbeat(options.heartbeat_s)
        (run_dir / FAILED).unlink(missing_ok=True)
        with sigterm_as_interrupt():
            record = _execute(run_dir, spec, options)
        store.write_done(run_dir, record)
        return "done"
    except KeyboardInterrupt:
        log(f"{run_dir}: interrupted; a rerun resumes from the newest checkpoint")
        raise
    except Exception as err:
        summary = f"{type(err).__name__}: {err}"
        with contextlib.suppress(OSError):  # a full disk: the error itself is what to report
            atomic_write_text(run_dir / FAILED, f"{summary}\n\n{traceback.format_exc()}")
        raise
    finally:
        claim.release()


def _finished(run_dir: Path, spec: RunSpec) -> bool:
    """Whether DONE holds this run's result; a DONE of another run is refused."""
    done, foreign = store.read_done(run_dir, spec)
    if foreign:
        raise ConfigError(f"{foreign}; move that directory aside to run this one")
    return done is not None


PROCESS_CPU = "process_cpu_s"
"""The `train` key of a run's DONE file: the CPU seconds (user + system) of the attempt that
finished the run, its training and evaluation, this process and the processes it waited for
(torchrun's ranks). A resumed run's earlier attempts are not counted."""


def process_cpu_s() -> float:
    """User + system CPU seconds of this process and its reaped children so far."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _execute(run_dir: Path, spec: RunSpec, options: RunOptions) -> RunRecord:
    cpu_start = process_cpu_s()
    recipe = operational_recipe(spec, options)
    _record_attempt(run_dir, options)
    tracker_name = options.tracker if os.environ.get("RANK", "0") == "0" else ""
    with tracking(tracker_name, tracked_run(run_dir, spec)) as tracker:
        result = _train(run_dir, spec, options, recipe, tracker)
        metrics = run_metrics(run_dir, spec, result, recipe.device)
        if tracker is not None:
            tracker.summary(metrics)  # the evals beside the training curves
    return RunRecord.of_run(
        spec,
        status=result.status,
        diverged_step=result.diverged_step,
        metrics=metrics,
        train={**result.to_json(), PROCESS_CPU: round(process_cpu_s() - cpu_start, 3)},
        attempts=len((run_dir / ATTEMPTS).read_text().splitlines()),
    )


def _train(
    run_dir: Path, spec: RunSpec, options: RunOptions, recipe: Recipe, tracker: Tracker | None
) -> TrainResult:
    """Train here, or under torchrun over `options.ranks` processes; the tracker sees every
    metrics row either way (read back from metrics.jsonl after the ranks finish)."""
    from archaudit.train.loop.trainer import stored_result

    if options.ranks > 1 and "WORLD_SIZE" not in os.environ:
        ranks = dataclasses.replace(options, tracker="")
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={options.ranks}", "--no-python",
            *cli_command("run-one", str(run_dir), "--train-only", *ranks.to_args()),
        ]  # fmt: skip
        subprocess.run(command, check=True)
        if tracker is not None:
            for line in (run_dir / METRICS).read_text().splitlines():
                tracker.log(json.loads(line))
        return stored_result(run_dir)
    return train_only(run_dir, options, recipe=recipe, tracker=tracker)


def run_metrics(
    run_dir: Path, spec: RunSpec, result: TrainResult, device: str
) -> dict[str, float | None]:
    """A trained run's metrics as DONE records them (and `rerun` compares them): losses,
    total and active parameters, MoE routing, and the suite's scores when it has one."""
    if result.status != ResultStatus.OK:
        missing: dict[str, float | None] = {PRIMARY_LOSS: None}
        return missing | ({"downstream_avg": None} if spec.suite else {})
    metrics: dict[str, float | None] = {
        PRIMARY_LOSS: result.val_loss,
        "train_loss": result.final_loss,
        "params": float(result.params),
        "active_params": float(result.active_params or result.params),
        "tokens": float(result.tokens),  # with params: the (N, D) of `stats scaling`
    }
    metrics |= routing_summary(run_dir)
    if spec.suite:
        metrics |= evaluate_run(run_dir, spec, device)
    return metrics


def train_only(
    run_dir: Path,
    options: RunOptions,
    *,
    recipe: Recipe | None = None,
    tracker: Tracker | None = None,
) -> TrainResult:
    """Train (or resume) the run in this process; under torchrun every rank calls this."""
    from archaudit.train import train

    spec = store.read_spec(run_dir)
    recipe = recipe or operational_recipe(spec, options)
    return train(spec.model, recipe, run_dir, seed=spec.seed, callbacks=tracker_callbacks(tracker))


def operational_recipe(spec: RunSpec, options: RunOptions) -> Recipe:
    """The run's recipe with this launch's threads and device (fields outside the hash)."""
    changes: dict[str, Any] = {}
    if options.threads:
        changes["threads"] = options.threads
    if options.device:
        changes["device"] = options.device
    return dataclasses.replace(spec.recipe, **changes)


def evaluate_run(run_dir: Path, spec: RunSpec, device: str) -> dict[str, float]:
    """Score the run on its suite once: evals.json survives a crash before DONE."""
    from archaudit.evals import evaluate
    from archaudit.train.loop.trainer import resolve_device

    path = run_dir / EVALS
    stored = store.read_json(path)
    if stored is None:
        atomic_write(
            path,
            lambda tmp: evaluate(
                run_dir,
                spec.suite,
                limit=spec.eval_limit,
                out_path=tmp,
                device=str(resolve_device(device)),
            ),
        )
        stored = store.read_json(path)
    if stored is None or not isinstance(stored.get("metrics"), dict):
        raise DataError(f"{path} holds no metrics: delete it to score the run again")
    return stored["metrics"]


def _record_attempt(run_dir: Path, options: RunOptions) -> None:
    from archaudit.checkpoint_io import verify

    checkpoints = [c for c in checkpoint_dirs(run_dir) if verify(c) is None]
    attempt = {
        "started": time.time(),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "resume_step": checkpoint_step(checkpoints[-1]) if checkpoints else 0,
        "threads": options.threads,
        "ranks": options.ranks,
    }
    with open(run_dir / ATTEMPTS, "a") as f:
        f.write(json.dumps(attempt) + "\n")


def train_tracked(
    model: ModelConfig,
    recipe: Recipe,
    out: Path,
    *,
    seed: int = 0,
    arm: str = BASELINE,
    scale: str = "custom",
    tracker: str = "",
    suite: str = "",
    limit: int | None = None,
) -> tuple[TrainResult, dict[str, float | None]]:
    """`archaudit train`: one run outside an audit, evaluated on `suite` when given (into
    evals.json), mirrored to `tracker` (its summary: validation loss and every eval metric).
    Under torchrun only rank 0 tracks and evaluates."""
    from archaudit.evals import evaluate
    from archaudit.train import train

    if tracker:
        check_tracker(tracker)
    rank0 = os.environ.get("RANK", "0") == "0"
    config = {"model": to_dict(model), "recipe": to_dict(recipe), "seed": seed}
    run = TrackedRun("archaudit-train", out.name, arm, scale, seed, out, config)
    with tracking(tracker if rank0 else "", run) as tracked:
        result = train(model, recipe, out, seed=seed, callbacks=tracker_callbacks(tracked))
        metrics: dict[str, float | None] = {PRIMARY_LOSS: result.val_loss}
        metrics["train_loss"] = result.final_loss
        if suite and rank0 and result.status == ResultStatus.OK:
            metrics |= evaluate(out, suite, limit=limit, out_path=out / EVALS).metrics
        if tracked is not None:
            tracked.summary(metrics)
    return result, metrics
