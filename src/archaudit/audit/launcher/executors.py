"""Executors: where runs execute. Each one only launches `archaudit run-one RUN_DIR` for a list
of run directories and returns when every launch has exited; claims, resumption and results
live in the run directories, so executors can be swapped, mixed and restarted freely.

- `local`: a process pool on this machine (the default). Torch threads per run are
  cores // workers; with `gpus_per_run` each worker gets its own CUDA_VISIBLE_DEVICES slice.
  On Linux each run is forked from a warm server that has imported torch and archaudit once
  per `execute`, or once per `kept_server` block (the sequential loop's rounds;
  `archaudit.audit.launcher.warm`); elsewhere it is a fresh interpreter.
- `ray`: one Ray task per run, against a local `ray.init()` or a cluster address (`ray` extra).
- `slurm`: a submitit job array (`slurm` extra); preempted or timed-out jobs are requeued and
  resume from their checkpoints. `cluster = "local"` uses submitit's local executor (tests).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Protocol

from archaudit.audit.launcher.launch import RunOptions, cli_command, die_with_parent
from archaudit.audit.launcher.warm import Launch, WarmServer, warm_server, warm_starts
from archaudit.audit.setup.spec import ExecutorSpec
from archaudit.errors import ConfigError
from archaudit.registry import Registry

LOG_FILE = "run-one.log"
CLUSTER_WORKERS = 64  # default concurrency where the scheduler, not this machine, has the cores
SLURM_THREADS = 4  # default cpus_per_task: a small model trains well on a few cores


class Executor(Protocol):
    workers: int
    """Runs at the same time."""
    threads: int
    """Torch threads each run gets (an operational setting: it is not in the run id)."""
    beside: int
    """Runs that share this machine's CPU with each run (the probe times its steps beside as
    many): a local pool's other workers; 0 for GPU slots and clusters."""
    warm: bool
    """Runs start forked from a warm server (`archaudit.audit.launcher.warm`), not as fresh
    processes."""

    def execute(self, run_dirs: Sequence[Path], options: RunOptions) -> dict[Path, int]:
        """Launch `run-one` for every directory; return each launch's exit code."""
        ...


class Worker(Protocol):
    """A launched `run-one`: a `subprocess.Popen`, or a `WarmRun` forked by the warm server."""

    pid: int

    def poll(self) -> int | None: ...
    def wait(self) -> int: ...
    def send_signal(self, signum: int) -> None: ...
    def kill(self) -> None: ...


EXECUTORS: Registry[type] = Registry("executor")


def make_executor(settings: ExecutorSpec, audit_dir: Path) -> Executor:
    return EXECUTORS.get(settings.kind)(settings, audit_dir)


def run_one_argv(run_dir: Path, options: RunOptions) -> list[str]:
    return cli_command("run-one", str(run_dir), "--quiet", *options.to_args())


def cpu_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@EXECUTORS.register("local")
class LocalExecutor:
    def __init__(self, settings: ExecutorSpec, audit_dir: Path) -> None:
        self.gpu_slots = _gpu_slots(settings.gpus_per_run)
        cores = cpu_cores()
        self.workers = settings.workers or (len(self.gpu_slots) if self.gpu_slots else cores)
        if self.gpu_slots:
            self.workers = min(self.workers, len(self.gpu_slots))
        self.threads = settings.threads or max(1, cores // self.workers)
        self.beside = 0 if self.gpu_slots else min(self.workers, cores) - 1
        self.warm = warm_starts()
        self.order: Callable[[list[Path]], list[Path]] = list
        """The runs still queued in the order to launch them, asked each time a worker is free
        (the coordinator's `dispatch.longest_first`, with what has finished by then)."""

    def execute(self, run_dirs: Sequence[Path], options: RunOptions) -> dict[Path, int]:
        if not self.warm:
            return self._execute(run_dirs, options, None)
        with warm_server() as server:
            return self._execute(run_dirs, options, server)

    def _execute(
        self, run_dirs: Sequence[Path], options: RunOptions, server: WarmServer | None
    ) -> dict[Path, int]:
        queue = list(run_dirs)
        running: dict[int, tuple[Path, Worker]] = {}  # worker slot → launch
        exited: SimpleQueue[int] = SimpleQueue()  # slots whose launch has exited
        codes: dict[Path, int] = {}
        try:
            while queue or running:
                for slot in range(self.workers):
                    if slot not in running and queue:
                        queue = self.order(queue)
                        run_dir = queue.pop(0)
                        running[slot] = (run_dir, self._launch(run_dir, slot, options, server))
                        _notify_on_exit(running[slot][1], slot, exited)
                slot = exited.get()  # blocks without polling until a launch exits
                run_dir, proc = running.pop(slot)
                codes[run_dir] = proc.wait()
        except BaseException as err:  # stop the children, which save their step and exit
            aborted = stop_workers([proc for _, proc in running.values()])
            if isinstance(err, KeyboardInterrupt):
                stopped = tuple(run_dir for run_dir, _ in running.values())
                raise Interrupted(str(err) or "SIGINT", stopped, aborted) from None
            raise
        return codes

    def _launch(
        self, run_dir: Path, slot: int, options: RunOptions, server: WarmServer | None
    ) -> Worker:
        """`run-one` forked from the warm server, or (without one) a fresh interpreter."""
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        if self.gpu_slots:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu_slots[slot]
        argv = run_one_argv(run_dir, options)
        if server is not None:
            return server.start(Launch(tuple(argv), str(run_dir / LOG_FILE), env, self.threads))
        with open(run_dir / LOG_FILE, "a") as out:
            # A process group of its own: a terminal's Ctrl-C reaches the coordinator only,
            # which then sends each worker exactly one SIGTERM (a second signal would abort
            # the worker's save).
            return subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                process_group=0,
                preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the executor: `stopped` are the runs that were running and
    were told to save their current step; `aborted` when a second interrupt killed them."""

    def __init__(self, signal_name: str, stopped: tuple[Path, ...], aborted: bool) -> None:
        super().__init__(signal_name)
        self.signal_name, self.stopped, self.aborted = signal_name, stopped, aborted


def stop_workers(procs: Sequence[Worker]) -> bool:
    """One SIGTERM to each worker (it finishes its step, saves it and exits), then wait for
    them. A second Ctrl-C while waiting kills them unsaved: True then."""
    from archaudit.progress import log, warn

    alive = [proc for proc in procs if proc.poll() is None]
    if alive:
        log(f"stopping {len(alive)} worker(s): each saves its current step (Ctrl-C again aborts)")
    for proc in alive:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    try:
        for proc in alive:
            proc.wait()
    except KeyboardInterrupt:
        warn(
            "second interrupt: killing the workers unsaved; a rerun resumes from their "
            "last checkpoints"
        )
        for proc in alive:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for proc in alive:
            proc.wait()
        return True
    return False


def _notify_on_exit(proc: Worker, slot: int, exited: SimpleQueue[int]) -> None:
    """Put `slot` on `exited` when `proc` ends; the thread sleeps in waitpid meanwhile."""

    def wait() -> None:
        proc.wait()
        exited.put(slot)

    threading.Thread(target=wait, daemon=True).start()


def _gpu_slots(gpus_per_run: int) -> list[str]:
    """CUDA_VISIBLE_DEVICES values, one per worker: the visible GPUs in groups of gpus_per_run."""
    if gpus_per_run == 0:
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = [g for g in visible.split(",") if g.strip()]
    else:
        import torch

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    slots = [",".join(gpus[i : i + gpus_per_run]) for i in range(0, len(gpus), gpus_per_run)]
    slots = [s for s in slots if s.count(",") + 1 == gpus_per_run]
    if not slots:
        raise ConfigError(
            f"executor.gpus_per_run = {gpus_per_run} but {len(gpus)} GPU(s) are visible"
        )
    return slots


@EXECUTORS.register("ray")
class RayExecutor:
    def __init__(self, settings: ExecutorSpec, audit_dir: Path) -> None:
        self.settings = settings
        self.workers = settings.workers or CLUSTER_WORKERS
        self.threads = settings.threads or 1
        self.beside, self.warm = 0, False

    def execute(self, run_dirs: Sequence[Path], options: RunOptions) -> dict[Path, int]:
        ray = _require("ray", "ray")
        if not ray.is_initialized():
            ray.init(address=self.settings.address or None, log_to_driver=False)
        task = ray.remote(num_cpus=self.threads, num_gpus=self.settings.gpus_per_run)(launch)
        queue, pending, codes = list(run_dirs), dict[Any, Path](), dict[Path, int]()
        while queue or pending:
            while queue and len(pending) < self.workers:
                run_dir = queue.pop(0)
                pending[task.remote(run_one_argv(run_dir, options), str(run_dir))] = run_dir
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                codes[pending.pop(ref)] = ray.get(ref)
        return codes


def launch(argv: list[str], run_dir: str) -> int:
    """Run one `run-one` command with its output in the run's log; its exit code."""
    with open(Path(run_dir) / LOG_FILE, "a") as out:
        return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode


@EXECUTORS.register("slurm")
class SlurmExecutor:
    def __init__(self, settings: ExecutorSpec, audit_dir: Path) -> None:
        self.settings = settings
        self.folder = audit_dir / "_submitit"
        self.workers = settings.workers or CLUSTER_WORKERS
        self.threads = settings.threads or SLURM_THREADS
        self.beside, self.warm = 0, False

    def execute(self, run_dirs: Sequence[Path], options: RunOptions) -> dict[Path, int]:
        submitit = _require("submitit", "slurm")
        executor = submitit.AutoExecutor(folder=self.folder, cluster=self.settings.cluster or None)
        parameters: dict[str, Any] = {
            "name": "archaudit",
            "timeout_min": self.settings.timeout_min,
            "nodes": 1,
            "tasks_per_node": 1,
            "cpus_per_task": self.threads * options.ranks,
            "gpus_per_node": self.settings.gpus_per_run,
            "slurm_array_parallelism": self.workers,
        }
        if self.settings.partition:
            parameters["slurm_partition"] = self.settings.partition
        executor.update_parameters(**parameters, **self.settings.slurm)
        job = RunOneJob(options)
        jobs = executor.map_array(job, [str(d) for d in run_dirs])
        codes = {}
        for run_dir, submitted in zip(run_dirs, jobs, strict=True):
            try:
                codes[run_dir] = submitted.result()
            except Exception:  # the failure is in the run's FAILED file and log
                codes[run_dir] = 1
        return codes


class RunOneJob:
    """The submitit callable: `run-one` in a child process. On preemption or timeout submitit
    calls `checkpoint`, which stops the child (it saves a checkpoint and releases its claim)
    and requeues the same call."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self._child: subprocess.Popen | None = None

    def __call__(self, run_dir: str) -> int:
        with open(Path(run_dir) / LOG_FILE, "a") as out:
            self._child = subprocess.Popen(
                run_one_argv(Path(run_dir), self.options), stdout=out, stderr=subprocess.STDOUT
            )
            code = self._child.wait()
        if code != 0:
            raise RuntimeError(f"archaudit run-one {run_dir} exited with code {code}")
        return code

    def checkpoint(self, run_dir: str) -> Any:
        import submitit

        if self._child is not None and self._child.poll() is None:
            self._child.terminate()
            self._child.wait()
        return submitit.helpers.DelayedSubmission(RunOneJob(self.options), run_dir)

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_child": None}


def _require(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ConfigError(
            f"the {extra} executor needs the {extra} extra: pip install 'archaudit[{extra}]'"
        ) from None
