"""Fixtures for the statistics tests: tables built from a few lines of Python."""

from __future__ import annotations

import csv
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from archaudit.stats.records.table import Row, Table

HEADER = ("arm", "scale", "seed", "metric", "value")


def build_table(
    values: Mapping[str, Sequence[float]],
    *,
    metric: str = "acc",
    scale: str = "s",
    family: Mapping[str, str] | None = None,
    tuned: Iterable[str] = (),
    duties: Mapping[str, tuple[str, ...]] | None = None,
) -> Table:
    """A table with one row per (arm, seed) value, seeds numbered from 0."""
    tuned = set(tuned)
    rows = [
        Row(
            arm=arm,
            scale=scale,
            seed=seed,
            metric=metric,
            value=float(value),
            family=(family or {}).get(arm),
            tuned=arm in tuned,
            duties=(duties or {}).get(arm, ()),
            line=0,
        )
        for arm, arm_values in values.items()
        for seed, value in enumerate(arm_values)
    ]
    return Table(tuple(rows))


@pytest.fixture(autouse=True)
def design_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Design error rates are cached on disk: keep the tests' cache out of the user's."""
    folder = tmp_path_factory.getbasetemp() / "archaudit-cache"
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(folder))
    return folder


@pytest.fixture
def make_table() -> Callable[..., Table]:
    return build_table


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Write rows (header first) to a CSV in tmp_path and return its path."""

    def write(rows: Sequence[Sequence[object]], name: str = "results.csv") -> Path:
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
        return path

    return write


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Callable[..., tuple]:
    """Run `archaudit <command line>` through main(); return (exit code, stdout, stderr)."""
    from archaudit.cli import main, stats_cmd  # noqa: F401  (registers the commands)

    def run(command: str, columns: int = 200) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
        monkeypatch.setenv("COLUMNS", str(columns))
        with pytest.raises(SystemExit) as exit_:
            main()
        captured = capsys.readouterr()
        return exit_.value.code or 0, captured.out, captured.err

    return run
