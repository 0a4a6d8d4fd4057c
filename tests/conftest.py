"""Shared fixtures: a private cache per test session, Python's own SIGINT handler in every test
however the suite was launched, and the path to ../shared data.

`make test` runs the suite on pytest-xdist workers (one process per core); each worker is its own
session, so it gets its own cache below, its own tmp_path tree (`popen-gwN`) and its own
session-scoped fixtures. A test that writes outside tmp_path or the cache would be shared between
workers: none does."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """$ARCHAUDIT_CACHE (calibrated levels, probe costs, tokenised corpora) under this session's
    tmp dir: never ~/.cache/archaudit, never another worker's."""
    os.environ["ARCHAUDIT_CACHE"] = str(tmp_path_factory.mktemp("archaudit-cache"))


@pytest.fixture(autouse=True)
def _python_sigint() -> Iterator[None]:
    """Each test starts with SIGINT raising KeyboardInterrupt, as in a terminal: a suite run as
    a background job (`make test &`, CI) starts with SIGINT ignored, and the tests that send it
    (the trainer's interrupts) then got another handler back than the one they check for. The
    launch's own handler is restored after the test."""
    launched = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, launched)


@pytest.fixture(autouse=True)
def _speaking_progress() -> Iterator[None]:
    """Each test starts with progress and log lines on, as a fresh process does: a command run
    in-process with --json or -q turns them off for the process (`progress.set_quiet`), which
    silenced the next test's lines."""
    from archaudit.progress import set_quiet

    set_quiet(False)
    yield
    set_quiet(False)


@pytest.fixture
def shared_data() -> Path:
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip("../shared/data is absent")
    return data


@pytest.fixture
def stand_in_mlflow(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """A stand-in MLflow client that records its calls, in order (the tests need no mlflow)."""
    import collections
    import types

    calls: list[tuple] = []

    class Client:
        def __init__(self, tracking_uri: str) -> None:
            pass

        def get_experiment_by_name(self, name: str) -> None:
            return None

        def create_experiment(self, name: str) -> str:
            return "1"

        def create_run(self, experiment_id: str, tags: dict) -> Any:
            calls.append(("tags", tags))
            return types.SimpleNamespace(info=types.SimpleNamespace(run_id="r"))

        def log_dict(self, run_id: str, value: Any, name: str) -> None:
            calls.append(("dict", name, value))

        def log_batch(self, run_id: str, params: list) -> None:
            calls.append(("params", {p.key: p.value for p in params}))

        def log_metric(self, run_id: str, key: str, value: float, step: int) -> None:
            calls.append(("metric", key, value, step))

        def set_tag(self, run_id: str, key: str, value: str) -> None:
            calls.append(("tag", key, value))

        def set_terminated(self, run_id: str) -> None:
            calls.append(("end",))

        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: calls.append((name, args, kwargs))

    modules = {name: types.ModuleType(name) for name in ("mlflow", "mlflow.tracking",
                                                          "mlflow.entities")}  # fmt: skip
    modules["mlflow.tracking"].MlflowClient = Client
    modules["mlflow.entities"].Param = collections.namedtuple("Param", "key value")
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "file:///nowhere")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: object())
    return calls
