"""Runs that start warm: a fork server that has imported torch and what `run-one` imports, and
forks one child per run (docs/audit.md, "Warm starts").

Every run is still a process of its own (a crash, `kill -9` or a resume touches that run only),
but it no longer pays the interpreter, torch and archaudit's imports (`preload`: 4.8 s of CPU
and 13 s of wall per run on the shared 2-core machine at a load of 5 to 12, against 0.23 s and
0.6 s forked; benchmarks/startup.py): the fork shares them copy-on-write. Not the
standard library's `forkserver`: its children hold the pipe that tells the server its client
has gone, so a coordinator killed with -9 would leave them training, and its server is never
reaped, so the runs' CPU time would be missing from the coordinator's.

The server is a child of the coordinator in a process group of its own (a terminal's Ctrl-C
reaches the coordinator only) that dies with it; each run dies with the server. It reads
requests on stdin, one JSON object per line, and answers on stdout:

    {"start": {"argv": [...], "log": "...", "env": {...}, "threads": 2}}  →  {"started": PID}
    {"signal": [PID, SIGNUM]}      (sent only while PID is its unreaped child)
    (a run exits)                  →  {"exited": [PID, CODE, CPU]}
                                      CODE as Popen.returncode; CPU: its user + system seconds

A child sets its environment, torch threads, stdout and stderr (the run's log) as `Popen` would
have, then runs `python -m archaudit.cli ARGS` in itself (`runpy`) and exits as that process
would (`_exit`): the same exit code, signal handling, atexit handlers and flushed output. The
server never runs a torch operation: a thread pool started before a fork would not survive it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import math
import os
import runpy
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import SimpleQueue
from subprocess import PIPE
from typing import Any, NoReturn

from archaudit.audit.launcher.launch import CLI_MODULE, die_with_parent

PRELOAD = (
    "archaudit.audit.execute.runner",
    "archaudit.train.loop.trainer",
    "archaudit.evals.suites",
    "torch._dynamo",
    "torch.distributed.checkpoint.state_dict",
    "pydantic.type_adapter",
    "pydantic.functional_validators",
    "pydantic.fields",
    "pydantic.types",
)
"""What `archaudit run-one` imports before its first step, and what a run imported later on its
own (0.11 s of CPU per run): the checkpoints' `state_dict` helpers at the first save, and the
pydantic validators typer converts the command line's values with. torch._dynamo is among them,
compile or not: torch.optim's `Optimizer.add_param_group` is wrapped in `torch._disable_dynamo`,
which imports it at the first parameter group (1.7 s on a 2-core CPU; torch 2.13 has no
switch)."""
SERVER = "from archaudit.audit.launcher.warm import main; main()"
COLD_START = f"import {', '.join(PRELOAD)}, {CLI_MODULE}; {CLI_MODULE}.register_commands()"
"""`preload` as one statement for a fresh interpreter (the probe's and the benchmark's cold
start; any checkout runs it)."""


def preload() -> None:
    """Import `PRELOAD` and register the CLI's commands, as `python -m archaudit.cli` does
    before it parses its arguments (their help texts are read from the source, each file parsed
    once: 0.16 s)."""
    for module in PRELOAD:
        importlib.import_module(module)
    importlib.import_module(CLI_MODULE).register_commands()


def warm_starts() -> bool:
    """Whether runs start forked here: Linux, where a child can die with its parent (prctl); a
    fork of a process that imported torch is not safe on macOS, and Windows has no fork."""
    return sys.platform.startswith("linux")


@dataclass(frozen=True)
class Launch:
    """One run's process: its command line (`archaudit run-one ...`), log file, environment and
    torch threads (0 = torch's default)."""

    argv: tuple[str, ...]
    log: str
    env: dict[str, str]
    threads: int


class WarmRun:
    """A run forked by the server, seen from the coordinator as a `subprocess.Popen` is: its pid,
    `poll`, `wait`, `send_signal`, `kill` and `returncode` (negative: the signal that ended it);
    once it has exited, `cpu` is its user + system seconds."""

    def __init__(self, pid: int, server: WarmServer) -> None:
        self.pid, self.server = pid, server
        self.returncode: int | None = None
        self.cpu = 0.0
        self._exited = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self) -> int:
        self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            self.server.request({"signal": [self.pid, int(signum)]})

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def exited(self, code: int, cpu: float) -> None:
        self.returncode, self.cpu = code, cpu
        self._exited.set()


class WarmServer:
    """The coordinator's side of the fork server: `start` launches a run, `close` waits for the
    server (and so counts its runs' CPU time in the coordinator's). A server that dies (`kill
    -9`, the out-of-memory killer) is replaced at the next `start`, with one line: its runs
    died with it and are reported as killed, and the coordinator takes them over as it does
    any run whose worker died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one request on the pipe at a time
        self._spawn()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=PIPE,
            stdout=PIPE,
            process_group=0,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        self.runs: dict[int, WarmRun] = {}
        self._started: SimpleQueue[WarmRun | None] = SimpleQueue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def start(self, launch: Launch) -> WarmRun:
        """Fork the run from the server; a dead server is replaced first (once per start: a
        server that dies again before it forks is an error, e.g. a failing import)."""
        for attempt in range(2):
            if attempt or self.proc.poll() is not None:
                self._replace()
            self.request({"start": asdict(launch)})
            run = self._started.get()
            if run is not None:
                return run
        raise RuntimeError(
            f"the warm start server exited with code {self.proc.wait()} (its error is "
            "above); `archaudit run-one RUN_DIR` runs one run without it"
        )

    def _replace(self) -> None:
        """Reap the dead server (its reader reports its runs as killed) and start another."""
        from archaudit.progress import warn

        code = self.proc.wait()
        self._reader.join()
        if self.proc.stdin is not None:
            with self._lock, contextlib.suppress(OSError):
                self.proc.stdin.close()
        warn(f"the warm start server exited (code {code}) and its runs with it; starting another")
        self._spawn()

    def request(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self._lock, contextlib.suppress(BrokenPipeError):  # the reader reports its end
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()

    def close(self) -> None:
        """End of requests: the server exits once its runs have; wait for it. One that never
        started a run is killed (no run to wait for; its preload may still be under way)."""
        assert self.proc.stdin is not None
        with self._lock, contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        if not self.runs:
            self.proc.kill()
        self.proc.wait()
        self._reader.join()

    def _read(self) -> None:
        """Dispatch the server's answers; at its end, runs not reported died with it."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            answer = json.loads(line)
            if "started" in answer:  # registered here, before its exit can be read
                pid = answer["started"]
                self.runs[pid] = WarmRun(pid, self)
                self._started.put(self.runs[pid])
            else:
                pid, code, cpu = answer["exited"]
                self.runs[pid].exited(code, cpu)
        self._started.put(None)
        for run in self.runs.values():
            if run.returncode is None:
                run.exited(-signal.SIGKILL, math.nan)


_KEPT: list[WarmServer | None] = []
"""The server a `kept_server` block shares (None until its first run); empty outside one."""


@contextlib.contextmanager
def kept_server(start: bool = False) -> Iterator[None]:
    """Inside the block, every `warm_server` is one server, started at the first run and closed
    at the block's end: the sequential loop's rounds pay its start (the preload, 3–5 s of wall
    before a round's first run can end) once, not once per round. `start`: start it now, so that
    its preload runs beside the caller's own work before the first run (`archaudit demo`'s
    plan). A block inside another shares the outer block's server."""
    if _KEPT:
        yield
        return
    _KEPT.append(WarmServer() if start and warm_starts() else None)
    try:
        yield
    finally:
        server = _KEPT.pop()
        if server is not None:
            server.close()


@contextlib.contextmanager
def warm_server() -> Iterator[WarmServer]:
    """A server for one `execute`: the `kept_server` block's (started again if it has exited),
    or else a server of its own, closed when the block ends."""
    if not _KEPT:
        server = WarmServer()
        try:
            yield server
        finally:
            server.close()
        return
    kept = _KEPT[-1]
    if kept is not None and kept.proc.poll() is not None:  # it died: reap it, start another
        kept.close()
        kept = None
    if kept is None:
        kept = _KEPT[-1] = WarmServer()
    yield kept


def main() -> None:
    """The server process: `preload`, then serve; in a forked child, run the run (and exit)."""
    preload()
    launch = serve()
    if launch is not None:
        run_in_child(launch)


def serve() -> Launch | None:
    """Fork a child per start request and report its exit, until stdin closes and every child
    has exited (None); returns the request in each forked child."""
    server = os.getpid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the select below
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    requests = sys.stdin.fileno()
    lines = _lines(requests)
    requests_open = True
    while requests_open or children:
        ready, _, _ = select.select([wake_r, requests] if requests_open else [wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            for pid, code, cpu in _reaped(children):
                _answer({"exited": [pid, code, cpu]})
        if requests in ready:
            for message in next(lines):
                if message is None:
                    requests_open = False
                elif "signal" in message:
                    pid, signum = message["signal"]
                    if pid in children:
                        os.kill(pid, signum)
                elif pid := os.fork():
                    children.add(pid)
                    _answer({"started": pid})
                else:
                    die_with_parent(server)
                    os.close(wake_r)
                    os.close(wake_w)
                    return Launch(**{**message["start"], "argv": tuple(message["start"]["argv"])})
    return None


def _lines(fd: int) -> Iterator[list[dict[str, Any] | None]]:
    """Per read of `fd`: the complete JSON lines it finished (None at the end of input)."""
    pending = b""
    while True:
        chunk = os.read(fd, 65536)
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield [json.loads(line) for line in complete] + ([] if chunk else [None])


def _reaped(children: set[int]) -> Iterator[tuple[int, int, float]]:
    """(pid, exit code, CPU seconds) of each child that has exited, reaped."""
    for pid in sorted(children):
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            children.remove(pid)
            yield pid, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _answer(message: dict[str, Any]) -> None:
    os.write(sys.stdout.fileno(), json.dumps(message).encode() + b"\n")


def run_in_child(launch: Launch) -> NoReturn:
    """Become the run's process: the server's signal set-up undone, the run's environment, torch
    threads and log, then `python -m archaudit.cli ARGS` in here, and exit as it would."""
    import torch

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(launch.env)
    if launch.threads:
        torch.set_num_threads(launch.threads)
    _redirect(Path(launch.log))
    module_flag = launch.argv.index("-m")
    sys.argv = [launch.argv[0], *launch.argv[module_flag + 2 :]]
    module = launch.argv[module_flag + 1]
    _exit(_exit_code(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True)))


def _exit_code(main: Callable[[], object]) -> int:
    """`main()`'s exit code as the interpreter computes it (a KeyboardInterrupt: -SIGINT)."""
    try:
        main()
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        print(done.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _exit(code: int) -> NoReturn:
    """End as the interpreter ends (its threads joined, atexit handlers run, output flushed),
    without tearing down its modules: a forked child's finalisation touches every inherited page
    (1.2 s of CPU and 3.5 s of wall per run at a load of 7), and `os._exit` is the exit the
    `os` documentation prescribes after a fork. A KeyboardInterrupt ends it by SIGINT."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _redirect(log: Path) -> None:
    """stdin from /dev/null; stdout and stderr appended to `log`, as the executor's Popen does."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)


def warm_start(argv: tuple[str, ...], starts: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of `starts` runs of `argv` forked by a fresh server, from the
    request to the exit report, after one untimed start (the server's imports); CPU is the
    child's (the fork itself is the server's CPU: benchmarks/startup.py measures it)."""
    server = WarmServer()
    try:
        server.start(Launch(argv, os.devnull, dict(os.environ), 0)).wait()
        times = []
        for _ in range(starts):
            wall = time.perf_counter()
            run = server.start(Launch(argv, os.devnull, dict(os.environ), 0))
            run.wait()
            times.append((time.perf_counter() - wall, run.cpu))
    finally:
        server.close()
    return statistics.median(w for w, _ in times), statistics.median(c for _, c in times)
