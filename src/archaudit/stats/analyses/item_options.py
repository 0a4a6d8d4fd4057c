"""`ItemOptions`: which arms are paired on which items, and how. Apart from the pairing itself
(`item_pairs`, scipy) so that the command line builds its flags without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field

from archaudit.names import BASELINE
from archaudit.ranges import REPLICATES, SEED

CORRECT = "correct"
"""The measure of correctness: each item right or wrong (bootstrap, McNemar)."""


@dataclass(frozen=True, kw_only=True)
class ItemOptions:
    """Which arms are paired on which items, and how (`archaudit stats items` has one flag per
    field)."""

    scale: str | None = None
    """Scale [default: every scale, each in turn]."""
    baseline: str = field(default=BASELINE, metadata={"help": "The baseline arm."})
    task: str | None = None
    """One task (default: all)."""
    measure: str = field(default=CORRECT, metadata={"metavar": "correct|bpb|margin"})
    """What is paired per item: correctness (bootstrap, McNemar), or the gold continuation's
    bits per byte (lower is better) or the choice margin (higher is better), by a paired t-test
    and a Wilcoxon signed-rank test."""
    n_boot: int = field(default=2000, metadata={"range": REPLICATES})
    """Bootstrap replicates."""
    seed: int = field(default=0, metadata={"range": SEED})
    """Seed of the bootstrap's draws."""
