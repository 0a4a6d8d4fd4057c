"""The modification registry: a modification is a named, cited delta on `ModelConfig`.

    @modification(
        "qk_norm", family="attention-logits", params=params.qk_norm, duties=("cross_scale",),
        citation=Citation("Gemma Team", 2025, "Gemma 3, arXiv 2503.19786"),
        description="RMSNorm on queries and keys per head, before RoPE",
        formula="q ← RMSNorm(q), k ← RMSNorm(k)",
    )
    def qk_norm(cfg: ModelConfig) -> dict[str, Any]:
        return {"attention.qk_norm": True}

The function returns the config keys the modification *claims*, spelled as after `--set model.`
(`"attention.score"`, `"n_kv_heads"`; a nested `{"attention": {"score": ...}}` means the same):
the keys it sets and the ones it needs left alone (differential attention claims
`n_kv_heads = None`, so it refuses GQA). Two modifications of one arm that claim a key with
different values conflict (`arms.py`).
A few modifications change the training recipe instead (`recipe={...}`); such an arm is trained
under another recipe hash, so the audit treats it as `tuned` (R1).

The protocol duties follow from the family, never from a flag a contributor could forget:
attention-output changes must be evaluated downstream (R6), residual and norm changes at two
or more scales (R7). An entry may add duties beyond its family's (`duties=("downstream",)`).
Value residual changes what attention returns, and QK-norm is claimed as a stability fix.
Duties are only ever added, never removed. This module is the one place that decides them:
the plan copies an arm's `duties` into every run, the results table carries them in its
`duties` column, and the statistics read that column, never a family name.

An entry whose formula was checked numerically against a re-typed reference implementation
records it in `check` (`ReferenceCheck`): which variant it is, the reference, and a bound on
the largest difference the formula test measured (the test fails if it measures more).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from archaudit.config import ModelConfig, Recipe, flatten
from archaudit.errors import ConfigError, did_you_mean
from archaudit.mods import params as formulas
from archaudit.names import BASELINE
from archaudit.registry import Registry
from archaudit.stats.records.table import CROSS_SCALE, DOWNSTREAM, DUTIES

FAMILIES = (
    BASELINE,
    "structure",
    "position",
    "attention-logits",
    "attention-output",
    "residual",
    "norm",
    "mlp",
    "objective",
    "moe",
    "sharing",
    "recipe",
)
FAMILY_DUTIES: Mapping[str, tuple[str, ...]] = {
    "attention-output": (DOWNSTREAM,),  # R6
    "residual": (CROSS_SCALE,),  # R7
    "norm": (CROSS_SCALE,),  # R7
}
"""The duties every entry of a family has; `DUTIES` (the results table's vocabulary) are
the names an entry may add beyond them."""
ENTRY_POINT_GROUP = "archaudit.modifications"

Delta = Mapping[str, Any]
DeltaFunction = Callable[[ModelConfig], Delta]
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class ModificationError(ConfigError):
    """A modification is defined wrongly: bad name or family, a name taken twice, a field that
    `ModelConfig` or `Recipe` does not have. Raised at registration or first use."""


@dataclass(frozen=True)
class Citation:
    authors: str
    year: int
    source: str
    """arXiv id and/or venue."""

    def __str__(self) -> str:
        return f"{self.authors} {self.year}, {self.source}"


@dataclass(frozen=True)
class ReferenceCheck:
    """How an entry was checked against the method's reference implementation."""

    variant: str
    """Which form of the method this entry is, in words."""
    reference: str
    """The paper's equations and/or code the formula test re-types."""
    max_abs_diff: float
    """Upper bound on the largest |ours − reference| the formula test measures (float64)."""
    test: str
    """The test that measures it (it fails if it measures more than `max_abs_diff`)."""

    def __str__(self) -> str:
        diff = f"≤ {self.max_abs_diff:.1g}" if self.max_abs_diff else "0 (bit-identical)"
        return (
            f"{self.variant}; checked against {self.reference}; largest difference measured "
            f"{diff} in float64 ({self.test})"
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class Modification:
    name: str
    family: str
    description: str
    """One line: what changes, in words."""
    formula: str
    citation: Citation
    delta: DeltaFunction
    params: formulas.ParamsFormula
    """Parameters added to the baseline at the sizes of the given config."""
    active_params: formulas.ParamsFormula | None = None
    """Active parameters added (what one token multiplies by: k of E experts, a shared block
    once per use); None = the same as `params`."""
    recipe: Delta = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    duties: tuple[str, ...] = ()
    """Protocol duties beyond the family's: 'downstream' (R6), 'cross_scale' (R7)."""
    check: ReferenceCheck | None = None
    rank: int = 0
    """Registration order; an arm applies its modifications in this order."""

    @property
    def protocol_duties(self) -> tuple[str, ...]:
        """The family's duties plus the declared ones, in `DUTIES` order."""
        owed = {*FAMILY_DUTIES.get(self.family, ()), *self.duties}
        return tuple(duty for duty in DUTIES if duty in owed)

    @property
    def requires_downstream(self) -> bool:
        return DOWNSTREAM in self.protocol_duties

    @property
    def requires_cross_scale(self) -> bool:
        return CROSS_SCALE in self.protocol_duties

    @property
    def changes_recipe(self) -> bool:
        return bool(self.recipe)

    @property
    def params_formula(self) -> str:
        """The first docstring line of `params` (a plugin's lambda has none)."""
        return _first_line(self.params)

    @property
    def active_params_formula(self) -> str:
        return _first_line(self.active_params or self.params)

    def claims(self, cfg: ModelConfig) -> dict[str, Any]:
        """The keys this modification sets (or pins) on `cfg`, as dotted paths checked against
        ModelConfig: `{"attention.score": "softpick"}`."""
        return _checked_paths(self.name, self.delta(cfg), ModelConfig, "model")

    def recipe_claims(self) -> dict[str, Any]:
        return _checked_paths(self.name, self.recipe, Recipe, "recipe")

    def params_delta(self, cfg: ModelConfig) -> int:
        return self.params(cfg)

    def active_params_delta(self, cfg: ModelConfig) -> int:
        return (self.active_params or self.params)(cfg)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (the objects of `archaudit mods list --json`)."""
        return {
            "name": self.name,
            "family": self.family,
            "requires_downstream": self.requires_downstream,
            "requires_cross_scale": self.requires_cross_scale,
            "duties": list(self.protocol_duties),
            "changes_recipe": self.changes_recipe,
            "citation": dataclasses.asdict(self.citation),
            "description": self.description,
            "formula": self.formula,
            "params_formula": self.params_formula,
            "active_params_formula": self.active_params_formula,
            "aliases": list(self.aliases),
            "reference_check": dataclasses.asdict(self.check) if self.check else None,
        }


MODIFICATIONS: Registry[Modification] = Registry("modification")
_ALIASES: dict[str, str] = {}


def modification(
    name: str,
    *,
    family: str,
    citation: Citation,
    description: str,
    formula: str,
    params: formulas.ParamsFormula = formulas.none,
    active_params: formulas.ParamsFormula | None = None,
    recipe: Delta | None = None,
    aliases: tuple[str, ...] = (),
    duties: tuple[str, ...] = (),
    check: ReferenceCheck | None = None,
) -> Callable[[DeltaFunction], DeltaFunction]:
    """Register the decorated function `cfg -> {field: value}` as a modification."""
    for label in (name, *aliases):
        if not _NAME.fullmatch(label):
            raise ModificationError(
                f"modification name {label!r} must be lower_snake_case ('+' joins arms)"
            )
    if family not in FAMILIES:
        raise ModificationError(
            f"modification {name!r}: unknown family {family!r}{did_you_mean(family, FAMILIES)}"
        )
    for duty in duties:
        if duty not in DUTIES:
            raise ModificationError(
                f"modification {name!r}: unknown duty {duty!r}{did_you_mean(duty, DUTIES)}"
            )

    def register(delta: DeltaFunction) -> DeltaFunction:
        for label in (name, *aliases):
            if label in MODIFICATIONS or label in _ALIASES:
                raise ModificationError(f"modification {label!r} is already registered")
        mod = Modification(
            name=name,
            family=family,
            description=description,
            formula=formula,
            citation=citation,
            delta=delta,
            params=params,
            active_params=active_params,
            recipe=dict(recipe or {}),
            aliases=aliases,
            duties=tuple(duties),
            check=check,
            rank=len(list(MODIFICATIONS)),
        )
        mod.recipe_claims()  # a typo in a recipe field fails at import, not in an audit
        MODIFICATIONS.register(name)(mod)
        _ALIASES.update(dict.fromkeys(aliases, name))
        return delta

    return register


def _first_line(formula: Callable[..., Any]) -> str:
    return ((formula.__doc__ or "").strip().splitlines() or ["undocumented"])[0]


def get_modification(name: str) -> Modification:
    """A modification by name or alias; an unknown name fails with did-you-mean."""
    _load_entry_points()
    return MODIFICATIONS.get(_ALIASES.get(name, name))


def list_modifications(family: str | None = None) -> list[Modification]:
    """All modifications in catalogue order, optionally of one family."""
    _load_entry_points()
    if family is not None and family not in FAMILIES:
        raise ConfigError(f"unknown family {family!r}{did_you_mean(family, FAMILIES)}")
    mods = sorted((mod for _, mod in MODIFICATIONS.items()), key=lambda mod: mod.rank)
    return [mod for mod in mods if family in (None, mod.family)]


# ---------------------------------------------------------------------------------------------
# plugins: a user module registers its own modifications with the same decorator


def load_plugins(modules: Iterable[str]) -> None:
    """Import each module (`--plugin my_mods`) so that its `@modification`s register.

    Like `python -m`, the current directory is importable, so a `my_mods.py` beside the audit
    file works without installing it. Importing a module twice registers nothing twice.
    """
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            raise ConfigError(f"plugin {module!r}: cannot import it ({err})") from None


_entry_points_loaded = False


def _load_entry_points() -> None:
    """Import every module named in the `archaudit.modifications` entry-point group, once."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except ImportError as err:
            raise ConfigError(
                f"entry point {point.name!r} = {point.value!r} in group {ENTRY_POINT_GROUP!r} "
                f"cannot be loaded ({err})"
            ) from None


def _checked_paths(name: str, delta: Delta, cls: type, section: str) -> dict[str, Any]:
    try:
        return flatten(cls, delta, section=section)
    except ConfigError as err:
        raise ModificationError(f"modification {name!r} sets {err}") from None
