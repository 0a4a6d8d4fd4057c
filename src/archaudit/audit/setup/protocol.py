"""Protocol checks at plan time (docs/protocol.md): the recipe lock (R1) is always enforced; the
noise-floor size (R5), downstream evaluation of attention-output arms (R6) and a second scale
for residual/norm arms (R7) are warnings that `--strict` turns into errors. Warnings are kept in
the plan and stored in the audit directory for the report."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archaudit.config import Recipe
from archaudit.data.identity import recipe_hash
from archaudit.errors import ConfigError
from archaudit.names import BASELINE
from archaudit.progress import warn

RECOMMENDED_NOISE_FLOOR_SEEDS = 3  # docs/protocol.md R5: k >= 3


@dataclass(frozen=True)
class ProtocolNote:
    rule: str
    """R5 | R6 | R7 | identity"""
    arm: str
    message: str
    scale: str | None = None
    """The one scale the note concerns (a seed the sequential loop added); None: every scale."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def recipe_lock(arm: str, arm_recipe: Recipe, shared: Recipe, *, tuned: bool) -> bool:
    """R1: True when the arm trains under another recipe than the audit's; refused unless the
    arm is marked `tuned = true`."""
    if recipe_hash(arm_recipe) == recipe_hash(shared):
        return False
    if not tuned:
        changed = [
            f"recipe.{f.name} {getattr(shared, f.name)!r} → {getattr(arm_recipe, f.name)!r}"
            for f in dataclasses.fields(Recipe)
            if getattr(shared, f.name) != getattr(arm_recipe, f.name)
        ]
        raise ConfigError(
            f"arm {arm!r} trains under another recipe than the audit's ({', '.join(changed)}); "
            "R1 allows one shared recipe: drop the change, or mark the arm tuned = true "
            "(every result will then say tuned)"
        )
    return True


def noise_floor_note(seeds: int) -> list[ProtocolNote]:
    if seeds >= RECOMMENDED_NOISE_FLOOR_SEEDS:
        return []
    return [
        ProtocolNote(
            "R5",
            BASELINE,
            f"the noise floor uses {seeds} baseline seeds; docs/protocol.md R5 asks for "
            f">= {RECOMMENDED_NOISE_FLOOR_SEEDS}",
        )
    ]


def downstream_note(arm: str, requires_downstream: bool, suite: str) -> list[ProtocolNote]:
    if not requires_downstream or suite:
        return []
    return [
        ProtocolNote(
            "R6",
            arm,
            f"{arm} has a downstream duty (it changes what attention outputs, or declares one) "
            "but the audit has no downstream suite (eval.suite): its loss can hide downstream "
            "losses",
        )
    ]


def cross_scale_note(
    arm: str, requires_cross_scale: bool, scales: Sequence[str]
) -> list[ProtocolNote]:
    if not requires_cross_scale or len(scales) >= 2:
        return []
    return [
        ProtocolNote(
            "R7",
            arm,
            f"{arm} has a cross-scale duty (it touches the residual path or normalisation, or "
            f"declares one) but is trained at one scale ({', '.join(scales)}); R7 asks for >= 2 "
            "scales to see instability",
        )
    ]


def enforce(notes: Sequence[ProtocolNote], *, strict: bool) -> None:
    """Refuse the audit under `--strict` when any note was raised."""
    if strict and notes:
        raise ConfigError(
            "protocol check failed (--strict): "
            + "; ".join(f"{n.rule}: {n.message}" for n in notes)
        )


def warn_notes(notes: Sequence[ProtocolNote]) -> None:
    for note in notes:
        warn(f"{note.rule}: {note.message}")
