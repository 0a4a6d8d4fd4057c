"""Level claims: a diagnostic measure, one value per unit, judged against a published band.

Some published claims are not a difference between arms but a level: "the LM head suppresses
95–99% of the logit gradient" (LiB), "trained models put a large share of attention on the
first token" (Xiao et al. 2023), "pruning a layer takes away the gain from more samples" (FLB).
A `level` claim names a registered `LevelMeasure` and a `band`; the measure gives one value per
independent unit (a seed's trained model, or a text window of one named model), stored in
`<audit>/levels/<claim>.json`, and `level_test` judges the mean:

- the test: at each finite edge of the band, a one-sided one-sample t test at the claim's
  `alpha` (0.05 unless the file says otherwise) over the units; with two edges this is the two
  one-sided tests (TOST) of equivalence, whose p is the larger of the two. Equivalently, the
  1 − 2α t interval of the mean lies inside the band.
- reproduced: every finite edge is passed (the mean is declared inside the band);
  contradicted: an edge is declared crossed the other way (the mean is declared outside);
  not established: neither, with the power the units had for the distance measured and the
  units that would give 0.8 (the noncentral t; with two edges the smaller edge's power, an
  upper bound of the TOST's).

The band, the measure, the units and α are fixed in the claim file before its confirming run
(docs/replications.md lists every setting tried). Measuring needs torch (the diagnostics);
judging reads the stored values only (scipy).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from archaudit.errors import ConfigError
from archaudit.files import atomic_write_text
from archaudit.registry import Registry

if TYPE_CHECKING:
    import torch

    from archaudit.audit.setup.spec import AuditSpec
    from archaudit.diagnose.access import ModelView
    from archaudit.diagnose.tts import TTSCurves


class Claim(Protocol):
    """What a measure reads of a level claim (`audit.replicating.replicate.Claim` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def measure(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def scale(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def items(self) -> int: ...
    @property
    def samples(self) -> int: ...
    @property
    def temperature(self) -> float: ...


LEVELS_DIR = "levels"
"""Where a level claim's measured values are stored, under its audit's folder."""
POWER_GOAL = 0.8
MAX_UNITS = 1000


@dataclass(frozen=True, kw_only=True)
class LevelSample:
    """A level claim's measured values, one per unit, and what they were measured on."""

    measure: str
    unit: str
    """What one value is: "seed" (a trained model per seed) or "text window"."""
    values: tuple[float, ...]
    reference: float = math.nan
    """The level chance gives (uniform attention, a random gradient direction), for context."""
    reference_name: str = ""
    source: str = ""
    """What was measured, in words (the runs or the model file, the text)."""
    cpu_s: float = 0.0
    """Process CPU seconds the measuring took."""

    def to_json(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "values": list(self.values)}

    @classmethod
    def from_json(cls, data: dict) -> LevelSample:
        return cls(**{**data, "values": tuple(float(v) for v in data["values"])})


def sample_path(audit_dir: Path, claim: str) -> Path:
    return audit_dir / LEVELS_DIR / f"{claim}.json"


def write_sample(sample: LevelSample, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(sample.to_json(), indent=2, allow_nan=True) + "\n")
    return path


def read_sample(path: Path) -> LevelSample | None:
    """The stored values, or None when not measured yet."""
    if not path.is_file():
        return None
    return LevelSample.from_json(json.loads(path.read_text()))


def stored_sample(claim: Claim, audit_dir: Path) -> LevelSample | None:
    """The claim's stored values when they are of its measure; None when not measured yet or
    measured with another (a claim whose measure changed is measured again, never judged on
    the old measure's values)."""
    sample = read_sample(sample_path(audit_dir, claim.name))
    return sample if sample is not None and sample.measure == claim.measure else None


# --- the test ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LevelTest:
    """`level_test`'s answer: the mean, its 1 − 2α interval, and the sign of the declaration."""

    n: int
    mean: float
    sd: float
    interval: tuple[float, float]
    p: float
    """The TOST p: the largest one-sided p of the finite edges (the mean inside the band)."""
    p_outside: float
    """The smallest one-sided p of the mean lying beyond an edge."""
    sign: int
    """+1: declared inside the band; −1: declared outside; 0: neither."""
    power: float | None
    """For the distance measured (None: fewer than 2 units, or no spread)."""
    units_needed: int | None
    """The fewest units with power ≥ 0.8 at that distance (None: none up to 1000)."""
    distance_sd: float
    """The measured distance to the nearest finite edge, in the units' sd (negative: outside)."""


def level_test(values: Sequence[float], band: tuple[float, float], alpha: float) -> LevelTest:
    """One-sided t tests of the mean of `values` at each finite edge of `band` (module doc)."""
    from scipy import stats as sps

    x = [float(v) for v in values if math.isfinite(v)]
    n = len(x)
    mean = sum(x) / n if n else math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1)) if n > 1 else math.nan
    edges = [(edge, side) for edge, side in ((band[0], 1), (band[1], -1)) if math.isfinite(edge)]
    if n < 2 or not sd > 0:
        inside = bool(n) and all(side * (mean - edge) > 0 for edge, side in edges)
        return LevelTest(
            n=n, mean=mean, sd=sd, interval=(mean, mean), p=math.nan, p_outside=math.nan,
            sign=0, power=None, units_needed=None,
            distance_sd=math.inf if inside else -math.inf,
        )  # fmt: skip
    se = sd / math.sqrt(n)
    df = n - 1
    t_in = [side * (mean - edge) / se for edge, side in edges]
    p_in = max(float(sps.t.sf(t, df)) for t in t_in)
    p_out = min(float(sps.t.cdf(t, df)) for t in t_in)
    half = float(sps.t.isf(alpha, df)) * se
    sign = 1 if p_in < alpha else -1 if p_out < alpha else 0
    distance = min(side * (mean - edge) for edge, side in edges) / sd
    return LevelTest(
        n=n, mean=mean, sd=sd, interval=(mean - half, mean + half), p=p_in, p_outside=p_out,
        sign=sign, power=one_sided_power(distance, n, alpha),
        units_needed=units_for(distance, alpha), distance_sd=distance,
    )  # fmt: skip


def one_sided_power(distance_sd: float, n: int, alpha: float) -> float:
    """The one-sided one-sample t test's power at `n` units for a mean `distance_sd` sd past
    the edge (the noncentral t)."""
    from scipy import stats as sps

    df = n - 1
    return float(sps.nct.sf(sps.t.isf(alpha, df), df, distance_sd * math.sqrt(n)))


def units_for(distance_sd: float, alpha: float, goal: float = POWER_GOAL) -> int | None:
    """The fewest units (≥ 2) whose power reaches `goal` at `distance_sd`; None up to 1000."""
    if not distance_sd > 0:
        return None
    for n in range(2, MAX_UNITS + 1):
        if one_sided_power(distance_sd, n, alpha) >= goal:
            return n
    return None


# --- the measures --------------------------------------------------------------------------


Value = Callable[[Claim, "ModelView", "torch.Tensor"], tuple[float, float]]
"""One unit's value: (the measure, its chance level) of a model on its token rows."""


@dataclass(frozen=True, kw_only=True)
class LevelMeasure:
    """A registered measure a level claim can name: one number per unit."""

    name: str
    description: str
    reference_name: str
    """What the chance level (the value's second number) is, in words."""
    value: Value


MEASURES: Registry[LevelMeasure] = Registry("level measure")


def level_measure(name: str, *, description: str, reference_name: str = ""):
    """Register a measure: `@level_measure("sink_ratio", description=..., reference_name=...)`
    on a function `(claim, view, rows) -> (value, chance level)`."""

    def add(fn: Value) -> Value:
        MEASURES.register(name)(
            LevelMeasure(
                name=name, description=description, reference_name=reference_name, value=fn
            )
        )
        return fn

    return add


def trains(claim: Claim) -> bool:
    """Whether a level claim's units are the audit's runs (trained first), one per seed; with a
    `model` file they are text windows of that model, and nothing trains."""
    return not claim.model


def measure_claim(claim: Claim, spec: AuditSpec) -> LevelSample:
    """Measure `claim`'s values (its runs must be trained when it `trains`) and store them; a
    stored sample of the claim's measure is read back, not measured again."""
    stored = stored_sample(claim, spec.audit_dir)
    if stored is not None:
        return stored
    import time

    start = time.process_time()
    sample = measure_units(claim, spec)
    sample = dataclasses.replace(sample, cpu_s=round(time.process_time() - start, 3))
    write_sample(sample, sample_path(spec.audit_dir, claim.name))
    return sample


def measure_units(claim: Claim, spec: AuditSpec) -> LevelSample:
    """The measure per unit: each finished run of the claim's arm (a seed), or each text
    window of the claim's `model`, on the corpus's held-out end."""
    import torch

    from archaudit.diagnose.access import view_of

    measure = MEASURES.get(claim.measure)
    text = _heldout_text(spec)
    pairs: list[tuple[float, float]] = []
    with torch.no_grad():
        if trains(claim):
            runs = _finished_runs(claim, spec)
            for run in runs:
                view = view_of(run)
                pairs.append(measure.value(claim, view, _windows(claim, view, text)))
            unit, source = "seed", f"{len(runs)} seeds of {claim.arm or 'baseline'}"
        else:
            view = view_of(claim_model(claim))
            rows = _windows(claim, view, text)
            pairs = [measure.value(claim, view, rows[i : i + 1]) for i in range(rows.shape[0])]
            unit, source = "text window", f"{Path(claim.model).name}"
    return LevelSample(
        measure=claim.measure, unit=unit, values=tuple(v for v, _ in pairs),
        reference=sum(r for _, r in pairs) / len(pairs), reference_name=measure.reference_name,
        source=f"{source}, {claim.tokens} held-out tokens "
        f"{'each' if unit == 'seed' else 'in all'} in windows of {claim.window}",
    )  # fmt: skip


def _windows(claim: Claim, view: ModelView, text: str) -> torch.Tensor:
    from archaudit.diagnose.windows import token_windows

    window = min(claim.window, view.context_length - 1)
    return token_windows(view, text, tokens=claim.tokens, window=window)


def claim_model(claim: Claim, data_root: Path | None = None) -> str:
    """A level claim's model file: its `model`, relative to the benchmark data root
    (`$ARCHAUDIT_DATA`, else ../shared/data) unless absolute."""
    if not claim.model or Path(claim.model).is_absolute():
        return claim.model
    if data_root is None:
        from archaudit.evals.suites import resolve_data_root

        data_root = Path(resolve_data_root()).absolute()
    return (data_root / claim.model).as_posix()


def _finished_runs(claim: Claim, spec: AuditSpec) -> list[Path]:
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.grid.store import read_finished
    from archaudit.names import BASELINE

    plan = make_plan(spec)
    arm = claim.arm or BASELINE
    scale = claim.scale or spec.scales[-1].name
    runs = [r for r in plan.runs if r.arm == arm and r.scale == scale]
    done = [plan.run_dir(r) for r in runs if read_finished(plan.run_dir(r), r) is not None]
    if not done:
        raise ConfigError(
            f"claims.{claim.name}: no finished run of {arm!r} at {scale!r} to measure"
        )
    return done


def _heldout_text(spec: AuditSpec) -> str:
    """The corpus's last `val_fraction` of characters (the validation end of its split)."""
    from archaudit.data.corpus import corpus_text

    text = corpus_text(spec.recipe)[0]()
    return text[-max(int(len(text) * spec.recipe.val_fraction), 1) :]


def uniform_sink(window: int, sink_tokens: int = 1) -> float:
    """The first-`sink_tokens` mass a causal head spreading its weight evenly gives, averaged
    over the queries t ≥ k of a `window`: mean of k/(t + 1)."""
    k = sink_tokens
    return sum(k / (t + 1) for t in range(k, window)) / (window - k)


@level_measure(
    "sink_ratio",
    description="the first-token attention mass (diagnose attention), averaged over the "
    "layers past the first two (all layers when there are two or fewer), over the mass a "
    "uniform causal head gives at the same window (1 = no sink)",
    reference_name="a uniform head",
)
def sink_ratio(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    from archaudit.diagnose.attention import attention_focus

    result = attention_focus(view, rows)
    layers = result.sink_mass_per_layer
    past = layers[2:] if len(layers) > 2 else layers
    return sum(past) / len(past) / uniform_sink(result.window), 1.0


@level_measure(
    "suppressed_fraction",
    description="the LM head's suppressed fraction of the logit gradient (diagnose "
    "bottleneck), its mean over the unit's tokens",
    reference_name="a random gradient direction (1 − rank/V)",
)
def suppressed_fraction(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    from archaudit.diagnose.bottleneck import gradient_bottleneck

    result = gradient_bottleneck(view, rows)
    return result.suppressed_fraction.mean, result.chance_fraction


Gain = Callable[["TTSCurves"], float]
"""A model's gain from N = 1 to N = `samples` read off its test-time scaling curves."""


def _gain_lost(claim: Claim, view: ModelView, rows: torch.Tensor, gain: Gain) -> float:
    """The full model's `gain` minus the pruned model's (one layer pruned by block influence,
    scored on `rows`), both on `claim.items` reasoning items with N = 1 and `samples`, sampled
    at `claim.temperature`."""
    from archaudit.diagnose.pruning import choose_layers, layer_scores, pruned_view
    from archaudit.diagnose.reasoning import reasoning_items
    from archaudit.diagnose.tts import tts_curves

    items = reasoning_items(claim.items, seed=1)
    pruned = pruned_view(view, choose_layers("block-influence", layer_scores(view, rows), 1))
    full, cut = (
        gain(
            tts_curves(
                model,
                items,
                ns=(1, claim.samples),
                budgets=(0,),
                temperature=claim.temperature,
            )
        )
        for model in (view, pruned)
    )
    return full - cut


def vote_gain(curves: TTSCurves) -> float:
    """Majority vote over all N samples minus the first sample alone."""
    return curves.majority_vote[-1] - curves.majority_vote[0]


def vote_gain_over_mean(curves: TTSCurves) -> float:
    """Majority vote over all N samples minus the mean accuracy of one sample, estimated from
    all N (pass@1 = c/N per item: the first sample's expectation, with N times less variance)."""
    return curves.majority_vote[-1] - curves.best_of_n[0]


def vote_share(curves: TTSCurves) -> float:
    """The share of one-sample errors majority voting over all N samples fixes:
    (vote@N − pass@1)/(1 − pass@1), a gain in units of the room the model had (1: every error
    fixed, 0: none, < 0: voting made it worse); NaN for a model that makes no one-sample error
    (nothing to fix: the level test leaves such a unit out)."""
    room = 1.0 - curves.best_of_n[0]
    return (curves.majority_vote[-1] - curves.best_of_n[0]) / room if room > 0 else math.nan


def oracle_gain(curves: TTSCurves) -> float:
    """Best-of-N with an oracle verifier (pass@N) minus pass@1."""
    return curves.best_of_n[-1] - curves.best_of_n[0]


@level_measure(
    "vote_gain_lost",
    description="the majority-vote gain (accuracy with `samples` votes − with one) on the "
    "chained-addition task of the full model minus that of the model with one layer pruned "
    "by block influence (diagnose prune --tts); positive = pruning took gain away",
    reference_name="no change in the gain",
)
def vote_gain_lost(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    return _gain_lost(claim, view, rows, vote_gain), 0.0


@level_measure(
    "vote_gain_lost_mean1",
    description="as vote_gain_lost, with the one-sample accuracy estimated from all `samples` "
    "samples (pass@1, the mean correctness) instead of the first sample alone: the same "
    "expectation, less item noise",
    reference_name="no change in the gain",
)
def vote_gain_lost_mean1(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    return _gain_lost(claim, view, rows, vote_gain_over_mean), 0.0


@level_measure(
    "vote_share_lost",
    description="the share of its one-sample errors (1 − pass@1) that majority vote over "
    "`samples` samples fixes, of the full model minus that of the model with one layer pruned "
    "by block influence; a gain measured against each model's own room, so a full model near "
    "the ceiling is not read as gaining nothing; positive = pruning took gain away",
    reference_name="no change in the share",
)
def vote_share_lost(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    return _gain_lost(claim, view, rows, vote_share), 0.0


@level_measure(
    "tts_gain_lost",
    description="as vote_gain_lost, on best-of-N with an oracle verifier (pass@N); a pruned "
    "model with a lower pass@1 has more room to gain there (its ceiling is the same)",
    reference_name="no change in the gain",
)
def tts_gain_lost(claim: Claim, view: ModelView, rows: torch.Tensor) -> tuple[float, float]:
    return _gain_lost(claim, view, rows, oracle_gain), 0.0
