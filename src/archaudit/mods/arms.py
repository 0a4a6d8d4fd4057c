"""Arms: what an audit trains. An arm is the baseline plus zero or more modifications, written
`qk_norm+geglu`.

Modifications apply in catalogue order whatever order they are written in, so `a+b` and `b+a`
are one arm with one name, and a modification that reads a size (GQA reads `n_heads`) sees the
model after the ones that reshape it (`head_width_32`). Each one claims config keys (dotted
paths such as `model.attention.score`); a key claimed twice with different values is a
`ConflictError` naming both modifications and the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from archaudit.config import ModelConfig, Recipe, replace_paths
from archaudit.errors import ConfigError
from archaudit.mods.registry import Modification, ModificationError, get_modification
from archaudit.names import BASELINE
from archaudit.stats.records.table import CROSS_SCALE, DOWNSTREAM, DUTIES

C = TypeVar("C", ModelConfig, Recipe)


class ConflictError(ConfigError):
    """Two modifications of one arm claim the same field with different values."""

    def __init__(self, arm: str, field: str, first: tuple[str, Any], second: tuple[str, Any]):
        self.arm, self.field, self.mods = arm, field, (first[0], second[0])
        super().__init__(
            f"arm {arm!r}: {first[0]} and {second[0]} conflict on {field} "
            f"({first[0]} sets {first[1]!r}, {second[0]} sets {second[1]!r}); "
            "drop one of them"
        )


@dataclass(frozen=True)
class Arm:
    mods: tuple[Modification, ...]

    @property
    def name(self) -> str:
        return "+".join(mod.name for mod in self.mods)

    @property
    def family(self) -> str:
        """The family, or the families joined by '+' for a combination."""
        return "+".join(dict.fromkeys(mod.family for mod in self.mods))

    @property
    def duties(self) -> tuple[str, ...]:
        """The protocol duties of the arm: the union of its modifications' duties."""
        owed = {duty for mod in self.mods for duty in mod.protocol_duties}
        return tuple(duty for duty in DUTIES if duty in owed)

    @property
    def requires_downstream(self) -> bool:
        return DOWNSTREAM in self.duties

    @property
    def requires_cross_scale(self) -> bool:
        return CROSS_SCALE in self.duties

    @property
    def changes_recipe(self) -> bool:
        """A recipe arm: trained under another recipe hash, so the audit marks it `tuned`."""
        return any(mod.changes_recipe for mod in self.mods)

    def apply(self, cfg: ModelConfig) -> ModelConfig:
        """The arm's model: each modification's claims applied to `cfg` in turn."""
        return self._compose(cfg, "model", lambda mod, current: mod.claims(current))

    def apply_recipe(self, recipe: Recipe) -> Recipe:
        return self._compose(recipe, "recipe", lambda mod, _: mod.recipe_claims())

    def _compose(
        self, base: C, section: str, claims_of: Callable[[Modification, C], dict[str, Any]]
    ) -> C:
        claimed: dict[str, tuple[str, Any]] = {}
        for mod in self.mods:
            delta = claims_of(mod, base)  # {dotted path: value}; plugin `extra` key by key
            for path, value in delta.items():
                key = f"{section}.{path}"
                if key in claimed and claimed[key][1] != value:
                    raise ConflictError(self.name, key, claimed[key], (mod.name, value))
                claimed[key] = (mod.name, value)
            try:
                base = replace_paths(base, delta, section=section)
            except ConfigError as err:
                raise ConfigError(f"arm {self.name!r} ({mod.name}): {err}") from None
        return base


def resolve_arm(spec: str) -> Arm:
    """`"qk_norm+geglu"` → an `Arm`. Unknown names fail with did-you-mean; conflicts fail here
    already (on the default config and recipe), and again on the config the arm is applied to."""
    names = [part.strip() for part in spec.split("+")]
    if not all(names):
        raise ConfigError(f"arm {spec!r}: empty modification name (write e.g. 'qk_norm+geglu')")
    mods = [get_modification(name) for name in names]
    if len({mod.name for mod in mods}) < len(mods):
        raise ConfigError(f"arm {spec!r} names a modification twice")
    # The baseline is the identity of composition: `baseline+qk_norm` is `qk_norm`.
    changed = [mod for mod in mods if mod.family != BASELINE] or mods
    arm = Arm(tuple(sorted(changed, key=lambda mod: mod.rank)))
    try:
        arm.apply(ModelConfig())
        arm.apply_recipe(Recipe())
    except (ConflictError, ModificationError):
        raise
    except ConfigError:
        pass  # a size the default model lacks; `apply` judges the real one
    return arm
