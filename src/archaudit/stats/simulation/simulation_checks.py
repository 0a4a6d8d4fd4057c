"""The bounds every simulated audit is checked against before anything is drawn: a finite planted
effect, a usable random seed, `hetero`'s wide arms within the design, and the memory the draws
would take (`MEMORY_LIMIT`). Shared by `simulate_null` and `simulate_sequential`, so that the
CLI and the library refuse the same values with the same line."""

from __future__ import annotations

import math
from typing import Protocol

from archaudit.errors import ConfigError
from archaudit.stats.records.noise_panel import NoiseModel, check_fits, parse_noise


class SeedCaps(Protocol):
    """What the memory bound reads of a `SequentialRule` (stats/simulation/sequential.py imports
    this
    module, so it is not imported back)."""

    @property
    def baseline_cap(self) -> int: ...

    @property
    def baseline_seeds(self) -> int: ...

    @property
    def max_seeds(self) -> int: ...


MEMORY_LIMIT = 2 * 2**30
"""Bytes a simulation may hold at once (2 GiB): `--n-arms 100000000` would otherwise grow past
5 GB before the first audit is judged."""
MAX_EFFECT = 100.0
"""Planted effects are in units of σ: beyond ±100 σ every arm is found and the squares of the
draws start to lose all precision."""
WORKING_COPIES = 4
"""Arrays as large as the draws that a chunk holds at once (draws, scaled, shifted, squares)."""


def check_run(effect: float, seed: int, models: tuple[NoiseModel, ...], null_arms: int) -> None:
    """Refuse a NaN/inf or huge planted effect, a negative seed and too many wide arms."""
    if not abs(effect) <= MAX_EFFECT:
        raise ConfigError(f"--effect {effect}: a planted effect is a finite number of σ in "
                          f"[-{MAX_EFFECT:g}, {MAX_EFFECT:g}]")  # fmt: skip
    if seed < 0:
        raise ConfigError(f"--seed {seed}: a simulation seed is a whole number >= 0")
    check_fits(models, null_arms)


def check_memory(values: float, what: str) -> None:
    """Refuse a simulation that would hold `values` float64 numbers at once (`what` names the
    flags that set them) beyond `MEMORY_LIMIT`."""
    needed = 8.0 * values
    if needed > MEMORY_LIMIT:
        raise ConfigError(
            f"the simulation would hold about {_size(needed)} in memory, over its limit of "
            f"{_size(MEMORY_LIMIT)} (archaudit.stats.simulation.simulation_checks.MEMORY_LIMIT); "
            f"use fewer {what}"
        )


def _size(n_bytes: float) -> str:
    power = min(int(math.log(max(n_bytes, 1.0), 1024)), 4)
    return f"{n_bytes / 1024**power:.3g} {['B', 'KiB', 'MiB', 'GiB', 'TiB'][power]}"


def sequential_models(
    noise: str,
    arms: int,
    audits: int,
    effects: tuple[float, ...],
    seed: int,
    rule: SeedCaps,
    fixed_seeds: int | None,
) -> tuple[NoiseModel, ...]:
    """The noise models of `simulate_sequential`, once every bound holds: arms, audits and
    effects, `check_run`, and the memory of every seed it draws up front (an upper bound)."""
    if arms < 1 or audits < 1 or len(effects) > arms:
        raise ConfigError(f"need >= 1 arm, >= 1 audit and <= {arms} effects")
    models = parse_noise(noise)
    check_run(max(effects, key=abs, default=0.0), seed, models, arms - len(effects))
    seeds = rule.baseline_cap + rule.baseline_seeds + rule.max_seeds + (fixed_seeds or 0)
    check_memory(WORKING_COPIES * audits * (arms + 1) * seeds, "--n-arms, --seeds or --audits")
    return models
