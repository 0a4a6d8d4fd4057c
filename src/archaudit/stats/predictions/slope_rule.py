"""The slope rule: an arm's prediction beyond its ladder and its interval, from its Δ̂ at the
largest scale and its slope along log N, with the stated coverage at every size of drift
(issue 55).

Two numbers carry what the ladder says about an arm's continuation: A, its Δ̂ at the largest
scale, and t, its weighted slope of Δ̂ on log N in units of its standard error. The interval is

    A + σ_A·(c(t) ± w(t)),   c(t) = κ·t·m(|t|),

and the prediction A itself, moved only as far as it must to lie inside the interval
(`ArmSlopes.point`).

κ = SE(slope)·h/σ_A the slope's reach to the target (h the log N from the largest scale), m and w
piecewise linear in |t| on `KNOTS`. They are chosen once per design (κ, ρ = corr(A, slope), the
seed σ's degrees of freedom) and level, by minimising the mean width of a quiet arm (no drift)
subject to coverage at the level for every arm whose Δ continues beyond the ladder at λ times
its slope along it (Δ_target = Δ_largest + λ·slope·h), for every size of slope (`SIZES`) and every
λ in `CONTINUATION`: from a fade (the Δ of a power law N^(-1/2) moves on a quarter to two fifths
as far as its ladder slope says at 4-16x: λ ≈ 0.25-0.41) to a line in log N (λ = 1). Kabaila
and Giri's intervals that use uncertain prior information (2009) in one setting: coverage is
exact under the normal model for every drift, and the width is spent where the evidence of
drift is.

Coverage is computed, not simulated: given t, A's error is normal with mean ρ·(t − γ) (γ the
slope's true size in standard errors). The rule is solved for a known σ and its widths are then
scaled by the least factor that holds the level at every size and λ, with the coverage
integrated over σ̂'s χ distribution where σ is estimated (`sigma_allowance`; `_scale_nodes`
scales both t and the interval), which also closes what the penalty solve leaves short.

A pretest (follow the line where t passes a cutoff) fails the arms it cannot see: an arm whose
slope is 1-2 standard errors out is predicted flat and missed at the target (known-truth
ladders, docs/predict.md: a growing arm held 52-59% of its 80% intervals at 4x).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special
from scipy import stats as sps

from archaudit.stats.predictions.ladder_fit import LadderArrays, weighted_line
from archaudit.stats.simulation.disk_cache import cached, in_range

CONTINUATION = (0.2, 1.0)
"""λ: the least and most an arm's Δ continues beyond the ladder, as a share of its slope along
it, that every interval covers at its level (and λ between them, `_LAMBDAS`)."""
_LAMBDAS = np.array([CONTINUATION[0], 0.6, CONTINUATION[1]])
"""The λ the solve constrains (`CHECKED_LAMBDAS` the 9 checked)."""
CHECKED_LAMBDAS = np.linspace(*CONTINUATION, 9)
"""The λ at which the rule's coverage is checked and the σ allowance solved: the ends and 7
between."""
REFERENCE_LEVEL = 0.8
"""The level whose rule sets the centre c(t) and holds the point; every other level keeps that
centre and has its own width."""
KNOTS = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 9.0, 12.0])
"""|t| at which m and w are free; between them linear, beyond the last m constant and w on the
last segment's line."""
SIZES = np.concatenate(
    [np.arange(0.0, 3.0, 0.25), np.arange(3.0, 6.0, 0.5), np.arange(6.0, 12.01, 1.0)]
)
"""The true slope sizes γ (in standard errors) at which coverage is required."""
_T_NODES = np.linspace(-5.5, 5.5, 67)
_T_WEIGHTS = sps.norm.pdf(_T_NODES) * (_T_NODES[1] - _T_NODES[0])
_SIGMA_NODES = 24
"""Equal-probability nodes of σ̂/σ."""
KAPPA_STEP = 0.05
"""The grid of κ, in log (`RuleDesign.of`)."""
RHO_STEP = 0.05
"""The grid of ρ."""
EXACT_DOF = 200
"""Seed σ's degrees of freedom from which it is treated as known."""
OVER = 0.04
"""Coverage at the ends of CONTINUATION at most the level plus this (a quiet arm's too): within
5 points of the level, issue 55's tolerance, with a point's margin."""
INTERVAL_IN_WORDS = (
    "the interval holds, at the stated level, any arm whose Δ continues beyond the ladder at "
    f"{CONTINUATION[0]:g} to {CONTINUATION[1]:g} times its slope along it (from a fade to the "
    "line in log N), whatever the slope's size"
)
"""The interval in words, as `stats` and the report print it (whichever point it holds)."""
IN_WORDS = (
    "each arm's Δ̂ at the largest trained scale, or where the interval rules that out the "
    f"interval's end nearest it; {INTERVAL_IN_WORDS}"
)
"""The prediction and its interval in words (`ArmSlopes.point`)."""
_MARGIN = 0.002
"""The penalties leave constraints violated by about this much: aimed inside by it."""
_NODES_MARGIN = 0.001
"""σ̂'s `_SIGMA_NODES` put coverage up to 0.0005 above its value on 16 times as many: the
allowance aims inside by twice that."""
_PENALTIES = (1e1, 1e2, 1e3, 1e4, 1e5)
WIDTH_ELSEWHERE = 0.05
"""The weight of the mean width over every size beside the quiet arm's, in the objective."""
CENTRE_BOUNDS, WIDTH_BOUNDS = (-1.0, 3.0), (0.0, 60.0)
"""Where the solve looks for each knot's m and w (and a stored rule's values must lie)."""
SOLVE_VERSION = 1
"""Bump when a solve's arithmetic changes: stored rules and allowances are then solved again
(the constants a solve reads are in their key already, `_solve_key`)."""


@dataclass(frozen=True)
class RuleDesign:
    """What the rule depends on, on a grid (`of`) so that ladders alike share one solve."""

    kappa: float
    """SE(slope)·h/σ_A."""
    rho: float
    """corr(A, slope)."""

    @classmethod
    def of(cls, kappa: float, rho: float) -> RuleDesign:
        """The design on the grid nearest (κ in steps of KAPPA_STEP in log, ρ in RHO_STEP):
        where the scales' σ differ (`predict.unequal_sigmas`) κ and ρ vary continuously, and a
        solve for each took seconds. The nearest grid point moves a continuation's reach by at
        most half a step (2.5%)."""
        snapped = math.exp(KAPPA_STEP * round(math.log(kappa) / KAPPA_STEP)) if kappa > 0 else 0.0
        near = RHO_STEP * round(min(max(rho, 0.0), 0.95) / RHO_STEP)
        return cls(round(snapped, 6), round(near, 2))


@dataclass(frozen=True)
class Rule:
    """m and w on KNOTS for one design and level."""

    design: RuleDesign
    level: float
    centre: np.ndarray
    width: np.ndarray

    def interval(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(c(t), w(t)) in units of σ_A."""
        centre = self.design.kappa * t * (_basis(t, extend=False) @ self.centre)
        return centre, _basis(t, extend=True) @ self.width

    def quiet_width(self) -> float:
        """The mean width of a quiet arm's interval (γ = 0), in units of σ_A."""
        return float(_Problem(self.design, self.level).quiet_width(self.width))


def _basis(t: np.ndarray, *, extend: bool) -> np.ndarray:
    """(..., K) linear interpolation weights of |t| on KNOTS; beyond the last knot constant, or
    (`extend`) on the last segment's line."""
    a = np.abs(np.asarray(t, dtype=float))
    at = np.clip(np.searchsorted(KNOTS, a, side="right") - 1, 0, len(KNOTS) - 2)
    frac = (a - KNOTS[at]) / (KNOTS[at + 1] - KNOTS[at])
    if not extend:
        frac = np.minimum(frac, 1.0)
    basis = np.zeros((*a.shape, len(KNOTS)))
    np.put_along_axis(basis, at[..., None], (1.0 - frac)[..., None], axis=-1)
    np.put_along_axis(basis, (at + 1)[..., None], frac[..., None], axis=-1)
    return basis


def _scale_nodes(dof: int) -> np.ndarray:
    """(J,) σ̂/σ at equal-probability nodes of √(χ²_dof/dof) (1 where σ is known)."""
    if dof >= EXACT_DOF:
        return np.ones(1)
    p = (np.arange(_SIGMA_NODES) + 0.5) / _SIGMA_NODES
    return np.sqrt(sps.chi2.ppf(p, dof) / dof)


def _density(x: np.ndarray) -> np.ndarray:
    """The standard normal density (scipy's `norm.pdf` without its per-call overhead, which
    was half of a solve)."""
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


class _Problem:
    """Coverage and width of a rule at SIZES × λ, with their gradients in (m, w)."""

    def __init__(
        self, design: RuleDesign, level: float, lambdas: np.ndarray = _LAMBDAS, dof: int = EXACT_DOF
    ) -> None:
        """`dof`: the seed σ's degrees of freedom, EXACT_DOF for the known σ the rule is solved
        for (fewer: `sigma_allowance`)."""
        self.design, self.level = design, level
        self.v = _scale_nodes(dof)[:, None]  # (J, 1)
        self.vw = np.full(self.v.shape, 1.0 / len(self.v))
        t = SIZES[:, None, None] + _T_NODES[None, None, :]  # (G, 1, X): t in true SE
        self.seen = t / self.v[None]  # (G, J, X): t as estimated
        self.centre_basis = _basis(self.seen, extend=False)
        self.width_basis = _basis(self.seen, extend=True)
        s = math.sqrt(1.0 - design.rho**2)
        # λκγ − ρ(t − γ), over s: (L, G, 1, X)
        shift = lambdas[:, None, None, None] * design.kappa * SIZES[None, :, None, None]
        self.base = (shift - design.rho * _T_NODES[None, None, None, :]) / s
        self.s = s

    def coverage(self, centre: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, ...]:
        """((L, G) coverage, its (L, G, K) gradients in m and in w)."""
        kappa, v = self.design.kappa, self.v[None, None]
        c = kappa * self.seen * (self.centre_basis @ centre)  # (G, J, X)
        w = self.width_basis @ width
        hi, lo = self.base - v * (c - w) / self.s, self.base - v * (c + w) / self.s
        mass = _T_WEIGHTS * self.vw[:, :1]  # (J, X)
        cover = np.sum((special.ndtr(hi) - special.ndtr(lo)) * mass, axis=(-2, -1))
        d_hi, d_lo = _density(hi) * mass, _density(lo) * mass  # (L, G, J, X)
        dc = -(d_hi - d_lo) * v / self.s * kappa * self.seen
        dw = (d_hi + d_lo) * v / self.s
        grad_m = np.einsum("lgjx,gjxk->lgk", dc, self.centre_basis)
        grad_w = np.einsum("lgjx,gjxk->lgk", dw, self.width_basis)
        return cover, grad_m, grad_w

    def width_weights(self) -> np.ndarray:
        """(G, K): the mean width at each size, in units of σ_A, is this @ w (linear in w)."""
        mass = _T_WEIGHTS * self.vw[:, :1]
        scaled = 2.0 * self.v * mass  # (J, X)
        return np.einsum("gjxk,jx->gk", self.width_basis, scaled)

    def quiet_width(self, width: np.ndarray) -> float:
        return float(self.width_weights()[0] @ width)


def _objective(problem: _Problem) -> np.ndarray:
    """(K,) the linear objective in w: the quiet arm's mean width plus WIDTH_ELSEWHERE times
    the mean over the other sizes."""
    per_size = problem.width_weights()
    return per_size[0] + WIDTH_ELSEWHERE * per_size[1:].mean(axis=0)


def _solve(problem: _Problem, centre: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(m, w) minimising the objective under the coverage constraints (m fixed if given), by
    quadratic penalties of increasing weight (SLSQP's linearised constraints were found
    incompatible from a start that covers too much), each solve started at the last."""
    k, level = len(KNOTS), problem.level
    low, top = level + _MARGIN, level + min(OVER, 0.8 * (1.0 - level)) - _MARGIN
    ends = [0, len(_LAMBDAS) - 1]
    gradient = _objective(problem)
    free_centre = centre is None

    def split(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (p[:k], p[k:]) if centre is None else (centre, p)  # narrows centre for mypy

    def penalised(p: np.ndarray, weight: float) -> tuple[float, np.ndarray]:
        cover, gm, gw = problem.coverage(*split(p))
        short, over = np.minimum(cover - low, 0.0), np.maximum(cover[ends] - top, 0.0)
        grads = np.concatenate([gm, gw], -1) if free_centre else gw
        value = float(gradient @ split(p)[1]) + weight * (np.sum(short**2) + np.sum(over**2))
        grad = 2.0 * weight * (np.einsum("lg,lgk->k", short, grads)
                               + np.einsum("lg,lgk->k", over, grads[ends]))  # fmt: skip
        grad[-k:] += gradient
        return value, grad

    z = float(sps.norm.ppf((1.0 + level) / 2.0))
    width0 = z * 1.5 + 0.6 * problem.design.kappa * KNOTS
    p = np.concatenate([np.full(k, 0.6), width0]) if free_centre else width0
    bounds = [CENTRE_BOUNDS] * (k if free_centre else 0) + [WIDTH_BOUNDS] * k
    for weight in _PENALTIES:
        p = optimize.minimize(
            penalised, p, args=(weight,), jac=True, method="L-BFGS-B", bounds=bounds,
            options={"maxiter": 500},
        ).x  # fmt: skip
    return split(p)


@functools.lru_cache(maxsize=256)
def rule(design: RuleDesign, level: float) -> Rule:
    """The rule for this design at `level`: the centre from REFERENCE_LEVEL's solve. Solved once
    per machine (about 2 s a solve, two for another level) and kept in the stats disk cache,
    read back to the bit."""
    solve = functools.partial(_solved, design, level)
    knots = cached("slope-rule", _solve_key(design, level), solve, _knots)
    return Rule(design, level, np.array(knots["centre"]), np.array(knots["width"]))


def _solved(design: RuleDesign, level: float) -> dict[str, list[float]]:
    """m and w solved (`_solve`), as `rule` stores them."""
    centre, width = _solve(_Problem(design, REFERENCE_LEVEL), None)
    if level != REFERENCE_LEVEL:
        _, width = _solve(_Problem(design, level), centre)
    return {"centre": centre.tolist(), "width": width.tolist()}


def _knots(value: Any) -> dict[str, list[float]]:
    """A stored rule, or ValueError: m and w, a number within the solve's bounds per knot."""
    bounds = {"centre": CENTRE_BOUNDS, "width": WIDTH_BOUNDS}
    if not isinstance(value, dict) or set(value) != set(bounds):
        raise ValueError("not a rule's m and w")
    for name in bounds:
        if not isinstance(value[name], list) or len(value[name]) != len(KNOTS):
            raise ValueError(f"{name}: not {len(KNOTS)} values")
    return {name: [in_range(x, *bounds[name]) for x in value[name]] for name in bounds}


def _solve_key(design: RuleDesign, level: float, **more: Any) -> dict[str, Any]:
    """What a solve depends on, as the disk cache's key: the design, the level and every
    constant the solve reads."""
    return {
        "v": SOLVE_VERSION,
        "kappa": design.kappa,
        "rho": design.rho,
        "level": level,
        "reference": REFERENCE_LEVEL,
        "knots": KNOTS.tolist(),
        "sizes": SIZES.tolist(),
        "lambdas": _LAMBDAS.tolist(),
        "t_nodes": [float(_T_NODES[0]), float(_T_NODES[-1]), len(_T_NODES)],
        "over": OVER,
        "margin": _MARGIN,
        "penalties": list(_PENALTIES),
        "elsewhere": WIDTH_ELSEWHERE,
        **more,
    }


@functools.lru_cache(maxsize=1024)  # scipy's t.ppf is slow; a prediction asks hundreds of times
def t_factor(level: float, dof: float) -> float:
    """The Student-t quantile over the normal's at `level`: the allowance A's own seed-noise
    interval takes for a σ estimated on `dof` degrees of freedom (`seed_quantile`), and the
    bound `sigma_allowance` searches below."""
    if dof >= EXACT_DOF:
        return 1.0
    q = (1.0 + level) / 2.0
    return float(sps.t.ppf(q, max(dof, 1.0)) / sps.norm.ppf(q))


@functools.lru_cache(maxsize=1024)
def sigma_allowance(design: RuleDesign, level: float, dof: int) -> float:
    """`_least_allowance`, found once per machine and kept in the stats disk cache (every σ
    treated as known, from EXACT_DOF up, under one key)."""
    key = _solve_key(
        design, level, dof=min(dof, EXACT_DOF), checked=CHECKED_LAMBDAS.tolist(),
        sigma_nodes=_SIGMA_NODES, nodes_margin=_NODES_MARGIN,
    )  # fmt: skip
    compute = functools.partial(_least_allowance, design, level, dof)
    return cached("slope-allowance", key, compute, lambda v: in_range(v, 0.5, 100.0))


def _least_allowance(design: RuleDesign, level: float, dof: int) -> float:
    """The least factor on the rule's widths that holds `level` at every size and every λ in
    CONTINUATION when σ is estimated on `dof` degrees of freedom: the coverage integrated over
    σ̂'s χ distribution (`_scale_nodes`), not Student's t, which spends more (at 8 degrees of
    freedom 1.06-1.08 against t's 1.09 at 80%, 1.08-1.12 against 1.18 at 95%). With σ known
    (EXACT_DOF) it closes what the penalty solve leaves: 95% rules short by up to 0.6 points
    at 3 scales and at 16× take 1.004-1.014; the rest give back its margin (0.996-1.000)."""
    r = rule(design, level)
    problem = _Problem(design, level, CHECKED_LAMBDAS, dof=dof)

    def short(factor: float) -> float:
        return float(problem.coverage(r.centre, r.width * factor)[0].min()) - level - _NODES_MARGIN

    upper = t_factor(level, dof)
    while short(upper) < 0.0:  # t's allowance held in every design measured; kept as a bound
        upper *= 1.1
    return float(optimize.brentq(short, 0.5, upper, xtol=1e-4))


def seed_quantile(level: float, dof: float) -> float:
    """The half-width of A's own seed-noise interval at `level`, in units of σ_A."""
    return float(sps.norm.ppf((1.0 + level) / 2.0)) * t_factor(level, dof)


@dataclass(frozen=True)
class ArmSlopes:
    """Each arm's Δ̂ at the largest scale (A), its seed SD (σ_A), its slope's t and the design
    of its prediction at one target."""

    largest: np.ndarray
    sigma: np.ndarray
    t: np.ndarray
    designs: tuple[RuleDesign, ...]
    dof: float
    """The seed σ's degrees of freedom (`sigma_allowance`)."""
    _halfwidths: dict[float, np.ndarray] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """`halfwidth` by level: a prediction asks for each several times (its band, draws, notes
    and backtest), and each is a rule evaluated arm by arm."""

    @functools.cached_property
    def centre(self) -> np.ndarray:
        """(m,) the interval's centre: A + σ_A·c(t), REFERENCE_LEVEL's (the same at every
        level)."""
        moved = [rule(d, REFERENCE_LEVEL).interval(t)[0] for d, t in self._arms()]
        return self.largest + self.sigma * np.array(moved)

    def point(self) -> np.ndarray:
        """(m,) the prediction: A where REFERENCE_LEVEL's interval holds it, else the interval's
        end nearest A. The centre is chosen for the interval's width, not for the point: it
        follows slopes that are mostly seed noise, and its signs and orders were worse than
        A's on known-truth ladders (docs/predict.md); A moves only where the interval rules
        it out."""
        centre, half = self.centre, self.halfwidth(REFERENCE_LEVEL)
        return np.clip(self.largest, centre - half, centre + half)

    def halfwidth(self, level: float) -> np.ndarray:
        """(m,) σ_A·w(t) at `level`, times `sigma_allowance`."""
        if level not in self._halfwidths:
            dof = max(math.floor(self.dof), 1)  # fewer, never more: the larger allowance
            widths = [
                rule(d, level).interval(t)[1] * sigma_allowance(d, level, dof)
                for d, t in self._arms()
            ]
            self._halfwidths[level] = self.sigma * np.array(widths)
        return self._halfwidths[level]

    def _arms(self) -> list[tuple[RuleDesign, np.ndarray]]:
        return [(d, np.asarray(t)) for d, t in zip(self.designs, self.t, strict=True)]


def arm_slopes(ladder: LadderArrays, target: float, dof: float) -> ArmSlopes:
    """Each arm's A, σ_A, slope t and design at log N `target`: the slope `ladder_fit`'s
    weighted line's; `dof` the seed σ's (pooled over every scale of the ladder, which a ladder
    cut to its first scales does not sum to)."""
    variances = ladder.variances
    _, lever, spread = weighted_line(ladder.x, 1.0 / variances)
    se = 1.0 / np.sqrt(spread)
    sigma = np.sqrt(variances[:, -1])
    rho = lever[:, -1] * variances[:, -1] / (sigma * se)  # corr(A, slope)
    kappa = se * (target - ladder.x[-1]) / sigma
    designs = tuple(RuleDesign.of(float(k), float(r)) for k, r in zip(kappa, rho, strict=True))
    slope = np.sum(lever * ladder.deltas, axis=-1)
    return ArmSlopes(ladder.deltas[:, -1], sigma, slope / se, designs, dof)


@dataclass(frozen=True)
class RuleBand:
    """The slope rule's interval along the new points: the seed noise of A up to the largest
    scale, the rule's at the target, and straight between them in log N (the curve's band is
    drawn so; only the target's is the rule's)."""

    slopes: ArmSlopes
    steps: np.ndarray
    """(T,) the share of the way from the largest scale to the target of each new point."""

    def bounds(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """((m, T) low, (m, T) high) at `level`."""
        slopes = self.slopes
        middle = (
            slopes.largest[:, None]
            + self.steps[None, :] * (slopes.centre - slopes.largest)[:, None]
        )
        seed = seed_quantile(level, slopes.dof) * slopes.sigma[:, None]
        half = seed + self.steps[None, :] * (slopes.halfwidth(level)[:, None] - seed)
        return middle - half, middle + half

    def hold(self, values: np.ndarray) -> np.ndarray:
        """(m, T) `values` moved only as far as they must to lie inside REFERENCE_LEVEL's band
        (at the target: `ArmSlopes.point` where `values` is A)."""
        return np.clip(values, *self.bounds(REFERENCE_LEVEL))


def rule_forecast(ladder: LadderArrays, new: np.ndarray) -> tuple[np.ndarray, RuleBand]:
    """((m, T) the prediction at the new points, its band): A held inside the band."""
    x = ladder.x
    slopes = arm_slopes(ladder, float(new[-1]), float(np.sum(ladder.dof)))
    reach = float(new[-1]) - float(x[-1])
    steps = np.clip((new - x[-1]) / reach, 0.0, 1.0) if reach > 0 else np.ones(len(new))
    band = RuleBand(slopes, steps)
    return band.hold(np.repeat(slopes.largest[:, None], len(new), axis=1)), band
