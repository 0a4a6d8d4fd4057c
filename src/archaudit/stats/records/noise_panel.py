"""Seed-noise models for the design simulations: `normal`, `t3`, `lognormal:S`, `hetero:F[:K]`,
and `panel` (all of them at once).

Real seed noise is not normal with one σ shared by every arm: arms that destabilise training
spread wider (2× between benign arms, 6× for a Post-LN arm, measured on tinyshakespeare), and
single runs land far out. A verdict rule is trusted only where its error rate holds over the whole
panel, so every design's table prints the normal-model rate and the panel's worst rate.

Every model draws zero-mean noise with unit variance for the baseline; `hetero:F:K` multiplies
the seed σ of the last K arms by F (the first arms are where `simulate_null` plants effects).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError, did_you_mean

PANEL = (
    "normal",
    "t3",
    "lognormal:0.5",
    "lognormal:1",
    "hetero:3",
    "hetero:6",
    "hetero:3:3",
    "hetero:6:3",
)
"""The robustness panel: heavy tails, skew, and one or three arms 3× or 6× as noisy."""
BEYOND_PANEL = (
    "profile:10:1",
    "profile:20:1",
    "profile:50:1",
    "base:3",
    "base:6",
    "base:10",
)
"""Beyond the panel (issue 53): one multi-seed arm 10×, 20× or 50× as wide as the rest (a wild
seed near an arm's stability edge), or the baseline alone 3×, 6× or 10× as wide (arms that
stabilise training narrow their spread below the baseline's)."""
COVERED_ARM = 50.0
"""The widest multi-seed arm (× σ) `BEYOND_PANEL` calibrates a fixed design's α′ for."""
COVERED_BASELINE = 10.0
"""The widest baseline (× the arms' σ) `BEYOND_PANEL` calibrates a fixed design's α′ for."""
CALIBRATION_PANEL = PANEL + BEYOND_PANEL
"""The models a fixed design's level α′ is calibrated over (stats/simulation/calibrate.py) and
its printed worst rate is measured over: the panel and beyond it."""
WIDEST_FACTOR = 6.0
"""The panel's widest seed σ of an arm, in units of the pooled σ: the bound a single-seed arm
must clear to be called more than a candidate (stats/inference/family_test.py)."""


@dataclass(frozen=True)
class NoiseModel:
    """How the seeds of one simulated audit scatter around their arm's mean."""

    spec: str
    """As written: "normal", "t3", "lognormal:1", "hetero:6:3"."""
    kind: str
    shape: float = 0.0
    """The log-normal's s (σ of the log)."""
    factor: float = 1.0
    """hetero: the wide arms' seed σ over everyone else's."""
    wide_arms: int = 0
    base_factor: float = 1.0
    """base:F: the baseline's seed σ over everyone else's."""

    def draw(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        """Zero-mean, unit-variance draws of shape `size`."""
        return _DRAWS[self.kind](rng, size, self.shape)

    def draw_baseline(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        """The baseline's draws of shape `size`: unit variance, or σ × F under `base:F`."""
        return self.draw(rng, size) * self.base_factor

    def arm_sigmas(self, arms: int) -> np.ndarray:
        """(arms,) each arm's seed σ (the last `wide_arms` are `factor` times as wide)."""
        sigmas = np.ones(arms)
        if self.wide_arms:
            sigmas[-min(self.wide_arms, arms) :] = self.factor
        return sigmas


def _normal(rng: np.random.Generator, size: tuple[int, ...], _: float) -> np.ndarray:
    return rng.standard_normal(size)


def _t3(rng: np.random.Generator, size: tuple[int, ...], _: float) -> np.ndarray:
    return rng.standard_t(3, size) / math.sqrt(3.0)  # t with 3 df has variance 3


def _lognormal(rng: np.random.Generator, size: tuple[int, ...], s: float) -> np.ndarray:
    mean, var = math.exp(s * s / 2), (math.exp(s * s) - 1.0) * math.exp(s * s)
    return (np.exp(s * rng.standard_normal(size)) - mean) / math.sqrt(var)


_DRAWS: dict[str, Callable[[np.random.Generator, tuple[int, ...], float], np.ndarray]] = {
    "normal": _normal,
    "t3": _t3,
    "lognormal": _lognormal,
    "hetero": _normal,
    "profile": _normal,
    "base": _normal,
}
MAX_SHAPE = 4.0
"""lognormal:S beyond this is not seed noise: at S = 4 one draw in a thousand lies 2·10⁵
standard deviations out, and past S ≈ 26 the variance itself overflows a float."""
FACTOR_RANGE = (0.01, 100.0)
"""hetero:F: an arm 100× as noisy as the baseline (or 1/100) is the widest that still says
something; at F = 1e308 the variances overflow and every rate reads 0."""
FORMS = {
    "normal": "normal",
    "t3": "t3",
    "lognormal": f"lognormal:S (0 < S <= {MAX_SHAPE:g}, e.g. lognormal:1)",
    "hetero": (
        f"hetero:F[:K] (K >= 1 arms, default 1, with seed σ × F, {FACTOR_RANGE[0]:g} <= F <= "
        f"{FACTOR_RANGE[1]:g}, e.g. hetero:6:3)"
    ),
    "profile": "profile:F:K (like hetero:F:K, the wide arms among those with >= 2 seeds)",
    "base": f"base:F (the baseline's seed σ × F, {FACTOR_RANGE[0]:g} <= F <= {FACTOR_RANGE[1]:g})",
}


def _plain(spec: str, kind: str, numbers: list[float]) -> NoiseModel | None:
    return NoiseModel(spec, kind) if not numbers else None


def _skewed(spec: str, kind: str, numbers: list[float]) -> NoiseModel | None:
    if len(numbers) == 1 and 0 < numbers[0] <= MAX_SHAPE:
        return NoiseModel(spec, kind, shape=numbers[0])
    return None


def _wide(spec: str, kind: str, numbers: list[float]) -> NoiseModel | None:
    factor, arms = [*numbers, 1.0][:2] if 1 <= len(numbers) <= 2 else (0.0, 0.0)
    low, high = FACTOR_RANGE
    if low <= factor <= high and 1 <= arms < 2**31 and arms.is_integer():
        return NoiseModel(spec, kind, factor=factor, wide_arms=int(arms))
    return None


def _wide_baseline(spec: str, kind: str, numbers: list[float]) -> NoiseModel | None:
    low, high = FACTOR_RANGE
    if len(numbers) == 1 and low <= numbers[0] <= high:
        return NoiseModel(spec, kind, base_factor=numbers[0])
    return None


_PARSERS = {
    "normal": _plain,
    "t3": _plain,
    "lognormal": _skewed,
    "hetero": _wide,
    "profile": _wide,
    "base": _wide_baseline,
}
NORMAL = NoiseModel("normal", "normal")


def parse_noise(spec: str) -> tuple[NoiseModel, ...]:
    """The models a `--noise` value names: one, or the eight of `panel`."""
    if spec == "panel":
        return tuple(parse_one(name) for name in PANEL)
    return (parse_one(spec),)


def parse_one(spec: str) -> NoiseModel:
    """One model from its spec, e.g. "hetero:6:3"; a bad spec names the form to write."""
    kind, *args = spec.split(":")
    if kind not in _PARSERS:
        forms = ", ".join([*(f.split(" ")[0] for f in FORMS.values()), "panel"])
        raise ConfigError(f"unknown noise {spec!r}{did_you_mean(kind, _PARSERS)}; forms: {forms}")
    try:
        model = _PARSERS[kind](spec, kind, [float(a) for a in args])
    except ValueError:
        model = None
    if model is None:
        raise ConfigError(f"bad noise {spec!r}: write {FORMS[kind]}")
    return model


def check_fits(models: tuple[NoiseModel, ...], null_arms: int) -> None:
    """Refuse `hetero:F:K` with more wide arms K than the design has null arms, which would
    otherwise be clamped to them without a word. The panel's fixed models (several at once)
    keep as many of their wide arms as a small design has."""
    for model in models if len(models) == 1 else ():
        if model.wide_arms > null_arms:
            raise ConfigError(
                f"--noise {model.spec}: {model.wide_arms} wide arms, but the design has "
                f"{null_arms} arms without a planted effect; write K <= {null_arms}"
            )
