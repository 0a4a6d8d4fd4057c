"""Issue 44: a probe measurement proves itself before `plan` believes it; a tampered entry is
measured again with one line, a read-only cache never stops `plan` (it writes nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archaudit.audit.planning import probe
from archaudit.files import value_checksum

KEY = {"machine": "m", "part": "step"}
HONEST = {"wall": 0.25, "cpu": 0.5}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path))
    at_reference(monkeypatch, 0.1)  # a steady machine: entries read back as they were stored
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


def test_an_entry_measured_by_other_code_is_measured_again(cache: Path, monkeypatch) -> None:
    """A run's cost changes with the code (a faster model, a cheaper suite): an entry stored
    before an edit or an upgrade is not read at the old cost."""
    calls: list[int] = []
    for code in ("before the edit", "before the edit", "after the edit"):
        monkeypatch.setattr(probe, "cost_code", lambda code=code: code)
        key = {"machine": probe.machine("cpu", 1), "part": "step"}
        assert probe.cached(key, "a step", lambda: measured(calls)) == HONEST
    assert len(calls) == 2  # once per code, not again for the same code


def at_reference(monkeypatch: pytest.MonkeyPatch, wall: float) -> None:
    """The machine's reference step now takes `wall` seconds (CPU alike)."""
    monkeypatch.setattr(probe, "reference_step", lambda: probe.Timed(wall, wall))
    monkeypatch.setattr(probe, "breath_reference", lambda: probe.Timed(wall, wall))


def test_an_entry_is_read_at_the_machines_speed_now(cache: Path, monkeypatch) -> None:
    """Issue 46 item 3: timings taken at another load are scaled by the reference step's time
    now over then (a loaded machine: slower), not mixed in as they were taken."""
    at_reference(monkeypatch, 0.1)
    probe.cached(KEY, "a step", lambda: dict(HONEST))
    slower = 1.5
    at_reference(monkeypatch, 0.1 * slower)
    read = probe.cached(KEY, "a step", lambda: pytest.fail("measured again"))
    assert read == pytest.approx({k: v * slower for k, v in HONEST.items()})


def test_an_entry_is_kept_through_a_load_swing(cache: Path, monkeypatch) -> None:
    """Issue 57: an entry was thrown away and measured again when the machine's reference
    step moved past ×2 ("9.70×, past ×2"); it is kept and read at the speed the reference
    step shows now, however far the load swung."""
    at_reference(monkeypatch, 0.1)
    probe.cached(KEY, "a step", lambda: dict(HONEST))
    swing = 9.7
    at_reference(monkeypatch, 0.1 * swing)
    read = probe.cached(KEY, "a step", lambda: pytest.fail("measured again"))
    assert read == pytest.approx({k: v * swing for k, v in HONEST.items()})


def test_an_entry_without_a_reference_step_is_measured_again(cache: Path) -> None:
    probe.cached(KEY, "a step", lambda: dict(HONEST))
    (path,) = cache.glob("*.json")
    stored = json.loads(path.read_text())
    old = {k: v for k, v in stored["value"].items() if k != probe.REFERENCE}
    path.write_text(json.dumps({**stored, "value": old, "sha256": value_checksum(old)}))
    calls: list[int] = []
    assert probe.cached(KEY, "a step", lambda: measured(calls)) == HONEST and calls == [1]


def test_the_reference_step_says_how_steady_the_machine_is() -> None:
    now = probe.reference()
    assert now.mean.wall > 0 and now.fastest <= 1.0 <= now.slowest
