"""Shared fixtures: a private token cache per test session and the path to ../shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ARCHAUDIT_CACHE"] = str(tmp_path_factory.mktemp("archaudit-cache"))


@pytest.fixture
def shared_data() -> Path:
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip("../shared/data is absent")
    return data
