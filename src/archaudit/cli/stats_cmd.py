"""Registers every `archaudit stats` command (and `simulate-null`) on the app: one module per
command in cli/stats/, imported here for that side effect."""

from __future__ import annotations

from archaudit.cli.stats import (  # noqa: F401  (each registers its command)
    aggregate,
    decoupling,
    interactions,
    items,
    power,
    predict,
    scaling,
    simulate_null,
    snr,
    transfer,
    verdicts,
)
