"""Issue 44: a probe measurement proves itself before `plan` believes it; a tampered entry is
measured again with one line, a read-only cache never stops `plan` (it writes nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archaudit.audit import probe
from archaudit.files import value_checksum

KEY = {"machine": "m", "part": "step"}
HONEST = {"wall": 0.25, "cpu": 0.5}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path))
    return tmp_path / "probes"


def measured(calls: list[int]) -> dict[str, float]:
    calls.append(1)
    return dict(HONEST)


@pytest.mark.parametrize(
    "value", ["x", -1.0, float("nan"), {"wall": "x", "cpu": 1}, {"wall": True, "cpu": 1}, {}]
)
def test_a_tampered_probe_entry_is_measured_again(cache: Path, capsys, value: object) -> None:
    calls: list[int] = []
    assert probe.cached(KEY, "a step", lambda: measured(calls)) == HONEST
    (path,) = cache.glob("*.json")
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, "value": value, "sha256": value_checksum(value)}))
    assert probe.cached(KEY, "a step", lambda: measured(calls)) == HONEST
    assert len(calls) == 2 and "measured again" in capsys.readouterr().err
    assert probe.cached(KEY, "a step", None) == HONEST  # the entry was rewritten


def test_an_entry_edited_without_its_checksum_is_not_believed(cache: Path) -> None:
    probe.cached(KEY, "a step", lambda: dict(HONEST))
    (path,) = cache.glob("*.json")
    path.write_text(path.read_text().replace("0.25", "0.0025"))
    assert probe.cached(KEY, "a step", None) is None  # not measured, not believed


def test_a_read_only_or_blocked_cache_only_costs_the_measurement(cache: Path) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("a file where the folder should be")
    assert probe.cached(KEY, "a step", lambda: dict(HONEST)) == HONEST  # no OSError
