"""What one run costs on this machine, measured once per machine and shape and cached.

A run is a process: it starts (the interpreter, torch and archaudit's imports, the cached
corpus), builds and warms up its model (allocation, kernel choice, compilation), trains its
steps, validates every `eval_every` steps, saves every `checkpoint_every` steps and scores its
suite. `measure_shape` times each part on a scale's baseline, the way the run does it: the
trainer's own step (`archaudit.train.step`) after `WARMUP_STEPS` untimed ones, a validation
batch, a checkpoint save, and the suite on the random-initialised model (its items cost the same
forward passes as a trained model's). `startup` times a fresh process importing what `run-one`
imports, once per machine. Every part is measured in wall and CPU seconds (user + system), so
that an estimate made on a loaded machine can be read in CPU time too.

Results are cached in `<cache>/probes/` under a key of this machine (host, CPU, torch, device,
threads) and the shape (model config, the step's recipe fields, the suite and its limit): a
second `plan` probes nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.config import ModelConfig, to_dict
from archaudit.files import atomic_write_text, cache_dir
from archaudit.progress import log

if TYPE_CHECKING:
    from archaudit.audit.plan import RunSpec

PROBE_STEPS = 2
WARMUP_STEPS = 2
"""Untimed: the first step pays for allocation, kernel selection and compilation. Under
torch.compile the second recompiles once (the first call fills Python-side caches, such as
RoPE's cos/sin tables, that the compiled graph's guards check): 0.8 s against a steady
0.003 s for a 1-layer, d_model 32 model on CPU."""
SUITE_PROBE_ITEMS = 20
"""Items per task scored when timing the suite; the time is scaled to the run's limit."""
STEP_FIELDS = (
    "batch_tokens", "grad_accumulation", "compile", "activation_checkpointing", "precision",
    "device", "parallel", "eval_batches", "corpus", "corpus_chars", "tokenizer",
)  # fmt: skip
"""The recipe fields a shape's costs depend on (not the LR, steps or cadences)."""
RUN_IMPORTS = "import archaudit.audit.runner, archaudit.train.trainer, archaudit.evals.suites"


@dataclass(frozen=True)
class Timed:
    """Seconds of wall time and of this process's CPU time (user + system)."""

    wall: float
    cpu: float

    def __add__(self, other: Timed) -> Timed:
        return Timed(self.wall + other.wall, self.cpu + other.cpu)

    def __mul__(self, k: float) -> Timed:
        return Timed(self.wall * k, self.cpu * k)


ZERO = Timed(0.0, 0.0)


@dataclass(frozen=True)
class ShapeCost:
    """One shape's parts, measured on this machine."""

    step: Timed
    """One steady training step (all its micro-batches)."""
    warmup: Timed
    """The first steps' excess over steady ones: allocation, kernel choice, compilation."""
    val_batch: Timed
    """One validation batch's forward pass."""
    save: Timed
    """One checkpoint save."""
    suite: Timed
    """The suite at the run's limit (ZERO without a suite)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShapeCost:
        return cls(**{f.name: Timed(**data[f.name]) for f in dataclasses.fields(cls)})


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def timed(into: list[Timed]) -> Iterator[None]:
    """Append the block's wall and CPU seconds to `into`."""
    wall, cpu = time.perf_counter(), _cpu()
    yield
    into.append(Timed(time.perf_counter() - wall, _cpu() - cpu))


def machine(device: str, threads: int) -> dict[str, Any]:
    """What a measurement depends on besides the shape."""
    import torch

    return {
        "host": platform.node(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": device,
        "threads": threads or torch.get_num_threads(),
    }


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), "")


def cached(
    key: dict[str, Any], what: str, measure: Callable[[], dict[str, Any]] | None
) -> dict[str, Any] | None:
    """`measure()`'s result stored under `key`; measured (saying so) when absent, or None
    without `measure`."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    path = cache_dir() / "probes" / f"{digest}.json"
    try:
        return json.loads(path.read_text())["value"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if measure is None:
        return None
    log(f"plan: measuring {what} on this machine (once; cached in {path.parent})")
    value = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"key": key, "value": value}, indent=2))
    return value


def startup(device: str, threads: int, *, measure: bool = True) -> Timed | None:
    """A run's process start: a fresh interpreter importing what `run-one` imports (None
    when not cached and not `measure`)."""

    def run() -> dict[str, Any]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        subprocess.run([sys.executable, "-c", RUN_IMPORTS], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return dataclasses.asdict(Timed(time.perf_counter() - wall, cpu))

    key = {"machine": machine(device, threads), "imports": RUN_IMPORTS}
    value = cached(key, "a run's start-up", run if measure else None)
    return None if value is None else Timed(**value)


def shape_cost(
    model_cfg: ModelConfig, run: RunSpec, threads: int, *, measure: bool = True
) -> ShapeCost | None:
    """The run's shape measured here (`measure_shape`), or its cached measurement (None when
    not cached and not `measure`)."""
    recipe = to_dict(run.recipe)
    key = {
        "machine": machine(run.recipe.device, threads),
        "model": to_dict(model_cfg),
        "recipe": {name: recipe[name] for name in STEP_FIELDS},
        "suite": run.suite,
        "limit": run.eval_limit,
    }
    what = f"scale {run.scale} (training steps, validation, a checkpoint"
    what += f", the {run.suite} suite)" if run.suite else ")"
    probe = lambda: measure_shape(model_cfg, run, threads).to_json()  # noqa: E731
    value = cached(key, what, probe if measure else None)
    return None if value is None else ShapeCost.from_json(value)


def measure_shape(model_cfg: ModelConfig, run: RunSpec, threads: int) -> ShapeCost:
    """Time the run's parts on random tokens: `WARMUP_STEPS` + `PROBE_STEPS` training steps,
    one validation batch, one checkpoint save, and the suite at `SUITE_PROBE_ITEMS` items."""
    import torch

    from archaudit.model import build_model
    from archaudit.train import step as training
    from archaudit.train.distributed import World
    from archaudit.train.trainer import micro_batch, resolve_device

    if threads:
        torch.set_num_threads(threads)
    recipe = run.recipe
    device = resolve_device(recipe.device)
    training.set_matmul_precision(device)
    parts = training.build_training(build_model(model_cfg).to(device), recipe, device, World())
    n_seq = micro_batch(model_cfg, recipe, World())
    x = torch.randint(model_cfg.vocab_size, (n_seq, model_cfg.context_length), device=device)
    steps: list[Timed] = []
    for step in range(WARMUP_STEPS + PROBE_STEPS):
        with timed(steps):
            training.train_step(parts, step, [(x, x)] * recipe.grad_accumulation)
            training.apply_update(parts)
            _synchronize(device)
    steady = sum(steps[WARMUP_STEPS:], ZERO) * (1 / PROBE_STEPS)
    warmup = sum(steps[:WARMUP_STEPS], ZERO) + steady * -WARMUP_STEPS
    parts.model.eval()
    val: list[Timed] = []
    with timed(val), torch.no_grad(), training.autocast(device, recipe):
        parts.model(x)
        _synchronize(device)
    return ShapeCost(
        step=steady,
        warmup=Timed(max(warmup.wall, 0.0), max(warmup.cpu, 0.0)),
        val_batch=val[0],
        save=_save_time(parts),
        suite=_suite_time(parts.model, run, device),
    )


def _synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":  # the step's own wall time
        torch.cuda.synchronize()


def _save_time(parts: Any) -> Timed:
    """One checkpoint of the model and its optimizer, written as the trainer writes it."""
    from archaudit.train import checkpoint as ckpt
    from archaudit.train.distributed import World

    state = ckpt.TrainingState(parts.model, parts.optimizer, {})
    saves: list[Timed] = []
    with tempfile.TemporaryDirectory() as tmp, timed(saves):
        ckpt.save(Path(tmp), 1, state, keep=1, world=World())
    return saves[0]


def _suite_time(model: Any, run: RunSpec, device: Any) -> Timed:
    """The suite scored on the probe's model at `SUITE_PROBE_ITEMS` items per task, scaled to
    the run's limit (the suite's own limits when it sets none)."""
    if not run.suite:
        return ZERO
    from archaudit.data.corpus import prepare_corpus
    from archaudit.evals import evaluate
    from archaudit.evals.suites import load_suite

    suite = load_suite(run.suite)
    limits = [run.eval_limit or spec.limit for spec in suite.tasks]
    full = max([n for n in limits if n is not None], default=SUITE_PROBE_ITEMS)
    probe_items = min(full, SUITE_PROBE_ITEMS)
    tokenizer = prepare_corpus(run.recipe).tokenizer
    scored: list[Timed] = []
    with timed(scored):
        evaluate(
            (model, tokenizer), suite, limit=probe_items, device=str(device), show_progress=False
        )
    return scored[0] * (full / probe_items)
