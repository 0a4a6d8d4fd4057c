"""What one run costs on this machine, measured once per machine and shape and cached.

A run is a process: it starts (the interpreter, torch and archaudit's imports, the cached
corpus), builds and warms up its model (allocation, kernel choice, compilation), trains its
steps, validates every `eval_every` steps, saves every `checkpoint_every` steps and scores its
suite. `measure_shape` times each part on a scale's baseline, the way the run does it: the
trainer's own step (`archaudit.train.step`) after `WARMUP_STEPS` untimed ones, a validation
batch, a checkpoint save, and the suite on the random-initialised model (its items cost the same
forward passes as a trained model's). `startup` times a run's start, once per machine: a fork
of the local executor's warm server (`archaudit.audit.launcher.warm`), or for Ray and Slurm a fresh
process importing what `run-one` imports. Every part is measured in wall and CPU seconds (user +
system), so that an estimate made on a loaded machine can be read in CPU time too.

Results are cached in `<cache>/probes/` under a key of this machine (host, CPU, torch, device,
threads), archaudit's own code (`cost_code`: after an edit or an upgrade every entry is
measured again, not read at the old cost) and the shape (model config, the step's recipe
fields, the suite and its limit): a second `plan` probes nothing.

A machine shared with others is not as fast at every `plan`: each entry stores, beside its
seconds, the time of a fixed reference step (`reference_step`) taken in the same breath as the
measurement (`breath_reference`: right before it, the probe's neighbours paused), and it is read
back scaled by the reference's time now over its time then, so that timings taken at different
loads are all read at today's (issue 46: per-arm estimates taken at different loads were off by
5-16×). A stored entry is a ratio to its reference, so it is kept through any swing of the load
(issue 57: entries measured again at every swing past 2× never finished); a later `plan`
re-times only the reference. Two `plan`s side by side share the cache: an entry is measured
under a lock file beside it (`entry_lock`), and the second reads what the first measured.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import itertools
import json
import os
import platform
import resource
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING, Any

from archaudit.audit.launcher.launch import cli_command
from archaudit.audit.launcher.warm import COLD_START, warm_start
from archaudit.config import ModelConfig, to_dict
from archaudit.files import BadEntry, cache_dir, entry_or_compute, load_entry
from archaudit.progress import log

if TYPE_CHECKING:
    from archaudit.audit.grid.plan import RunSpec

PROBE_STEPS = 4
WARMUP_STEPS = 2
"""Untimed: the first step pays for allocation, kernel selection and compilation. Under
torch.compile the second recompiles once (the first call fills Python-side caches, such as
RoPE's cos/sin tables, that the compiled graph's guards check): 0.8 s against a steady
0.003 s for a 1-layer, d_model 32 model on CPU."""
WARM_STARTS = 3
"""Warm starts timed (their median) after the server's first, untimed one."""
SUITE_PROBE_ITEMS = 20
"""Items per task scored when timing the suite; the time is scaled to the run's limit."""
STEP_FIELDS = (
    "batch_tokens", "grad_accumulation", "compile", "activation_checkpointing", "precision",
    "device", "parallel", "eval_batches", "corpus", "corpus_chars", "tokenizer",
)  # fmt: skip
"""The recipe fields a shape's costs depend on (not the LR, steps or cadences)."""
REFERENCE_SIZE = 160
REFERENCE_MATMULS = 96
REFERENCE_REPEATS = 6
"""The reference step: `REFERENCE_REPEATS` chains of `REFERENCE_MATMULS` (160 × 160) matmuls
and tanh on one thread, about 0.3 s on an idle core: long enough to see the share of a core this
process gets now (a scheduler's slices are milliseconds), short against any probe."""
BREATH_REPEATS = 3
"""Repeats of the reference step timed beside each measurement (`breath_reference`)."""
REFERENCE = "reference"
"""The key of an entry's reference-step time, beside its measured seconds."""
WARM_START = tuple(cli_command("run-one", "--help"))
"""A warm start timed end to end: forked, the CLI parses its command line, and the child exits."""


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


def machine(device: str, threads: int, beside: int = 0) -> dict[str, Any]:
    """What a measurement depends on besides the shape: the machine, the code that runs, and
    how many runs step beside the measured one."""
    import torch

    return {
        "host": platform.node(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "code": cost_code(),
        "device": device,
        "threads": threads or torch.get_num_threads(),
        "beside": beside,
    }


@functools.cache
def cost_code() -> str:
    """The hash of archaudit's sources, once per process: an entry measured before an edit of
    the code (a faster rotation, a cheaper suite, a leaner loop) would state the old cost, so it
    is measured again rather than believed."""
    from archaudit.train.provenance import source_hash

    return source_hash()[:16]


NEIGHBOUR = "from archaudit.audit.planning.probe import neighbour; neighbour()"
PAUSE = "pause"
"""The line that pauses a neighbour (`Neighbours.pause`); it answers the same word."""


@dataclass
class Neighbours:
    """`count` processes that step the shape being measured beside the probe, as the audit's
    other workers step theirs: on a CPU, runs share its caches and memory bandwidth, and not
    every arm suffers alike (softpick's step at the tiny preset: 1.3× the baseline's alone,
    2.2× with a run beside it). They start at the first measurement, so a plan that measures
    nothing starts none; `close` ends them."""

    count: int
    procs: list[subprocess.Popen[str]] = dataclasses.field(default_factory=list)

    def step(self, model_cfg: ModelConfig, run: RunSpec, threads: int) -> None:
        """Have every neighbour build this shape and step it; returns once they all do."""
        if not self.count:
            return
        if not self.procs:
            self.procs = [
                subprocess.Popen(
                    [sys.executable, "-c", NEIGHBOUR], stdin=PIPE, stdout=PIPE, text=True
                )
                for _ in range(self.count)
            ]
        line = json.dumps({"model": to_dict(model_cfg), "run": run.to_json(), "threads": threads})
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        for proc in self.procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                self.close()
                raise RuntimeError("plan: a probe's neighbour process failed (its error is above)")

    def pause(self) -> None:
        """Have every neighbour stop stepping until its next shape (`step`), so that a
        reference step timed now sees the machine as its other users load it, not this probe."""
        for proc in self.procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(PAUSE + "\n")
            proc.stdin.flush()
        for proc in self.procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != PAUSE:
                self.close()
                raise RuntimeError("plan: a probe's neighbour process failed (its error is above)")

    def close(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                proc.stdin.close()  # end of input: the neighbour stops stepping and exits
        for proc in self.procs:
            proc.wait()
        self.procs = []

    def __enter__(self) -> Neighbours:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def neighbour() -> None:
    """A `Neighbours` process: each input line names a shape; build it, warm it up, say
    `ready`, then step it until the next line or the end of input."""
    import select

    from archaudit.audit.grid.plan import RunSpec
    from archaudit.config import build

    line = sys.stdin.readline()
    while line:
        if line.strip() == PAUSE:
            print(PAUSE, flush=True)
            line = sys.stdin.readline()
            continue
        data = json.loads(line)
        run = RunSpec.from_json(data["run"])
        model_cfg = build(ModelConfig, data["model"], section="model")
        parts, x = _training(model_cfg, run, data["threads"])
        for step in range(WARMUP_STEPS):
            _step(parts, step, x, run)
        print("ready", flush=True)
        step = WARMUP_STEPS
        while not select.select([sys.stdin], [], [], 0)[0]:
            _step(parts, step, x, run)
            step += 1
        line = sys.stdin.readline()


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), "")


def cached(
    key: dict[str, Any],
    what: str,
    measure: Callable[[], dict[str, Any]] | None,
    neighbours: Neighbours | None = None,
) -> dict[str, Any] | None:
    """`measure()`'s result stored under `key` beside the reference step's time taken in the
    same breath (`breath_reference`, the `neighbours` paused), read back at this machine's speed
    now (`at_speed`); measured (saying so) when absent or when the stored entry does not prove
    itself (`files.load_entry`: key, checksum, finite non-negative seconds, a reference beside
    them), or None without `measure`. The measurement holds the entry's lock (`entry_lock`): a
    second `plan` beside this one waits for it and reads it. A read-only or full cache only
    costs the measurement."""
    text = json.dumps(key, sort_keys=True)
    path = cache_dir() / "probes" / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.json"
    now = reference_step()

    def parse(value: Any) -> dict[str, Any]:
        return at_speed(_seconds(value), now)

    value = _quietly(path, text, parse)
    if value is None and measure is not None:
        run = measure

        def compute() -> dict[str, Any]:
            log(f"plan: measuring {what} on this machine (once; cached in {path.parent})")
            if neighbours is not None:
                neighbours.pause()
            then = breath_reference()
            return {**run(), REFERENCE: dataclasses.asdict(then)}

        with entry_lock(path):  # another plan may have measured it while this one waited
            value = entry_or_compute(path, text, parse, compute, "measured again")
    return None if value is None else {k: v for k, v in value.items() if k != REFERENCE}


def _quietly(path: Path, key: str, parse: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
    """The entry when it proves itself, else None without a word (the locked read that
    follows says why it is measured again)."""
    try:
        return load_entry(path, key, parse)
    except BadEntry:
        return None


@contextmanager
def entry_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `<entry>.lock` while the block runs: two processes that miss
    the same entry measure it once. The lock is a regular file opened without following a
    link or waiting for a FIFO; where it cannot be made (a read-only cache, something else
    in its place) the block runs unlocked: a cache may only cost time."""
    fd = _lock_file(path.with_suffix(".lock"))
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


def _lock_file(path: Path) -> int | None:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o666)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def at_speed(value: dict[str, Any], now: Timed) -> dict[str, Any]:
    """A stored entry's seconds (its reference left out) scaled to the machine's speed `now`:
    wall times by the reference step's wall now over then, CPU times by its CPU. ValueError
    when it has no reference (an older archaudit)."""
    if not isinstance(value.get(REFERENCE), dict):
        raise ValueError("no reference step beside it (written by an older archaudit)")
    then = Timed(**value[REFERENCE])
    scale = Timed(now.wall / max(then.wall, 1e-9), now.cpu / max(then.cpu, 1e-9))
    return _scaled({k: v for k, v in value.items() if k != REFERENCE}, scale)


def _scaled(value: Any, scale: Timed) -> Any:
    """A (nested) mapping of seconds with every `wall` leaf times `scale.wall` and every `cpu`
    leaf times `scale.cpu`."""
    if not isinstance(value, dict):
        return value
    return {
        k: v * getattr(scale, k) if k in ("wall", "cpu") and not isinstance(v, dict)
        else _scaled(v, scale)
        for k, v in value.items()
    }  # fmt: skip


@dataclass(frozen=True)
class Reference:
    """The reference step's time now: its mean, and its fastest and slowest repeat over the
    mean (how steady the machine's speed is: about 1 on an idle machine, further apart on a
    loaded one; `plan`'s range)."""

    mean: Timed
    fastest: float
    slowest: float


def reference_step() -> Timed:
    """This process's time for a fixed reference step on one thread (the mean of
    `REFERENCE_REPEATS`): what a share of a core is worth on this machine now."""
    return reference().mean


@functools.cache
def reference() -> Reference:
    """The reference step measured on one thread, `REFERENCE_REPEATS` times, once per process
    and first thing (before a probe starts its neighbours)."""
    mean, walls = _reference_times(REFERENCE_REPEATS)
    return Reference(mean, min(walls), max(walls))


def _reference_times(repeats: int) -> tuple[Timed, list[float]]:
    """(the mean time of the reference step over `repeats`, each repeat's wall over the mean)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    a = torch.randn(REFERENCE_SIZE, REFERENCE_SIZE, generator=generator) / REFERENCE_SIZE**0.5
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    times: list[Timed] = []
    try:
        for _ in range(repeats):
            with timed(times):
                b = a
                for _ in range(REFERENCE_MATMULS):
                    b = torch.tanh(b @ a)
    finally:
        torch.set_num_threads(threads)
    mean = sum(times, ZERO) * (1 / repeats)
    return mean, [t.wall / mean.wall for t in times]


def breath_reference() -> Timed:
    """The reference step's mean over `BREATH_REPEATS`, timed now: the one stored beside a
    measurement taken right after it."""
    return _reference_times(BREATH_REPEATS)[0]


def _seconds(value: Any) -> dict[str, Any]:
    """A stored measurement: a (nested) mapping whose leaves are finite seconds ≥ 0."""
    leaves = [value]
    while leaves:
        leaf = leaves.pop()
        if isinstance(leaf, dict) and leaf:
            leaves.extend(leaf.values())
        elif isinstance(leaf, bool) or not isinstance(leaf, int | float) or not 0 <= leaf < 1e9:
            raise ValueError(f"{leaf!r} is not a time in seconds")
    return value


def startup(device: str, threads: int, *, warm: bool, measure: bool = True) -> Timed | None:
    """A run's process start: forked from the executor's warm server (`warm`: the median of
    `WARM_STARTS`), or a fresh interpreter importing what `run-one` imports (None when not
    cached and not `measure`)."""

    def cold() -> dict[str, Any]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        subprocess.run([sys.executable, "-c", COLD_START], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return dataclasses.asdict(Timed(time.perf_counter() - wall, cpu))

    def forked() -> dict[str, Any]:
        return dataclasses.asdict(Timed(*warm_start(WARM_START, WARM_STARTS)))

    key = {"machine": machine(device, threads), "imports": COLD_START}  # alone: imports
    if warm:
        key["start"] = "warm"
    what = "a run's warm start" if warm else "a run's start-up"
    value = cached(key, what, (forked if warm else cold) if measure else None)
    return None if value is None else Timed(**value)


def audit_start(device: str, threads: int, *, warm: bool, measure: bool = True) -> Timed | None:
    """What an audit pays once, beside its runs: the `run` command's own interpreter (a cold
    start) and, with `warm` starts, its server's preload (a fresh server's first start less a
    forked one; None when not cached and not `measure`)."""

    def server() -> dict[str, Any]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        each = Timed(*warm_start(WARM_START, 1))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        total = Timed(time.perf_counter() - wall, cpu)
        return dataclasses.asdict(
            Timed(max(total.wall - 2 * each.wall, 0.0), max(total.cpu - 2 * each.cpu, 0.0))
        )

    cold = startup(device, threads, warm=False, measure=measure)
    if not warm or cold is None:
        return cold
    key = {"machine": machine(device, threads), "imports": COLD_START, "start": "server"}
    value = cached(key, "a warm server's start", server if measure else None)
    return None if value is None else cold + Timed(**value)


def shape_cost(
    model_cfg: ModelConfig,
    run: RunSpec,
    threads: int,
    neighbours: Neighbours,
    *,
    measure: bool = True,
    label: str = "",
) -> ShapeCost | None:
    """The run's shape measured here (`measure_shape`) beside its `neighbours`, or its cached
    measurement (None when not cached and not `measure`); `label` heads the line that says so
    (the probe's count, "[3/40]")."""
    # the suite by what it asks (a file by its digest, as in the run id), not where it lies
    key = _shape_key(model_cfg, run, threads, neighbours) | {
        "suite": run.suite_digest or run.suite,
        "limit": run.eval_limit,
    }
    what = f"{label}scale {run.scale} (training steps, validation, a checkpoint"
    what += f", the {run.suite} suite)" if run.suite else ")"
    probe = lambda: measure_shape(model_cfg, run, threads, neighbours).to_json()  # noqa: E731
    value = cached(key, what, probe if measure else None, neighbours)
    return None if value is None else ShapeCost.from_json(value)


def step_cost(
    model_cfg: ModelConfig,
    run: RunSpec,
    threads: int,
    neighbours: Neighbours,
    *,
    measure: bool = True,
    label: str = "",
) -> Timed | None:
    """One steady training step of `model_cfg` beside its `neighbours`, measured here or cached
    like a shape (None when not cached and not `measure`; `label` as `shape_cost`'s). The arms
    of a scale share its start-up, saves and cadences, but not their step: softpick or an MoE
    costs more per token than its FLOPs say."""
    key = _shape_key(model_cfg, run, threads, neighbours) | {"part": "step"}

    def probe() -> dict[str, Any]:
        return dataclasses.asdict(measure_steps(model_cfg, run, threads, neighbours)[1][0])

    what = f"{label}{run.arm}'s training step at scale {run.scale}"
    value = cached(key, what, probe if measure else None, neighbours)
    return None if value is None else Timed(**value)


def _shape_key(
    model_cfg: ModelConfig, run: RunSpec, threads: int, neighbours: Neighbours
) -> dict[str, Any]:
    """What a shape's or a step's timing depends on: the machine as the probe ran it, the
    model, and the recipe's fields that shape a step."""
    recipe = to_dict(run.recipe)
    return {
        "machine": machine(run.recipe.device, threads, neighbours.count),
        "model": to_dict(model_cfg),
        "recipe": {name: recipe[name] for name in STEP_FIELDS},
    }


def _training(model_cfg: ModelConfig, run: RunSpec, threads: int) -> tuple[Any, Any]:
    """(the trainer's parts for this shape, a micro-batch of random tokens)."""
    import torch

    from archaudit.model import build_model
    from archaudit.train import step as training
    from archaudit.train.distributed import World
    from archaudit.train.loop.trainer import micro_batch, resolve_device

    if threads:
        torch.set_num_threads(threads)
    recipe = run.recipe
    device = resolve_device(recipe.device)
    training.set_matmul_precision(device)
    parts = training.build_training(build_model(model_cfg).to(device), recipe, device, World())
    n_seq = micro_batch(model_cfg, recipe, World())
    x = torch.randint(model_cfg.vocab_size, (n_seq, model_cfg.context_length), device=device)
    return parts, x


def _step(parts: Any, step: int, x: Any, run: RunSpec) -> None:
    """One training step and update, as the trainer takes them."""
    from archaudit.train import step as training

    training.train_step(parts, step, [(x, x)] * run.recipe.grad_accumulation)
    training.apply_update(parts)
    _synchronize(x.device)


def measure_steps(
    model_cfg: ModelConfig, run: RunSpec, threads: int, neighbours: Neighbours
) -> tuple[Any, tuple[Timed, Timed], Any]:
    """(the training parts, (steady step, warm-up), the probe batch) after `WARMUP_STEPS` +
    `PROBE_STEPS` training steps on random tokens beside the `neighbours`, timed the way the
    trainer steps."""
    parts, x = _training(model_cfg, run, threads)
    neighbours.step(model_cfg, run, threads)
    steps: list[Timed] = []
    for step in range(WARMUP_STEPS + PROBE_STEPS):
        with timed(steps):
            _step(parts, step, x, run)
    steady = sum(steps[WARMUP_STEPS:], ZERO) * (1 / PROBE_STEPS)
    warmup = sum(steps[:WARMUP_STEPS], ZERO) + steady * -WARMUP_STEPS
    return parts, (steady, warmup), x


def measure_shape(
    model_cfg: ModelConfig, run: RunSpec, threads: int, neighbours: Neighbours
) -> ShapeCost:
    """Time the run's parts on random tokens beside the `neighbours`: `WARMUP_STEPS` +
    `PROBE_STEPS` training steps, one validation batch, one checkpoint save, and the suite at
    `SUITE_PROBE_ITEMS` items."""
    import torch

    from archaudit.train import step as training

    parts, (steady, warmup), x = measure_steps(model_cfg, run, threads, neighbours)
    device = x.device
    parts.model.eval()
    val: list[Timed] = []
    with timed(val), torch.no_grad(), training.autocast(device, run.recipe):
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


LOOP_PROBE_AUDIT = """
name = "loop_probe"
arms = ["relu2"]
[seeds]
noise_floor = 3
arms = 1
policy = "sequential"
max = 2
[eval]
suite = ""
[recipe]
steps = 2
batch_tokens = 128
corpus_chars = 100000
eval_every = 2
eval_batches = 1
checkpoint_every = 2
device = "{device}"
[scales.xs]
d_model = 16
n_layers = 1
n_heads = 2
context_length = 16
[executor]
kind = "local"
workers = 1
threads = {threads}
"""
"""The loop probe's audit: a baseline of 3 seeds and one arm (no protocol duty: nothing to warn
of), ≤ 2 seeds, 2 steps of a tiny model on one worker: round 1 runs 4 runs, round 2 the arm's
confirmation seed (an arm is never declared on one seed), so its timeline has gaps between runs
and between rounds."""


@dataclass(frozen=True)
class LoopCost:
    """What the local executor's loop costs beside its runs' own time: `run`, each run's
    coordinator work (its exit noticed, its record written, the next one dispatched) less the
    start-up the run's estimate counts already; `round`, each judgement between two rounds with
    the next round's set-up; `finish`, the last run's end to the `run` command's exit, once per
    audit: the last judgement, the verdict tables and the report (issue 57: 81 s of a 496 s
    2-arm audit at a load of 20, where each judgement between rounds took 4 s)."""

    run: Timed
    round: Timed
    finish: Timed


def loop_cost(device: str, threads: int, *, warm: bool, measure: bool = True) -> LoopCost | None:
    """The local loop's fixed costs, from the timestamps of a tiny sequential audit run here
    by the `run` command (`LOOP_PROBE_AUDIT`), cached like a shape (None when not cached and
    not `measure`)."""
    start = startup(device, threads, warm=warm, measure=measure)
    key = {"machine": machine(device, threads), "imports": COLD_START, "part": "loop"}
    key["start"] = "warm" if warm else "cold"
    probe = lambda: _loop_probe(device, threads, start or ZERO)  # noqa: E731
    value = cached(key, "the loop's costs between runs and rounds", probe if measure else None)
    if value is None:
        return None
    return LoopCost(*(Timed(**value[name]) for name in ("run", "round", "finish")))


def _loop_probe(device: str, threads: int, start: Timed) -> dict[str, Any]:
    """Plan the probe's audit (untimed: `plan --until-settled` leaves the loop's calibrated
    levels in the cache for `run`, as it does for the audit planned; without it the probe's
    first judgement simulated them, 4-5 s where the planned audit's took 0.7-1.1 s), run it with
    `archaudit run` in a temporary folder, quietly, and read its timeline; the gaps' CPU is the
    command's (and its runs') CPU share of its wall time."""
    with tempfile.TemporaryDirectory(prefix="archaudit-loop-") as tmp:
        path = Path(tmp) / "loop_probe.toml"
        path.write_text(LOOP_PROBE_AUDIT.format(device=device, threads=max(threads, 1)))
        common = (str(path), "--runs-dir", tmp, "--quiet")
        _command(cli_command("plan", *common, "--no-probe", "--until-settled"))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        _command(cli_command("run", *common, "--json"))
        ended, wall = time.time(), time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        gaps = loop_gaps(Path(tmp) / "loop_probe", ended)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    share = cpu / max(wall, 1e-9)
    per_run = max(gaps.run - start.wall, 0.0)
    return {
        "run": dataclasses.asdict(Timed(per_run, per_run * share)),
        "round": dataclasses.asdict(Timed(gaps.round, gaps.round * share)),
        "finish": dataclasses.asdict(Timed(gaps.finish, gaps.finish * share)),
    }


def _command(argv: list[str]) -> None:
    """Run one of the loop probe's commands, its output dropped; RuntimeError with its error."""
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=PIPE, text=True)
    if done.returncode:
        raise RuntimeError(f"plan: the loop probe's audit failed: {done.stderr[-2000:]}")


@dataclass(frozen=True)
class Gaps:
    """A finished sequential audit's timeline, its runs run one at a time: the mean gap
    between two runs of a round (`run`), a judgement between rounds beyond that (`round`), and
    the last run's end to the command's end (`finish`)."""

    run: float
    round: float
    finish: float


def loop_gaps(audit_dir: Path, ended: float) -> Gaps:
    """The `Gaps` of a finished sequential audit from its records, its runs run one at a
    time: each run's first attempt's start and its DONE record's end, the rounds from the
    loop's record, and `ended`, the command's end."""
    from archaudit.audit.execute.sequential import read_rounds
    from archaudit.audit.grid import store
    from archaudit.rundir import ATTEMPTS, DONE

    later = {
        (seed.arm, seed.scale, seed.seed): r.index + 1
        for r in read_rounds(audit_dir)
        for seed in r.added
    }
    timeline = []
    for done in sorted(audit_dir.glob(f"*/*/seed-*/{DONE}")):
        run_dir = done.parent
        first = json.loads((run_dir / ATTEMPTS).read_text().splitlines()[0])
        arm, scale, seed = run_dir.relative_to(audit_dir).parts
        index = later.get((arm, scale, int(seed.removeprefix("seed-"))), 1)
        timeline.append((first["started"], (store.read_json(done) or {})["finished"], index))
    timeline.sort()
    pairs = list(itertools.pairwise(timeline))
    within = [b[0] - a[1] for a, b in pairs if a[2] == b[2]]
    run = sum(within) / max(len(within), 1)
    between = [b[0] - a[1] - run for a, b in pairs if a[2] != b[2]]
    judgement = sum(between) / len(between) if between else 0.0
    return Gaps(run, max(judgement, 0.0), max(ended - timeline[-1][1], 0.0))
