"""Modifications: registered, cited deltas on the baseline model, composed into arms.

    >>> arm = resolve_arm("qk_norm+geglu")
    >>> arm.apply(ModelConfig()).mlp.name
    'geglu'

Public API for the audit planner and the CLI: `resolve_arm`, `get_suite`,
`list_modifications`, `get_modification`, `load_plugins`, and the `modification` decorator
with which a plugin registers its own entries. Importing this package never imports torch.
"""

from archaudit.mods import catalogue  # noqa: F401  (registers the built-in catalogue)
from archaudit.mods.arms import Arm, ConflictError, resolve_arm
from archaudit.mods.registry import (
    FAMILIES,
    Citation,
    Modification,
    ModificationError,
    ReferenceCheck,
    get_modification,
    list_modifications,
    load_plugins,
    modification,
)
from archaudit.mods.suites import SUITES, get_suite, list_suites

__all__ = [
    "FAMILIES",
    "SUITES",
    "Arm",
    "Citation",
    "ConflictError",
    "Modification",
    "ModificationError",
    "ReferenceCheck",
    "get_modification",
    "get_suite",
    "list_modifications",
    "list_suites",
    "load_plugins",
    "modification",
    "resolve_arm",
]
