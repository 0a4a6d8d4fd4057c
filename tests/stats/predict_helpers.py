"""Ladders with known truth for the `stats predict` tests: Δₐ(N) given per arm, seed noise σ."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from archaudit.stats.predictions.ladders import Ladder, LadderScale
from archaudit.stats.records.table import Row, Table

PARAMS = (1e4, 2e4, 4e4, 8e4, 1.6e5)
TARGET = LadderScale("T", 1.28e6, 20 * 1.28e6)


def ladder(params: Sequence[float] = PARAMS, target: LadderScale = TARGET) -> Ladder:
    """Scales s0, s1, ... at 20 tokens per parameter."""
    return Ladder(tuple(LadderScale(f"s{i}", n, 20 * n) for i, n in enumerate(params)), target)


def table(
    truth: Mapping[str, Callable[[float], float]],
    *,
    params: Sequence[float] = PARAMS,
    seeds: int = 3,
    sigma: float = 0.01,
    seed: int = 0,
    metric: str = "val_loss",
    names: Sequence[str] = (),
) -> Table:
    """The baseline (a loss falling with log N) and each arm at Δₐ(N) above it, plus noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, n in enumerate(params):
        for arm, delta in {"baseline": lambda n: 0.0, **truth}.items():
            for s in range(seeds):
                value = 3.0 - 0.1 * math.log(n) + delta(n) + sigma * rng.standard_normal()
                rows.append(Row(arm, names[i] if names else f"s{i}", s, metric, value))
    return Table(tuple(rows))


def constant(value: float) -> Callable[[float], float]:
    return lambda n: value


def log_linear(at_1e4: float, per_e: float) -> Callable[[float], float]:
    """Δ = at_1e4 + per_e·ln(N/1e4): crosses zero where the line does."""
    return lambda n: at_1e4 + per_e * math.log(n / 1e4)


def write_csv(rows: Table, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["arm,scale,seed,metric,value"]
    lines += [f"{r.arm},{r.scale},{r.seed},{r.metric},{r.value!r}" for r in rows.rows]
    path.write_text("\n".join(lines) + "\n")
    return path
