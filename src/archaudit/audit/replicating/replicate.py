"""`archaudit replicate`: the literature's small-scale claims as runnable audits.

A claim is a `[claims.NAME]` table in an audit file: the same file `archaudit run` and
`archaudit stress` take, with the paper, the published direction and the verdict that counts as
reproducing it beside the setting that tests it. The built-in claims are the audit files in
`audit/replicating/replications/` (one file per paper; a file's claims share its runs), registered
by being there, as a modification is by being in `mods/catalogue/`:

    [claims.post_ln_lr]
    title = "Post-LN is stable over fewer learning rates than Pre-LN"
    paper = "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture"
    arxiv = "2002.04745"
    where = "§3"
    test = "stress-rate"      # which of the tool's verdicts decides (`ClaimTest`)
    arm = "post_ln"
    direction = "worse"       # the published direction: the arm is worse (more fragile)

`replicate(name, runs_dir)` trains what the claim's audit still lacks (resumable: the runs are
ordinary run folders under `runs_dir/<audit>/`), then judges the claim from the folders alone
(`audit.replicating.replication.judge_claim`): reproduced, contradicted or not established, with the
power and the CPU cost. Nothing here tests or trains by itself: `run_audit`, `run_stress`,
`findings` and `analyse` do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from archaudit.audit.setup.spec import AuditSpec, load_audit
from archaudit.config import apply_overrides, build, load_toml
from archaudit.errors import ConfigError, did_you_mean
from archaudit.registry import Registry

CLAIMS_DIR = Path(__file__).resolve().parent / "replications"
"""The built-in claims: one audit file per paper."""
RESERVED = ("list", "all", "table")
"""Words the command line reads as commands, never as claim names."""
SYNTHETIC = "synthetic"

Generator = Callable[[int, int], str]
"""(characters, data seed) -> a generated corpus's text."""
GENERATED: Registry[Generator] = Registry("generated corpus")
"""A claim file's generated corpora (`recipe.corpus = NAME`), written once beside its runs."""


@GENERATED.register("reasoning")
def _reasoning(chars: int, seed: int) -> str:
    """The chained-addition task with its scratchpad (`diagnose.reasoning`)."""
    from archaudit.diagnose.reasoning import reasoning_corpus

    return reasoning_corpus(chars, seed=seed)


@GENERATED.register("retrieval")
def _retrieval(chars: int, seed: int) -> str:
    """Grammar text with key-value facts asked a few to 48 characters later
    (`data.retrieval`)."""
    from archaudit.data.retrieval import retrieval_corpus

    return retrieval_corpus(chars, seed=seed)


class ClaimTest(StrEnum):
    """Which of the tool's own verdicts decides a claim."""

    VERDICT = "verdict"
    """The arm's verdict against the baseline on `metric` (`findings`, calibrated level)."""
    STRESS_RATE = "stress-rate"
    """The arm's learning-rate stress verdict (`archaudit stress`: more-fragile/more-robust)."""
    STRESS_DEPTH = "stress-depth"
    """The arm's depth-stress verdict (`archaudit stress` with `stress.depths`)."""
    STRESS_DEPTH_LOSS = "stress-depth-loss"
    """The arm's depth-sensitivity verdict (`archaudit stress` with `stress.depths`): ΔD, how
    much more its loss rises from the sweep's depth to the deeper models than the baseline's
    (`stats.analyses.depth_sensitivity`)."""
    STRESS_LOGIT = "stress-logit"
    """The arm's logit verdict in the rate sweep (`archaudit stress`: the largest attention
    logit and the final |log Z| at the upper rates, `StressResult.logit_verdicts`)."""
    INTERACTION = "interaction"
    """The factorial interaction contrast of the combination `arm` (e.g. "gqa+swa") on
    `metric`, Holm-corrected over the audit's combinations."""
    LEVEL = "level"
    """A diagnostic `measure`, one value per unit (a seed's model, a text window), lies in the
    claim's `band`: one-sided t tests at its finite edges
    (audit/replicating/replicate_levels.py)."""

    @property
    def stressed(self) -> bool:
        """Judged from `archaudit stress`'s sweep (trained by it, its seeds `stress.seeds`)."""
        return self in (
            ClaimTest.STRESS_RATE,
            ClaimTest.STRESS_DEPTH,
            ClaimTest.STRESS_DEPTH_LOSS,
            ClaimTest.STRESS_LOGIT,
        )

    @property
    def planned_by_power(self) -> bool:
        """Its power at a published effect is the family rule's (`stats power`): a verdict."""
        return self is ClaimTest.VERDICT


class Direction(StrEnum):
    """The published direction of the arm (or combination) against the baseline."""

    BETTER = "better"
    WORSE = "worse"

    @property
    def sign(self) -> int:
        """+1 when the claim is that the arm is better (the tool's Δ is "positive = better")."""
        return 1 if self is Direction.BETTER else -1


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One published claim: where it comes from, what counts as reproducing it."""

    title: str
    paper: str
    """Authors, year and title."""
    arxiv: str = ""
    where: str = ""
    """The figure, table or section the claim is read from."""
    test: str = ""
    """A `ClaimTest`: the tool's verdict that decides it ("" only with a `status`)."""
    arm: str = ""
    """The arm (or, for an interaction, the combination) the claim is about."""
    direction: str = ""
    """A `Direction`: the published direction of `arm` against the baseline."""
    metric: str = ""
    """The metric of a verdict or interaction claim ("" = the audit's first primary metric)."""
    scale: str = ""
    """The scale it is judged at ("" = the audit's last scale)."""
    published_size: str = ""
    """The paper's size of the effect, in its own units and words ("" = none given)."""
    effect_sigmas: float = 0.0
    """The effect, in seed σ, the design is powered for (a stated assumption; 0 = none: the
    power is then quoted for the effect measured, labelled so)."""
    measure: str = ""
    """A level claim's registered measure (`replicate_levels.MEASURES`)."""
    band: tuple[float, float] = (-math.inf, math.inf)
    """A level claim's published band [low, high] for the measure's mean (`inf` for none)."""
    alpha: float = 0.05
    """A level claim's significance level (its one-sided tests at each finite edge)."""
    model: str = ""
    """A level claim measured on one model file (not on the audit's runs): its path, relative
    to the benchmark data root (the audit's runs are not trained then)."""
    tokens: int = 2048
    """A level measure's held-out tokens per unit (a seed's model) or in all (text windows)."""
    window: int = 128
    """Tokens per text window (a measure whose unit is the text window)."""
    items: int = 50
    """Reasoning items per model (`tts_gain_lost`)."""
    samples: int = 16
    """The largest N of best-of-N (`tts_gain_lost`)."""
    temperature: float = 1.0
    """The sampling temperature of the test-time scaling measures (> 0: votes need samples
    that differ)."""
    pilot_seeds: tuple[int, ...] = ()
    """The init seeds the pilots trained: the confirming run's seeds (`seeds.offset` on) must
    not include them (checked when the claim's audit loads)."""
    status: str = ""
    """"" = runnable; otherwise what the tool lacks to test it ("needs ..."): never run."""
    pilots: tuple[str, ...] = ()
    """Every setting tried before this one was fixed, with what it gave (docs list them)."""
    name: str = ""
    """Set by the loader: the table's key."""
    file: str = ""
    """Set by the loader: the audit file that holds it."""

    @property
    def is_level(self) -> bool:
        """Judged by a diagnostic level (`replicate_levels`), not by a verdict of its runs."""
        return bool(self.test) and ClaimTest(self.test) is ClaimTest.LEVEL

    def __post_init__(self) -> None:
        where = f"claims.{self.name or '?'}"
        if self.status and not (self.test or self.arm or self.direction):
            pass  # a claim the tool cannot test yet: its source and what it needs suffice
        elif self.test not in tuple(ClaimTest):
            raise ConfigError(f"{where}.test = {self.test!r}{did_you_mean(self.test, ClaimTest)}")
        elif self.is_level:
            self._check_level(where)
        elif not self.arm:
            raise ConfigError(f"{where}.arm: the arm (or combination) the claim is about")
        elif self.direction not in tuple(Direction):
            raise ConfigError(
                f"{where}.direction = {self.direction!r}{did_you_mean(self.direction, Direction)}"
            )
        seeds = self.pilot_seeds
        if not isinstance(seeds, list | tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
        ):
            raise ConfigError(
                f"{where}.pilot_seeds = {seeds!r} must be a list of seeds (ints >= 0)"
            )
        object.__setattr__(self, "pilot_seeds", tuple(seeds))
        if not math.isfinite(self.effect_sigmas) or self.effect_sigmas < 0:
            raise ConfigError(f"{where}.effect_sigmas = {self.effect_sigmas!r} must be >= 0")
        if self.name in RESERVED:
            raise ConfigError(f"claims.{self.name}: {RESERVED} are commands, not claim names")
        pilots = self.pilots
        if not isinstance(pilots, list | tuple) or not all(isinstance(p, str) for p in pilots):
            raise ConfigError(f"{where}.pilots = {pilots!r} must be a list of strings")
        object.__setattr__(self, "pilots", tuple(pilots))

    def _check_level(self, where: str) -> None:
        from archaudit.audit.replicating.replicate_levels import MEASURES

        if self.measure not in MEASURES:
            raise ConfigError(
                f"{where}.measure = {self.measure!r}{did_you_mean(self.measure, list(MEASURES))}"
            )
        band = tuple(float(b) for b in self.band) if isinstance(self.band, list | tuple) else ()
        if len(band) != 2 or not band[0] < band[1] or not any(map(math.isfinite, band)):
            raise ConfigError(
                f"{where}.band = {self.band!r} must be [low, high], low < high, one of them "
                "finite (inf for no edge)"
            )
        object.__setattr__(self, "band", band)
        if not 0 < self.alpha < 0.5:
            raise ConfigError(f"{where}.alpha = {self.alpha!r} must be in (0, 0.5)")
        if self.direction:
            raise ConfigError(f"{where}.direction: a level claim's direction is its band")
        for key in ("tokens", "window", "items", "samples"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{where}.{key} = {getattr(self, key)!r} must be >= 1")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ConfigError(
                f"{where}.temperature = {self.temperature!r} must be > 0 (greedy decoding "
                "gives every sample the same answer: nothing to vote on)"
            )

    @property
    def runnable(self) -> bool:
        return not self.status

    @property
    def source(self) -> str:
        """The paper with its arXiv id and the figure, in one line."""
        arxiv = f", arXiv {self.arxiv}" if self.arxiv else ""
        where = f", {self.where}" if self.where else ""
        return f"{self.paper}{arxiv}{where}"

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (`archaudit replicate list --json`)."""
        return {**dataclasses.asdict(self), "pilots": list(self.pilots), "source": self.source}


def load_claims(path: str | Path) -> tuple[Claim, ...]:
    """The claims of one audit file (its `[claims.NAME]` tables), checked; () without any."""
    path = Path(path)
    tables = load_toml(path).get("claims", {})
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{path}: claims must be tables ([claims.NAME])")
    claims = []
    for name, table in tables.items():
        try:
            claim = build(
                Claim, {**table, "name": name, "file": str(path)}, section=f"claims.{name}"
            )
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
        claims.append(claim)
    return tuple(claims)


@cache
def _registry() -> Registry[Claim]:
    claims: Registry[Claim] = Registry("claim")
    for path in sorted(CLAIMS_DIR.glob("*.toml")):
        for claim in load_claims(path):
            if claim.name in claims:
                raise ConfigError(f"{path}: claim {claim.name!r} is defined twice")
            claims.register(claim.name)(claim)
    return claims


def list_claims() -> list[Claim]:
    """Every built-in claim, by name."""
    return [claim for _, claim in _registry().items()]


def get_claim(name: str) -> Claim:
    """A built-in claim by name; an unknown one fails with did-you-mean."""
    return _registry().get(name)


def claim_spec(
    claim: Claim, runs_dir: str | Path, overrides: Sequence[str] = (), data_root: Path | None = None
) -> AuditSpec:
    """The claim's audit, its runs under `runs_dir`. A file corpus of a claim file is named
    relative to the benchmark data root (`$ARCHAUDIT_DATA`, else ../shared/data), so that the
    package's files need no absolute path."""
    raw = _claim_recipe(claim, overrides)
    corpus = raw.get("corpus", SYNTHETIC)
    extra: list[str] = []
    if isinstance(corpus, str) and corpus in GENERATED:
        path = _generated_corpus(corpus, claim, raw, runs_dir)
        extra.append(f'recipe.corpus="{path.as_posix()}"')
    elif isinstance(corpus, str) and corpus != SYNTHETIC and not Path(corpus).is_absolute():
        root = data_root if data_root is not None else _data_root()
        extra.append(f'recipe.corpus="{(root / corpus).as_posix()}"')
    spec = load_audit(claim.file, [*extra, *overrides], runs_dir=runs_dir)
    check_fresh_seeds(claim, spec)
    return spec


def confirming_seeds(claim: Claim, spec: AuditSpec) -> range:
    """The init seeds the claim's confirming run trains: its stress sweep's or its grid's."""
    n = spec.stress.seeds if ClaimTest(claim.test).stressed else (
        max(spec.seeds.noise_floor, spec.seeds.arms)
    )  # fmt: skip
    return spec.seeds.numbers(n)


def check_fresh_seeds(claim: Claim, spec: AuditSpec) -> None:
    """Refuse a confirming run that would train a pilot's init seed again."""
    reused = sorted(set(claim.pilot_seeds) & set(confirming_seeds(claim, spec)))
    if reused:
        first = max(claim.pilot_seeds) + 1
        raise ConfigError(
            f"claims.{claim.name}: the confirming run's seeds {reused} are the pilots' "
            f"(pilot_seeds); set [seeds] offset = {first} so that it trains fresh ones"
        )


def _claim_recipe(claim: Claim, overrides: Sequence[str]) -> Mapping:
    """The claim file's [recipe] with the `--set recipe.…` overrides applied: what names its
    corpus, and a generated corpus's length and seed (a malformed table is load_audit's to
    refuse)."""
    raw = load_toml(Path(claim.file)).get("recipe", {})
    ours = [text for text in overrides if text.partition("=")[0].strip().startswith("recipe.")]
    tree = {"recipe": raw if isinstance(raw, Mapping) else {}}
    return apply_overrides(tree, ours, sections=("recipe",))["recipe"]


def _generated_corpus(kind: str, claim: Claim, recipe: Mapping, runs_dir: str | Path) -> Path:
    """A generated corpus (`GENERATED`: `recipe.corpus = "reasoning"` or `"retrieval"` in a
    claim file), written once beside the claim's runs, `corpus_chars` characters drawn from
    `data_seed`. Its bytes depend on those two only, so its content hash (the run ids') is the
    same wherever it is written."""
    from archaudit.config import Recipe
    from archaudit.files import atomic_write_text

    built = build(Recipe, recipe, section="recipe")  # a bad value is refused with its key
    chars, seed = built.corpus_chars, built.data_seed
    name = load_toml(Path(claim.file)).get("name", Path(claim.file).stem)
    path = Path(runs_dir).absolute() / f"{name}-corpus" / f"{kind}-{seed}-{chars}.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, GENERATED.get(kind)(chars, seed))
    return path


def _data_root() -> Path:
    from archaudit.evals.suites import resolve_data_root

    return Path(resolve_data_root()).absolute()


def _train_runs(
    claim: Claim, spec: AuditSpec, executor: str | None, workers: int | None, live: bool
) -> None:
    from archaudit.audit.execute.coordinator import run_audit
    from archaudit.audit.grid.plan import make_plan

    run_audit(make_plan(spec), executor=executor, workers=workers, live=live)


def _train_stress(
    claim: Claim, spec: AuditSpec, executor: str | None, workers: int | None, live: bool
) -> None:
    from archaudit.audit.execute.stress_run import run_stress
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE, analyse, write_result

    plan = run_stress(spec, executor=executor, workers=workers, live=live)
    write_result(analyse(plan), spec.audit_dir / STRESS_DIR / RESULT_FILE)


def _train_level(
    claim: Claim, spec: AuditSpec, executor: str | None, workers: int | None, live: bool
) -> None:
    from archaudit.audit.replicating.replicate_levels import measure_claim, trains

    if trains(claim):
        _train_runs(claim, spec, executor, workers, live)
    measure_claim(claim, spec)


Trainer = Callable[[Claim, AuditSpec, str | None, int | None, bool], None]
TRAINERS: Mapping[str, Trainer] = {
    ClaimTest.VERDICT: _train_runs,
    ClaimTest.INTERACTION: _train_runs,
    ClaimTest.STRESS_RATE: _train_stress,
    ClaimTest.STRESS_DEPTH: _train_stress,
    ClaimTest.STRESS_DEPTH_LOSS: _train_stress,
    ClaimTest.STRESS_LOGIT: _train_stress,
    ClaimTest.LEVEL: _train_level,
}
"""What trains a claim's evidence, by its test: the audit's grid, or its stress sweep."""
