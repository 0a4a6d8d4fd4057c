"""Issue 44: a cached calibration proves itself before it is believed. A tampered level (above
α, NaN, negative, a stale checksum), a torn file or a FIFO is recomputed with one line; the
verdict's level is the same as from an empty cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from archaudit.files import value_checksum as checksum
from archaudit.stats import AuditDesign, design_rate
from archaudit.stats.simulation.calibrate import design_level
from archaudit.stats.simulation.disk_cache import cached

DESIGN = AuditDesign((2, 2), 3)


def clear_process_caches() -> None:
    """The in-process caches in front of the disk: a test must reach the disk."""
    from archaudit.stats.simulation import design_rate as rates
    from archaudit.stats.simulation.sequential import sequential_design_rate

    design_level.cache_clear()
    rates._rates.cache_clear()
    sequential_design_rate.cache_clear()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path))
    clear_process_caches()
    yield tmp_path / "stats"
    clear_process_caches()


def fresh_level() -> float:
    design_level.cache_clear()
    return design_level(DESIGN)


def level_file(cache: Path) -> Path:
    (path,) = cache.glob("level-*.json")
    return path


def rewrite(path: Path, level: object, *, fix_checksum: bool) -> None:
    stored = json.loads(path.read_text())
    stored["value"] = level
    if fix_checksum:
        stored["sha256"] = checksum(level)
    path.write_text(json.dumps(stored))


@pytest.mark.parametrize(
    ("level", "fix_checksum"),
    [(0.9, True), (0.9, False), (float("nan"), True), (-1.0, True), ("x", True), (0.001, False)],
)
def test_a_tampered_level_is_recomputed_and_the_result_unchanged(
    cache: Path, capsys: pytest.CaptureFixture[str], level: object, fix_checksum: bool
) -> None:
    honest = fresh_level()
    rewrite(level_file(cache), level, fix_checksum=fix_checksum)
    assert fresh_level() == honest
    assert "recomputed" in capsys.readouterr().err
    assert fresh_level() == honest  # and the rewritten entry is believed again, silently
    assert capsys.readouterr().err == ""


def test_a_torn_entry_and_a_foreign_key_are_recomputed(cache: Path) -> None:
    honest = fresh_level()
    path = level_file(cache)
    path.write_text(path.read_text()[:20])
    assert fresh_level() == honest
    stored = json.loads(path.read_text())
    stored["key"] = stored["key"].replace("2", "3")
    stored["sha256"] = checksum(stored["value"])
    path.write_text(json.dumps(stored))
    assert fresh_level() == honest


def test_a_fifo_in_the_cache_does_not_hang_and_is_left_alone(cache: Path) -> None:
    honest = fresh_level()
    path = level_file(cache)
    path.unlink()
    os.mkfifo(path)
    assert fresh_level() == honest  # a blocking open() would wait here forever
    assert path.is_fifo()


def test_a_file_where_the_cache_folder_should_be_computes_without_caching(cache: Path) -> None:
    cache.write_text("not a folder")
    calls: list[int] = []
    for _ in range(2):
        assert cached("t", {"a": 1}, lambda: calls.append(1) or 0.5, float) == 0.5
    assert len(calls) == 2  # nothing could be stored, nothing was raised
    assert cache.read_text() == "not a folder"


def test_tampered_design_rates_are_recomputed(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    honest = design_rate(DESIGN)
    (path,) = cache.glob("design-*.json")
    stored = json.loads(path.read_text())
    name = next(iter(stored["value"]))
    stored["value"][name] = [1.5, 0.0]
    stored["sha256"] = checksum(stored["value"])
    path.write_text(json.dumps(stored))
    clear_process_caches()
    assert design_rate(DESIGN) == honest
    assert "recomputed" in capsys.readouterr().err


def test_a_tampered_sequential_rate_is_recomputed(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from archaudit.stats.simulation.sequential import SequentialRule, sequential_design_rate

    rule = SequentialRule(max_seeds=3)
    honest = sequential_design_rate(2, rule, audits=200)
    (path,) = cache.glob("sequential-*.json")
    stored = json.loads(path.read_text())
    name = next(iter(stored["value"]["panel"]))
    stored["value"]["panel"][name] = 0.0  # "no false verdicts at all", the checksum left stale
    path.write_text(json.dumps(stored))
    sequential_design_rate.cache_clear()
    assert sequential_design_rate(2, rule, audits=200) == honest
    stored = json.loads(path.read_text())
    stored["value"]["panel"][name] = -0.5
    stored["sha256"] = checksum(stored["value"])
    path.write_text(json.dumps(stored))
    sequential_design_rate.cache_clear()
    capsys.readouterr()
    assert sequential_design_rate(2, rule, audits=200) == honest
    assert "recomputed" in capsys.readouterr().err
