"""`AuditSpec`: one audit file (TOML) as a validated, frozen description of the grid.

    name = "my-audit"
    arms = ["qk_norm", "softpick", "suite:audit2026", { arm = "qk_norm+geglu", seeds = 3 }]

    [seeds]        # the baseline (and anchors) measure the noise floor: >= 2 seeds, 3 by default
    noise_floor = 3
    arms = 1
    policy = "fixed"   # or "sequential": add seeds until the verdicts settle, at most `max`
    [eval]         # the downstream suite every run is scored on ("" for loss only)
    suite = "demo"
    [recipe]       # the shared recipe (R1): archaudit.config.Recipe
    steps = 300
    [scales.tiny]  # a named size: ModelConfig fields, an optional preset and a token budget
    preset = "tiny"
    tokens = 600_000
    [baselines.llama]   # optional: several baselines, each a ModelConfig delta
    [target]       # optional: the scale the verdicts are meant for, never trained
    preset = "base"    # or params = 1.2e9; tokens = ... or tokens_per_param = ... (or neither:
                       # on the line of the trained scales' tokens)
    [executor]     # local | ray | slurm, workers, GPUs per run, ...
    [stress]       # `archaudit stress`: a learning-rate sweep per arm (docs/stability.md)
    [claims.NAME]  # `archaudit replicate`: a published claim judged here (docs/replications.md)

Loading checks structure and types only and names the file and key of every mistake; what
the names mean (arms, suites, models) is checked when the spec is planned (`plan.py`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archaudit.config import (
    ModelConfig,
    Recipe,
    apply_overrides,
    build,
    check_sections,
    load_toml,
    merge_tables,
    parse_override,
    to_dict,
)
from archaudit.data.vocabulary import trained_model
from archaudit.errors import ConfigError, did_you_mean
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.names import BASELINE
from archaudit.presets import MODEL_PRESETS
from archaudit.ranges import Range
from archaudit.rundir import check_audit_dir
from archaudit.stats.inference.corrections import check_correction

TOP_KEYS = ("name", "arms", "runs_dir", "tracker", "plugins")
SECTIONS = (
    "seeds", "eval", "recipe", "scales", "baselines", "executor", "target", "stress", "claims",
)  # fmt: skip
"""`[claims.NAME]` are read by `archaudit replicate` (audit/replicating/replicate.py): a published
claim this audit's results are judged against. Any audit may carry them; `run` and `stress` ignore
them."""
SUITE_PREFIX = "suite:"
SEED_POLICIES = ("fixed", "sequential")
MAX_SEEDS = 10_000
"""Seeds of one arm, at most: the bound of a whole grid (plan.MAX_RUNS)."""
NAMED_TABLES = ("scales", "baselines")
"""Sections whose keys are names the user chooses (a scale, a baseline), not fields."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
"""Audit, scale and baseline names: they become directory names and CSV cells."""


@dataclass(frozen=True, kw_only=True)
class SeedSpec:
    noise_floor: int = 3
    """Seeds of the baseline and anchor arms (R5: the noise floor needs >= 2, 3 recommended)."""
    arms: int = 1
    """Seeds of every other arm (1 = the paper mode of the 2026 audit)."""
    anchors: tuple[str, ...] = ()
    """Arms that also get `noise_floor` seeds and pool into the noise floor."""
    policy: str = "fixed"
    """"fixed" runs exactly these seeds; "sequential" adds seeds round by round until every
    verdict is settled (docs/sequential.md), as `archaudit run --until-settled` does."""
    max: int = field(default=5, metadata={"flag": "--max-seeds", "range": Range(1, MAX_SEEDS)})
    """Sequential: the most seeds one arm may get."""
    offset: int = 0
    """The first seed number: the runs (and the stress test's) use seeds offset,
    offset + 1, ... A confirming run sets it past its pilots' seeds, so that it trains fresh
    initialisations (the seed enters each run's id, so offset runs never reuse a pilot's
    folder). The sequential policy numbers its seeds from 0 and takes no offset."""
    primary: tuple[str, ...] = ()
    """The metrics the audit's verdicts stand on, sharing its α (split evenly over them, fixed or
    sequential; the loop settles each); default: val_loss, and downstream_avg when the audit
    has an eval suite. Any other metric is exploratory."""

    def __post_init__(self) -> None:
        if self.policy not in SEED_POLICIES:
            raise ConfigError(
                f"seeds.policy = {self.policy!r}{did_you_mean(str(self.policy), SEED_POLICIES)}"
            )
        if not 1 <= self.max <= MAX_SEEDS:
            raise ConfigError(f"seeds.max = {self.max} must be in [1, {MAX_SEEDS:,}]")
        if self.policy == "sequential" and self.max < self.arms:
            raise ConfigError(f"seeds.max = {self.max} must be >= seeds.arms = {self.arms}")
        object.__setattr__(self, "primary", _strings(self.primary, "seeds.primary"))
        if self.noise_floor < 2:
            raise ConfigError(
                f"seeds.noise_floor = {self.noise_floor}: the noise floor needs at least 2 "
                "seeds of the baseline (3 recommended, docs/protocol.md R5)"
            )
        if self.arms < 1:
            raise ConfigError(f"seeds.arms = {self.arms} must be >= 1")
        if not 0 <= self.offset <= MAX_SEEDS:
            raise ConfigError(f"seeds.offset = {self.offset} must be in [0, {MAX_SEEDS:,}]")
        if self.offset and self.policy == "sequential":
            raise ConfigError(
                f"seeds.offset = {self.offset}: the sequential policy numbers its seeds from 0; "
                'use policy = "fixed" for a run on fresh seeds'
            )
        object.__setattr__(self, "anchors", _strings(self.anchors, "seeds.anchors"))

    def numbers(self, n: int) -> range:
        """The seed numbers of a group of `n` seeds: `offset` on."""
        return range(self.offset, self.offset + n)


@dataclass(frozen=True, kw_only=True)
class EvalSpec:
    suite: str = "demo"
    """A built-in evaluation suite or a suite TOML file; "" = none (the loss only)."""
    limit: int | None = field(default=None, metadata={"range": Range(1)})
    """Items per task (overrides the suite's own limits)."""

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"eval.limit (--limit) = {self.limit} must be >= 1 (or unset)")


MAX_PARALLEL = 100_000
"""More workers, threads, GPUs or ranks per run than any cluster gives one audit: a bound that
keeps a typo (`--workers 100000000`) from sizing pools and queues by it."""


@dataclass(frozen=True, kw_only=True)
class ExecutorSpec:
    kind: str = field(default="local", metadata={"flag": "--executor"})
    """A registered executor: local | ray | slurm (checked by `make_plan`, beside the arms)."""
    workers: int = field(default=0, metadata={"range": Range(0, MAX_PARALLEL)})
    """Runs at the same time; 0 = the CPU cores (local, CPU), the GPUs / gpus_per_run (local,
    GPU), or 64 for ray and slurm."""
    threads: int = 0
    """Torch threads per run; 0 = cores // workers (local), 1 (ray), 4 (slurm)."""
    gpus_per_run: int = 0
    ranks_per_run: int = 0
    """Processes per run, launched with torchrun when > 1; 0 = max(1, gpus_per_run)."""
    address: str = ""
    """Ray: the cluster address ("" = start a local Ray instance)."""
    cluster: str = ""
    """submitit: "" = Slurm when available, "local" = submitit's local executor (tests)."""
    partition: str = ""
    timeout_min: int = 240
    slurm: Mapping[str, Any] = field(default_factory=dict)
    """More submitit parameters, passed through (e.g. { mem_gb = 32, slurm_account = "x" })."""
    heartbeat_s: float = 15.0
    stale_after_s: float = field(
        default=120.0, metadata={"flag": "--stale-after", "range": Range(0, low_open=True)}
    )
    """Seconds: a claim whose heartbeat is older than this, or further in the future, or whose
    process died on this host, is taken over (docs/audit.md#claims)."""
    max_attempts: int = 2
    """Launches of one run within one `archaudit run` before it counts as failed."""

    def __post_init__(self) -> None:
        for name in ("workers", "threads", "gpus_per_run", "ranks_per_run"):
            if not 0 <= getattr(self, name) <= MAX_PARALLEL:
                raise ConfigError(
                    f"executor.{name} = {getattr(self, name)} must be in [0, {MAX_PARALLEL:,}]"
                )
        if self.timeout_min < 1 or self.max_attempts < 1:
            raise ConfigError("executor.timeout_min and executor.max_attempts must be >= 1")
        if not 0 < self.heartbeat_s < self.stale_after_s < math.inf:
            raise ConfigError(
                f"executor.heartbeat_s = {self.heartbeat_s} must be > 0 and below "
                f"executor.stale_after_s (--stale-after) = {self.stale_after_s}, a finite "
                "number of seconds"
            )

    @property
    def ranks(self) -> int:
        return self.ranks_per_run or max(1, self.gpus_per_run)


MAX_STRESS_SEEDS = 100
"""More seeds per rate than any CPU or GPU sweep runs; a bound so that `--plan` stays finite."""
MAX_EXTRA_RATES = 10
"""Rates above the grid at most: ten more steps of the grid's last ratio (3.3× by default)
reach far past any rate an optimiser survives."""
MAX_PERMUTATIONS = 100_000
"""The permutation test's draws (memory grows with them × arms × rates)."""


@dataclass(frozen=True, kw_only=True)
class StressSpec:
    """`archaudit stress`: every arm's learning-rate sweep, and optionally a depth stress."""

    lr_factors: tuple[float, ...] = (1 / 3, 1.0, 3.0, 10.0, 30.0, 100.0)
    """The sweep's rates as multiples of recipe.lr: >= 6 spanning >= 2 decades."""
    seeds: int = 3
    """Seeds per rate (>= 2: the measures' intervals are over seeds). 3 by default: at 2, the
    primary test's smallest p over the 3 high rates, 2/6³ ≈ 0.0093, is above Holm's first
    threshold with >= 6 arms, so nothing could be declared (docs/stability.md)."""
    fragile: tuple[str, ...] = ()
    """The arms declared fragile before the sweep (e.g. those that diverged at scale): one
    group test, at α, of whether they rank more fragile than the other swept arms
    (docs/stability.md); empty = no group test."""
    arms: tuple[str, ...] = ()
    """The arms swept (besides the baseline); empty = every arm of the audit."""
    scale: str = ""
    """The scale swept; "" = the smallest."""
    depths: tuple[int, ...] = ()
    """Depth stress: the same width at these multiples of the layers (e.g. [2, 4])."""
    depth_lr_factors: tuple[float, ...] = (1.0,)
    """The rates (multiples of recipe.lr) the depth stress trains at."""
    depth_arms: tuple[str, ...] = ()
    """The arms of the depth stress (besides the baseline); empty = the swept residual/norm
    arms (R7: those with a cross-scale duty)."""
    extra_rates: int = 2
    """Uncensored ranges: while the baseline has not broken at the top rate trained, train
    one more rate above it (the grid's last step again) for the baseline and every arm that
    has not broken either, at most this many (0: keep the grid; the range reads "≥ top")."""
    alpha: float = 0.05
    correction: str = "holm"
    permutations: int = 4999

    def __post_init__(self) -> None:
        for key in ("lr_factors", "depth_lr_factors"):
            values = tuple(float(v) for v in _numbers(getattr(self, key), f"stress.{key}"))
            if not values or min(values) <= 0:
                raise ConfigError(f"stress.{key} = {list(values)} must be positive multiples")
            object.__setattr__(self, key, tuple(sorted(set(values))))
        if len(self.lr_factors) < 6 or max(self.lr_factors) / min(self.lr_factors) < 100:
            raise ConfigError(
                f"stress.lr_factors = {list(self.lr_factors)}: the sweep needs >= 6 rates "
                "spanning >= 2 decades (max/min >= 100)"
            )
        _count(self.seeds, "stress.seeds", 2, MAX_STRESS_SEEDS, "(intervals over seeds)")
        _count(self.extra_rates, "stress.extra_rates", 0, MAX_EXTRA_RATES, "(above the grid)")
        depths = _numbers(self.depths, "stress.depths")
        if any(d != int(d) or d < 2 for d in depths):
            raise ConfigError(
                f"stress.depths = {list(depths)}: whole multiples of the layers, >= 2"
            )
        object.__setattr__(self, "depths", tuple(int(d) for d in depths))
        for key in ("arms", "depth_arms", "fragile"):
            object.__setattr__(self, key, _strings(getattr(self, key), f"stress.{key}"))
        if not 0 < self.alpha < 1:
            raise ConfigError(f"stress.alpha = {self.alpha!r} must be in (0, 1)")
        _count(self.permutations, "stress.permutations", 99, MAX_PERMUTATIONS, "")
        check_correction(self.correction)  # before the sweep trains, not after


@dataclass(frozen=True, kw_only=True)
class ScaleSpec:
    name: str
    model: ModelConfig
    """The scale's model (a preset's fields, then the scale's own), built once at load."""
    tokens: int | None = None
    """Token budget: steps = tokens // recipe.batch_tokens. None = the recipe's steps."""


@dataclass(frozen=True, kw_only=True)
class TargetSpec:
    """The scale the audit's verdicts are meant for, never trained: `archaudit stats predict`
    extrapolates each arm's Δ from the trained scales (the ladder) to it (docs/predict.md)."""

    name: str = "target"
    preset: str | None = None
    """A model preset (its parameters are counted), or give `params`."""
    params: float | None = None
    """Parameters of the target model (e.g. 1.2e9)."""
    tokens: float | None = None
    """Training tokens at the target. Unset with `tokens_per_param` unset: on the line the
    trained scales' (log parameters, log tokens) lie on."""
    tokens_per_param: float | None = None

    def __post_init__(self) -> None:
        if (self.preset is None) == (self.params is None):
            raise ConfigError(
                "target: give exactly one of preset (a model preset never trained, e.g. "
                '"base") and params (e.g. 1.2e9)'
            )
        if self.preset is not None and self.preset not in MODEL_PRESETS:
            raise ConfigError(
                f"target.preset = {self.preset!r}{did_you_mean(self.preset, MODEL_PRESETS)}"
            )
        if self.tokens is not None and self.tokens_per_param is not None:
            raise ConfigError("target: give tokens or tokens_per_param, not both")
        for key in ("params", "tokens", "tokens_per_param"):
            value = getattr(self, key)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ConfigError(f"target.{key} = {value!r} must be a positive number")
        _name(self.name, "target.name")


@dataclass(frozen=True, kw_only=True)
class ArmEntry:
    """One entry of `arms`: a modification, a composition `a+b`, or `suite:NAME`."""

    arm: str
    seeds: int | None = None
    """None = seeds.arms (or seeds.noise_floor for an anchor)."""
    tuned: bool = False
    """Allow a recipe that differs from the shared one (R1); the flag follows every result."""
    anchor: bool = False
    scales: tuple[str, ...] | None = None
    """Scale names to train this arm at (None = all)."""
    recipe: Mapping[str, Any] = field(default_factory=dict)
    """Recipe fields this arm trains under instead of the shared ones (needs tuned = true)."""

    @property
    def suite(self) -> str | None:
        return self.arm[len(SUITE_PREFIX) :] if self.arm.startswith(SUITE_PREFIX) else None


@dataclass(frozen=True, kw_only=True)
class AuditSpec:
    name: str
    recipe: Recipe
    scales: tuple[ScaleSpec, ...]
    arms: tuple[ArmEntry, ...]
    baselines: Mapping[str, Mapping[str, Any]]
    """Baseline name → ModelConfig delta; every arm is applied to each baseline."""
    models: Mapping[tuple[str, str], ModelConfig]
    """(baseline, scale) → that baseline's model at that scale, built and checked once at load:
    the plan applies every arm to one of these, and the ladder, tune and stress count them."""
    seeds: SeedSpec
    eval: EvalSpec
    executor: ExecutorSpec
    runs_dir: Path
    stress: StressSpec = field(default_factory=StressSpec)
    tracker: str = ""
    plugins: tuple[str, ...] = ()
    target: TargetSpec | None = None
    """The untrained scale `stats predict` extrapolates to ([target]); None = not stated."""
    source: str = "<audit>"
    """Where the spec came from, for error messages."""

    @property
    def audit_dir(self) -> Path:
        return self.runs_dir / self.name

    @property
    def primary_metrics(self) -> tuple[str, ...]:
        """The metrics the audit's verdicts stand on, sharing its α: `seeds.primary`, or the
        loss and (with an eval suite) the downstream average."""
        return self.seeds.primary or default_primaries(bool(self.eval.suite))


def default_primaries(has_suite: bool) -> tuple[str, ...]:
    return (PRIMARY_LOSS, DOWNSTREAM_AVERAGE) if has_suite else (PRIMARY_LOSS,)


def load_audit(
    path: str | Path, overrides: Sequence[str] = (), *, runs_dir: str | Path | None = None
) -> AuditSpec:
    """Read and check an audit file; `overrides` are `--set key=value` (e.g. `recipe.lr=1e-3`,
    `executor.workers=2`, `arms=["qk_norm"]`). Every mistake is a ConfigError naming the file."""
    path = Path(path)
    tree = load_toml(path)
    try:
        spec = parse_audit(
            apply_audit_overrides(tree, overrides), base_dir=path.parent, source=str(path)
        )
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return spec if runs_dir is None else dataclasses.replace(spec, runs_dir=Path(runs_dir))


def resolve_audit_dir(target: str | Path) -> Path:
    """An audit directory given itself, or through its audit file (runs/<name> beside it).
    A folder that is not an audit directory of this tool is refused."""
    path = Path(target)
    return check_audit_dir(path) if path.is_dir() else load_audit(path).audit_dir


def apply_audit_overrides(tree: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """`--set` for audits: top-level keys (`name=x`) as well as `section.key=value`."""
    result = copy.deepcopy(dict(tree))
    nested = []
    named = {section: set(_table(tree, section)) for section in NAMED_TABLES}
    for text in overrides:
        keys, value = parse_override(text)
        if len(keys) == 1 and keys[0] in TOP_KEYS:
            result[keys[0]] = value
        else:
            _check_named(text, keys, named)
            nested.append(text)
    return apply_overrides(result, nested, sections=SECTIONS)


def _check_named(text: str, keys: list[str], named: dict[str, set[str]]) -> None:
    """`--set scales.tnyi.d_model=64` must not add a scale (and double the runs) by a typo: a
    key inside a scale or baseline the file lacks is refused with a did-you-mean. A new one is
    added explicitly, as a whole table: `--set 'scales.big={ preset = "small" }'`."""
    if len(keys) < 2 or keys[0] not in named:
        return
    section, name = keys[0], keys[1]
    if len(keys) == 2:
        named[section].add(name)
    elif name not in named[section]:
        raise ConfigError(
            f"override {text!r}: there is no {section}.{name}{did_you_mean(name, named[section])}; "
            f"a new one is added as a whole table, e.g. --set '{section}.{name}={{ preset = "
            '"tiny" }\''
        )


def parse_audit(
    tree: Mapping[str, Any], *, base_dir: Path = Path(), source: str = "<audit>"
) -> AuditSpec:
    """An audit from its parsed TOML; a relative `runs_dir` is taken from `base_dir`."""
    check_sections(tree, (*TOP_KEYS, *SECTIONS), where="audit file")
    if "name" not in tree:
        raise ConfigError('the audit needs a name (name = "my-audit" at the top of the file)')
    name = _name(tree["name"], "name")
    recipe = build(Recipe, _table(tree, "recipe"), section="recipe")
    # a relative corpus is read from the audit file's folder, like runs_dir and suite files
    recipe = dataclasses.replace(recipe, corpus_root=str(base_dir.absolute()))
    scales = tuple(_scale(key, value) for key, value in _table(tree, "scales").items())
    if not scales:
        raise ConfigError("no scale: add at least one [scales.NAME] table (e.g. preset = 'tiny')")
    baselines = {
        _name(key, "baselines"): _table(_table(tree, "baselines"), key, f"baselines.{key}")
        for key in _table(tree, "baselines")
    } or {BASELINE: {}}
    arms = tuple(_arm(entry, i) for i, entry in enumerate(_list(tree, "arms")))
    tracker, runs_dir = tree.get("tracker", ""), tree.get("runs_dir", "runs")
    if not isinstance(tracker, str) or not isinstance(runs_dir, str):
        raise ConfigError("tracker and runs_dir must be strings")
    models = _baseline_models(scales, baselines)
    # the shape that trains, final here: the tokenizer sets the vocabulary (one given by hand
    # must agree), so the plan's parameter counts and match see the trained model
    scales = tuple(dataclasses.replace(s, model=trained_model(s.model, recipe)) for s in scales)
    models = {key: trained_model(model, recipe) for key, model in models.items()}
    _check_vocabulary(tree, scales[0].model.vocab_size, recipe.tokenizer)
    return AuditSpec(
        name=name,
        recipe=recipe,
        scales=scales,
        arms=arms,
        baselines=baselines,
        models=models,
        seeds=build(SeedSpec, _table(tree, "seeds"), section="seeds"),
        eval=build(EvalSpec, _table(tree, "eval"), section="eval"),
        executor=build(ExecutorSpec, _table(tree, "executor"), section="executor"),
        runs_dir=base_dir / runs_dir,
        stress=build(StressSpec, _table(tree, "stress"), section="stress"),
        tracker=tracker,
        plugins=_strings(tree.get("plugins", []), "plugins"),
        target=build(TargetSpec, tree["target"], section="target") if "target" in tree else None,
        source=source,
    )


def _check_vocabulary(tree: Mapping[str, Any], vocab: int, tokenizer: str) -> None:
    """A `vocab_size` written in a scale or baseline table is the tokenizer's, or refused."""
    for section in NAMED_TABLES:
        for name, table in _table(tree, section).items():
            given = table.get("vocab_size", vocab) if isinstance(table, Mapping) else vocab
            if given != vocab:
                raise ConfigError(
                    f"{section}.{name}.vocab_size = {given!r}, but recipe.tokenizer = "
                    f"{tokenizer!r} has {vocab} tokens: leave vocab_size out (the tokenizer "
                    "sets it)"
                )


def _scale(name: str, table: Any) -> ScaleSpec:
    where = f"scales.{name}"
    _name(name, "scales")
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table ([{where}] with model fields)")
    model = dict(table)
    preset = model.pop("preset", None)
    tokens = model.pop("tokens", None)
    if preset is not None:
        if not isinstance(preset, str) or preset not in MODEL_PRESETS:
            raise ConfigError(
                f"{where}.preset = {preset!r}{did_you_mean(str(preset), MODEL_PRESETS)}"
            )
        model = merge_tables(MODEL_PRESETS[preset], model)
    if tokens is not None and (
        not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1
    ):
        raise ConfigError(f"{where}.tokens = {tokens!r} must be a whole number of tokens >= 1")
    return ScaleSpec(name=name, model=build(ModelConfig, model, section=where), tokens=tokens)


def _baseline_models(
    scales: Sequence[ScaleSpec], baselines: Mapping[str, Mapping[str, Any]]
) -> dict[tuple[str, str], ModelConfig]:
    """Each baseline's model at each scale: the scale's own, or its delta built over it (a bad
    key of the delta names the baseline: the scale's keys were checked already)."""
    return {
        (key, scale.name): build(
            ModelConfig, merge_tables(to_dict(scale.model), delta), section=f"baselines.{key}"
        )
        if delta
        else scale.model
        for key, delta in baselines.items()
        for scale in scales
    }


def _arm(entry: Any, index: int) -> ArmEntry:
    where = f"arms[{index}]"
    table = {"arm": entry} if isinstance(entry, str) else entry
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} = {entry!r} must be an arm name or a table {{ arm = ... }}")
    arm = build(ArmEntry, table, section=where)
    if not arm.arm.strip():
        raise ConfigError(f"{where}: empty arm name")
    if arm.seeds is not None and arm.seeds < 1:
        raise ConfigError(f"{where}.seeds = {arm.seeds} must be >= 1")
    if arm.suite is not None and arm.recipe:
        raise ConfigError(f"{where}: a suite entry cannot carry a recipe of its own")
    if arm.scales is None:
        return arm
    return dataclasses.replace(arm, scales=_strings(arm.scales, f"{where}.scales"))


def _table(tree: Mapping[str, Any], key: str, where: str | None = None) -> dict[str, Any]:
    value = tree.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where or key} must be a table, not {value!r}")
    return dict(value)


def _list(tree: Mapping[str, Any], key: str) -> list[Any]:
    value = tree.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{key} = {value!r} must be a list")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} = {value!r} must be a list of strings")
    return tuple(value)


def _numbers(value: Any, key: str) -> tuple[float, ...]:
    ok = isinstance(value, list | tuple) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise ConfigError(f"{key} = {value!r} must be a list of finite numbers")
    return tuple(value)


def _count(value: Any, key: str, low: int, high: int, why: str) -> None:
    """A whole number in [low, high]: the upper bound keeps memory and run counts sane, and
    is checked before anything trains or is planned."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            f"{key} = {value!r} must be a whole number from {low} to {high:,} {why}".rstrip()
        )


def _name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ConfigError(
            f"{key}: {value!r} is not a usable name (letters, digits, '_', '-', '.'; it "
            "becomes a directory name)"
        )
    return value
