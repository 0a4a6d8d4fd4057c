"""Shared fixtures: a private token cache per test session, Python's own SIGINT handler in every
test however the suite was launched, and the path to ../shared data."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
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
