"""`archaudit replicate`: the literature's small-scale claims as runnable audits.

A claim is a `[claims.NAME]` table in an audit file: the same file `archaudit run` and
`archaudit stress` take, with the paper, the published direction and the verdict that counts as
reproducing it beside the setting that tests it. The built-in claims are the audit files in
`audit/replications/` (one file per paper; a file's claims share its runs), registered by
being there, as a modification is by being in `mods/catalogue/`:

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
(`audit.replication.judge_claim`): reproduced, contradicted or not established, with the power
and the CPU cost. Nothing here tests or trains by itself: `run_audit`, `run_stress`,
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

from archaudit.audit.spec import AuditSpec, load_audit
from archaudit.config import build, load_toml
from archaudit.errors import ConfigError, did_you_mean
from archaudit.registry import Registry

CLAIMS_DIR = Path(__file__).resolve().parent / "replications"
"""The built-in claims: one audit file per paper."""
RESERVED = ("list", "all", "table")
"""Words the command line reads as commands, never as claim names."""
SYNTHETIC = "synthetic"


class ClaimTest(StrEnum):
    """Which of the tool's own verdicts decides a claim."""

    VERDICT = "verdict"
    """The arm's verdict against the baseline on `metric` (`findings`, calibrated level)."""
    STRESS_RATE = "stress-rate"
    """The arm's learning-rate stress verdict (`archaudit stress`: more-fragile/more-robust)."""
    STRESS_DEPTH = "stress-depth"
    """The arm's depth-stress verdict (`archaudit stress` with `stress.depths`)."""
    INTERACTION = "interaction"
    """The factorial interaction contrast of the combination `arm` (e.g. "gqa+swa") on
    `metric`, Holm-corrected over the audit's combinations."""

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
    status: str = ""
    """"" = runnable; otherwise what the tool lacks to test it ("needs ..."): never run."""
    pilots: tuple[str, ...] = ()
    """Every setting tried before this one was fixed, with what it gave (docs list them)."""
    name: str = ""
    """Set by the loader: the table's key."""
    file: str = ""
    """Set by the loader: the audit file that holds it."""

    def __post_init__(self) -> None:
        where = f"claims.{self.name or '?'}"
        if self.status and not (self.test or self.arm or self.direction):
            pass  # a claim the tool cannot test yet: its source and what it needs suffice
        elif self.test not in tuple(ClaimTest):
            raise ConfigError(f"{where}.test = {self.test!r}{did_you_mean(self.test, ClaimTest)}")
        elif not self.arm:
            raise ConfigError(f"{where}.arm: the arm (or combination) the claim is about")
        elif self.direction not in tuple(Direction):
            raise ConfigError(
                f"{where}.direction = {self.direction!r}{did_you_mean(self.direction, Direction)}"
            )
        if not math.isfinite(self.effect_sigmas) or self.effect_sigmas < 0:
            raise ConfigError(f"{where}.effect_sigmas = {self.effect_sigmas!r} must be >= 0")
        if self.name in RESERVED:
            raise ConfigError(f"claims.{self.name}: {RESERVED} are commands, not claim names")
        pilots = self.pilots
        if not isinstance(pilots, list | tuple) or not all(isinstance(p, str) for p in pilots):
            raise ConfigError(f"{where}.pilots = {pilots!r} must be a list of strings")
        object.__setattr__(self, "pilots", tuple(pilots))

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
    raw = load_toml(Path(claim.file)).get("recipe", {})
    corpus = raw.get("corpus", SYNTHETIC) if isinstance(raw, Mapping) else SYNTHETIC
    extra: list[str] = []
    if isinstance(corpus, str) and corpus != SYNTHETIC and not Path(corpus).is_absolute():
        root = data_root if data_root is not None else _data_root()
        extra.append(f'recipe.corpus="{(root / corpus).as_posix()}"')
    return load_audit(claim.file, [*extra, *overrides], runs_dir=runs_dir)


def _data_root() -> Path:
    from archaudit.evals.suites import resolve_data_root

    return Path(resolve_data_root()).absolute()


def _train_runs(spec: AuditSpec, executor: str | None, workers: int | None, live: bool) -> None:
    from archaudit.audit.coordinator import run_audit
    from archaudit.audit.plan import make_plan

    run_audit(make_plan(spec), executor=executor, workers=workers, live=live)


def _train_stress(spec: AuditSpec, executor: str | None, workers: int | None, live: bool) -> None:
    from archaudit.audit.stress import STRESS_DIR
    from archaudit.audit.stress_result import RESULT_FILE, analyse, write_result
    from archaudit.audit.stress_run import run_stress

    plan = run_stress(spec, executor=executor, workers=workers, live=live)
    write_result(analyse(plan), spec.audit_dir / STRESS_DIR / RESULT_FILE)


Trainer = Callable[[AuditSpec, str | None, int | None, bool], None]
TRAINERS: Mapping[str, Trainer] = {
    ClaimTest.VERDICT: _train_runs,
    ClaimTest.INTERACTION: _train_runs,
    ClaimTest.STRESS_RATE: _train_stress,
    ClaimTest.STRESS_DEPTH: _train_stress,
}
"""What trains a claim's evidence, by its test: the audit's grid, or its stress sweep."""
