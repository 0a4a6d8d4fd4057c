"""Scaling-law fit L(N, D) = E + A/N^α + B/D^β and the compute-optimal N, D for a budget.

As in Hoffmann et al. (2022, approach 3): minimize the Huber loss (δ = 1e-3) between the
predicted and observed log loss, with log L̂ = LSE(a − α·log N, b − β·log D, e), A = eᵃ, B = eᵇ,
E = eᵉ, from a grid of initial points. Here the minimizer is a batched Levenberg–Marquardt on
iteratively reweighted least squares (the Huber weights), so every initial point and every
bootstrap replicate is fitted at once in numpy. Intervals resample runs (seeds × scales) with
replacement and refit from the best full-data solution.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from archaudit.errors import ConfigError
from archaudit.metrics import PRIMARY_LOSS
from archaudit.metrics import lower_is_better as resolve_lower
from archaudit.names import BASELINE, ResultStatus
from archaudit.ranges import REPLICATES, SEED, Range
from archaudit.stats.inference.resample import percentile_interval
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import Table

HUBER_DELTA = 1e-3
_INITS = np.array(
    list(
        itertools.product(
            (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),  # a = log A
            (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),  # b = log B
            (-1.0, 0.0, 1.0),  # e = log E
            (0.2, 0.5, 1.0),  # α
            (0.2, 0.5, 1.0),  # β
        )
    )
)
_ITERATIONS = 300
_SCREEN_ITERATIONS = 30
_POLISHED = 32
PARAMETERS = {"E": "E", "A": "A", "alpha": "size_exponent", "B": "B", "beta": "data_exponent"}
"""The law's parameters by their published names (Hoffmann et al. 2022: the JSON keys, the
intervals' keys and the console's rows), each with its `LossSurface` attribute. The exponents
are `size_exponent` and `data_exponent` in code, so that `alpha` only ever means a significance
level there."""
# Below this share of the smallest observed loss, E has run off to zero: not identified.
_E_FLOOR = 1e-3
_EXPONENT_RANGE = (0.0, 10.0)
# Centred (log N, log D) whose singular values differ by more than this lie on one line.
_COLLINEAR = 1e-6


@dataclass(frozen=True)
class LossSurface(JsonResult):
    """Fitted L(N, D) = E + A/N^α + B/D^β. In JSON the exponents keep the law's published
    names, `alpha` and `beta`."""

    E: float
    A: float
    size_exponent: float = field(metadata={"json_name": "alpha"})
    """α, the exponent of the model size N."""
    B: float
    data_exponent: float = field(metadata={"json_name": "beta"})
    """β, the exponent of the training tokens D."""
    huber_loss: float

    def predict(self, n_params: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        return self.E + self.A / n_params**self.size_exponent + self.B / tokens**self.data_exponent

    def compute_optimal(self, budget: float) -> tuple[float, float]:
        """N and D minimizing L under C = 6·N·D FLOPs (closed form; needs α, β > 0)."""
        size, data = self.size_exponent, self.data_exponent
        if size <= 0 or data <= 0:
            return math.nan, math.nan
        g = (size * self.A / (data * self.B)) ** (1.0 / (size + data))
        n_opt = g * (budget / 6.0) ** (data / (size + data))
        return n_opt, budget / (6.0 * n_opt)


@dataclass(frozen=True)
class ScalingFit(JsonResult):
    """A fitted surface with bootstrap intervals and, given a budget, the optimal N and D."""

    arm: str
    loss_metric: str
    n_points: int
    surface: LossSurface
    intervals: dict[str, tuple[float, float]]
    n_boot: int
    seed: int
    budget: float | None
    n_opt: float
    d_opt: float
    notes: tuple[str, ...] = ()


def fit_loss_surface(n_params: np.ndarray, tokens: np.ndarray, loss: np.ndarray) -> LossSurface:
    """Fit L(N, D) to arrays of runs from the grid of initial points; keep the best."""
    log_n, log_d, log_l = (
        np.log(np.asarray(x, dtype=float))[None, :] for x in (n_params, tokens, loss)
    )
    # Coarse to fine: a few steps from every initial point, then polish the most promising.
    theta, objective = _levenberg_marquardt(
        _INITS.copy(), log_n, log_d, log_l, iterations=_SCREEN_ITERATIONS
    )
    best = np.argsort(np.where(np.isfinite(objective), objective, np.inf))[:_POLISHED]
    theta, objective = _levenberg_marquardt(theta[best], log_n, log_d, log_l)
    return _surface(theta[np.nanargmin(objective)], float(np.nanmin(objective)))


@dataclass(frozen=True, kw_only=True)
class ScalingOptions:
    """Which runs `fit_scaling_law` fits and how: the findings record's `scaling` slice is
    fitted with these, and `archaudit stats scaling` has one flag per field."""

    arm: str = BASELINE
    """Arm whose runs are fitted."""
    loss_metric: str = PRIMARY_LOSS
    """The loss (lower is better)."""
    params_metric: str = "params"
    """The results' column of each run's parameter count N."""
    tokens_metric: str = "tokens"
    """The results' column of each run's training tokens D."""
    budget: float | None = field(default=None, metadata={"range": Range(0, low_open=True)})
    """FLOPs (C = 6·N·D) for optimal N, D."""
    n_boot: int = field(default=200, metadata={"range": REPLICATES})
    """Bootstrap refits."""
    seed: int = field(default=0, metadata={"range": SEED})
    """Seed of the bootstrap's draws."""
    lower_is_better: bool | None = field(
        default=None,
        metadata={
            "flag": "--lower-is-better/--higher-is-better",
            "help": "Direction of the loss. Default: the metric registry's (docs/metrics.md).",
        },
    )
    """None: the metric registry's direction; the law needs a lower-is-better loss."""


def fit_scaling(table: Table, options: ScalingOptions) -> ScalingFit:
    """`fit_scaling_law` with its settings as one record."""
    return fit_scaling_law(table, **asdict(options))


def fit_scaling_law(
    table: Table,
    *,
    arm: str = BASELINE,
    loss_metric: str = PRIMARY_LOSS,
    params_metric: str = "params",
    tokens_metric: str = "tokens",
    budget: float | None = None,
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    lower_is_better: bool | None = None,
) -> ScalingFit:
    """Fit one arm's runs across scales; each finished run with all three metrics is a point.

    The law falls with N and D, so `loss_metric` must be lower-is-better: read from its name
    unless `lower_is_better` says so.
    """
    _check_columns(table, arm, (loss_metric, params_metric, tokens_metric), lower_is_better)
    points = _points(table, arm, (params_metric, tokens_metric, loss_metric))
    if len({(n, d) for n, d, _ in points}) < 5:
        raise DesignError(
            table.source,
            f"arm {arm!r} has {len(points)} finished runs with {params_metric}, {tokens_metric} "
            f"and {loss_metric} but fewer than 5 distinct (N, D)",
            "the 5-parameter law needs runs at 5 or more model sizes / token counts",
        )
    n_params, tokens, loss = (np.array(column) for column in zip(*points, strict=True))
    _check_identifiable(table, arm, n_params, tokens)
    surface = fit_loss_surface(n_params, tokens, loss)
    # Bootstrap: one row per replicate, each with its own resampled runs, fitted together.
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(loss), size=(n_boot, len(loss)))
    start = np.tile(_theta(surface), (n_boot, 1))
    theta, _ = _levenberg_marquardt(start, *(np.log(x)[picks] for x in (n_params, tokens, loss)))
    replicates = [_surface(row, math.nan) for row in theta]
    columns = {
        name: np.array([getattr(s, attribute) for s in replicates])
        for name, attribute in PARAMETERS.items()
    }
    n_opt, d_opt = surface.compute_optimal(budget) if budget else (math.nan, math.nan)
    if budget:
        optima = np.array([s.compute_optimal(budget) for s in replicates])
        columns |= {"n_opt": optima[:, 0], "d_opt": optima[:, 1]}
    intervals = {name: percentile_interval(values, confidence) for name, values in columns.items()}
    return ScalingFit(
        arm=arm,
        loss_metric=loss_metric,
        n_points=len(loss),
        surface=surface,
        intervals=intervals,
        n_boot=n_boot,
        seed=seed,
        budget=budget,
        n_opt=n_opt,
        d_opt=d_opt,
        notes=collapse_notes(surface, intervals, float(loss.min())),
    )


def _check_identifiable(table: Table, arm: str, n_params: np.ndarray, tokens: np.ndarray) -> None:
    """N and D must vary apart: on one line in log space, A/N^α, B/D^β and E trade off."""
    sizes, counts = len(np.unique(n_params)), len(np.unique(tokens))
    centred = np.column_stack([np.log(n_params), np.log(tokens)])
    centred -= centred.mean(axis=0)
    singular = np.linalg.svd(centred, compute_uv=False)
    if min(sizes, counts) >= 3 and singular[-1] > _COLLINEAR * singular[0]:
        return
    if sizes < 3 or counts < 3:
        problem = f"{sizes} model size(s) and {counts} tokens count(s); each needs 3 or more"
    else:
        problem = "one tokens count per size (log D is a straight line in log N)"
    raise DesignError(
        table.source,
        f"arm {arm!r}: {problem}, so E, A/N^α and B/D^β cannot be told apart",
        "train some sizes at two or more tokens counts (the law needs N and D varied apart)",
    )


def collapse_notes(
    surface: LossSurface, intervals: dict[str, tuple[float, float]], smallest_loss: float
) -> tuple[str, ...]:
    """One line per sign that the fit collapsed instead of finding the law."""
    notes = []
    if surface.E / smallest_loss < _E_FLOOR:
        notes.append(
            f"E = {surface.E:.3g} ran off to zero (the smallest loss is {smallest_loss:.3g}): "
            "the irreducible loss is not identified by these runs"
        )
    low, high = _EXPONENT_RANGE
    for name in ("alpha", "beta"):
        value = getattr(surface, PARAMETERS[name])
        if not low < value <= high:
            notes.append(
                f"{name} = {value:.3g} lies outside ({low:g}, {high:g}]: the law's power term "
                "is not identified"
            )
    flat = [
        name
        for name, (lower, upper) in intervals.items()
        if math.isfinite(lower) and upper - lower <= 1e-9 * max(abs(upper), abs(lower), 1e-300)
    ]
    if flat:
        notes.append(
            f"zero-width interval for {', '.join(flat)}: every bootstrap refit landed on the "
            "same point, which measures the optimizer, not the uncertainty"
        )
    return tuple(notes)


def _check_columns(
    table: Table, arm: str, metrics: tuple[str, str, str], lower_is_better: bool | None
) -> None:
    """The arm and the (loss, params, tokens) metrics exist, and the loss is lower-is-better."""
    table.check_arm(arm)
    for metric in metrics:
        table.check_metric(metric)
    if not resolve_lower(metrics[0], lower_is_better):
        raise ConfigError(
            f"{metrics[0]!r} is higher-is-better, and L(N, D) falls with N and D: fit a loss "
            "(val_loss, bpb, perplexity), or say it is one with --lower-is-better"
        )


def _points(table: Table, arm: str, metrics: tuple[str, str, str]) -> list[tuple[float, ...]]:
    """(N, D, L) of every finished run of `arm` that has all three metrics."""
    values: dict[tuple[str, int], dict[str, float]] = {}
    for row in table.rows_of(arm):
        if row.metric in metrics and row.status == ResultStatus.OK and not math.isnan(row.value):
            values.setdefault((row.scale, row.seed), {})[row.metric] = row.value
    diverged = {
        (run_scale, seed)
        for run_scale in table.scales
        for seed, run in table.runs(arm, run_scale).items()
        if run.diverged
    }
    return [
        tuple(run[m] for m in metrics)
        for key, run in values.items()
        if len(run) == 3 and key not in diverged and min(run.values()) > 0
    ]


def _theta(surface: LossSurface) -> np.ndarray:
    return np.array(
        [
            math.log(surface.A),
            math.log(surface.B),
            math.log(surface.E),
            surface.size_exponent,
            surface.data_exponent,
        ]
    )


def _surface(theta: np.ndarray, huber_loss: float) -> LossSurface:
    a, b, e, size, data = (float(x) for x in theta)
    return LossSurface(
        E=math.exp(e),
        A=math.exp(a),
        size_exponent=size,
        B=math.exp(b),
        data_exponent=data,
        huber_loss=huber_loss,
    )


def _evaluate(
    theta: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Huber objective (K,), residuals (K, n) and Jacobian (K, n, 5) for K parameter rows."""
    a, b, e, size, data = (theta[:, i : i + 1] for i in range(5))
    shape = np.broadcast_shapes(a.shape, log_n.shape)
    log_n, log_d = np.broadcast_to(log_n, shape), np.broadcast_to(log_d, shape)
    terms = np.stack([a - size * log_n, b - data * log_d, np.broadcast_to(e, shape)], axis=-1)
    top = terms.max(axis=-1, keepdims=True)
    weights = np.exp(terms - top)
    total = weights.sum(axis=-1, keepdims=True)
    residual = (top + np.log(total))[..., 0] - log_l
    weights /= total
    jacobian = np.stack(
        [
            weights[..., 0],
            weights[..., 1],
            weights[..., 2],
            -weights[..., 0] * log_n,
            -weights[..., 1] * log_d,
        ],
        axis=-1,
    )
    size = np.abs(residual)
    huber = np.where(
        size <= HUBER_DELTA, 0.5 * residual**2, HUBER_DELTA * (size - 0.5 * HUBER_DELTA)
    )
    return huber.sum(axis=1), residual, jacobian


def _levenberg_marquardt(
    theta: np.ndarray,
    log_n: np.ndarray,
    log_d: np.ndarray,
    log_l: np.ndarray,
    iterations: int = _ITERATIONS,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimize the Huber objective from every row of `theta` at once."""
    damping = np.full(len(theta), 1e-3)
    objective, residual, jacobian = _evaluate(theta, log_n, log_d, log_l)
    eye = np.eye(theta.shape[1])
    for _ in range(iterations):
        # IRLS: Huber's weight is 1 inside δ and δ/|r| outside.
        weight = np.minimum(1.0, HUBER_DELTA / np.maximum(np.abs(residual), 1e-300))
        weighted = jacobian.transpose(0, 2, 1) * weight[:, None, :]  # (K, 5, n)
        gradient = np.matmul(weighted, residual[..., None])[..., 0]
        hessian = np.matmul(weighted, jacobian)
        scaled = hessian + damping[:, None, None] * (hessian * eye + 1e-9 * eye)
        step = np.linalg.solve(scaled, -gradient[..., None])[..., 0]
        candidate = _evaluate(theta + step, log_n, log_d, log_l)
        better = np.isfinite(candidate[0]) & (candidate[0] < objective)
        theta = np.where(better[:, None], theta + step, theta)
        objective = np.where(better, candidate[0], objective)
        residual = np.where(better[:, None], candidate[1], residual)
        jacobian = np.where(better[:, None, None], candidate[2], jacobian)
        damping = np.clip(np.where(better, damping / 3.0, damping * 4.0), 1e-12, 1e12)
        if np.all(damping >= 1e12) or np.max(np.abs(step)) < 1e-12:
            break
    return theta, objective
