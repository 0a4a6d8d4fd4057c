"""Statistics and verdicts: is a modification real progress or seed noise? (docs/protocol.md)

Works on a long-format table of (arm, scale, seed, metric, value) rows, from an audit directory
or from a CSV of anybody's runs. Never imports torch (scipy provides the distributions).

    from archaudit.stats import load_table, judge
    judgement = judge(load_table("runs/my-audit"), "val_loss")  # a loss: lower is better
    print(judgement.to_json())

The names below load on first use (PEP 562): a run process imports
`archaudit.stats.choices.options` and `table`, and must not pay for scipy.stats and every analysis
(about 1 s on a 2-core CPU).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archaudit.metrics import lower_is_better as resolve_direction
    from archaudit.stats.analyses.adaptive import adaptive_seeding
    from archaudit.stats.analyses.baseline_transfer import transfer_across_baselines
    from archaudit.stats.analyses.decoupling import decoupling
    from archaudit.stats.analyses.interactions import interactions
    from archaudit.stats.analyses.ranking import kendall_tau_b, spearman
    from archaudit.stats.analyses.scaling import fit_loss_surface, fit_scaling_law
    from archaudit.stats.analyses.transfer import cross_scale_transfer
    from archaudit.stats.choices.options import JudgeOptions
    from archaudit.stats.inference.corrections import CORRECTIONS, adjust_pvalues, fwer_uncorrected
    from archaudit.stats.inference.dunnett import dunnett_stepdown
    from archaudit.stats.inference.family_test import REFERENCES
    from archaudit.stats.inference.items import ItemTable, load_items
    from archaudit.stats.inference.noise import pooled_sd
    from archaudit.stats.inference.paired import (
        compare_item_measure,
        compare_items,
        mcnemar,
        paired_bootstrap,
        wilson_interval,
    )
    from archaudit.stats.inference.significance import welch_test, z_test
    from archaudit.stats.judging.family import family_design
    from archaudit.stats.judging.grading import grade
    from archaudit.stats.judging.judgement import ArmVerdict, Judgement, judge
    from archaudit.stats.records.table import Row, Table, load_table
    from archaudit.stats.records.verdicts import VERDICTS
    from archaudit.stats.simulation.design import AuditDesign
    from archaudit.stats.simulation.design_rate import DesignRate, design_power, design_rate
    from archaudit.stats.simulation.power import (
        Design,
        DesignPower,
        minimum_detectable_effect,
        power,
        seeds_needed,
    )
    from archaudit.stats.simulation.simulate import simulate_null

_LAZY: dict[str, tuple[str, str]] = {
    "resolve_direction": ("archaudit.metrics", "lower_is_better"),
    "transfer_across_baselines": (
        "archaudit.stats.analyses.baseline_transfer",
        "transfer_across_baselines",
    ),
    "decoupling": ("archaudit.stats.analyses.decoupling", "decoupling"),
    "grade": ("archaudit.stats.judging.grading", "grade"),
    "interactions": ("archaudit.stats.analyses.interactions", "interactions"),
    "kendall_tau_b": ("archaudit.stats.analyses.ranking", "kendall_tau_b"),
    "spearman": ("archaudit.stats.analyses.ranking", "spearman"),
    "fit_loss_surface": ("archaudit.stats.analyses.scaling", "fit_loss_surface"),
    "fit_scaling_law": ("archaudit.stats.analyses.scaling", "fit_scaling_law"),
    "cross_scale_transfer": ("archaudit.stats.analyses.transfer", "cross_scale_transfer"),
    "family_design": ("archaudit.stats.judging.family", "family_design"),
    "CORRECTIONS": ("archaudit.stats.inference.corrections", "CORRECTIONS"),
    "adjust_pvalues": ("archaudit.stats.inference.corrections", "adjust_pvalues"),
    "fwer_uncorrected": ("archaudit.stats.inference.corrections", "fwer_uncorrected"),
    "dunnett_stepdown": ("archaudit.stats.inference.dunnett", "dunnett_stepdown"),
    "REFERENCES": ("archaudit.stats.inference.family_test", "REFERENCES"),
    "ItemTable": ("archaudit.stats.inference.items", "ItemTable"),
    "load_items": ("archaudit.stats.inference.items", "load_items"),
    "pooled_sd": ("archaudit.stats.inference.noise", "pooled_sd"),
    "compare_item_measure": ("archaudit.stats.inference.paired", "compare_item_measure"),
    "compare_items": ("archaudit.stats.inference.paired", "compare_items"),
    "mcnemar": ("archaudit.stats.inference.paired", "mcnemar"),
    "paired_bootstrap": ("archaudit.stats.inference.paired", "paired_bootstrap"),
    "wilson_interval": ("archaudit.stats.inference.paired", "wilson_interval"),
    "welch_test": ("archaudit.stats.inference.significance", "welch_test"),
    "z_test": ("archaudit.stats.inference.significance", "z_test"),
    "ArmVerdict": ("archaudit.stats.judging.judgement", "ArmVerdict"),
    "Judgement": ("archaudit.stats.judging.judgement", "Judgement"),
    "judge": ("archaudit.stats.judging.judgement", "judge"),
    "JudgeOptions": ("archaudit.stats.choices.options", "JudgeOptions"),
    "adaptive_seeding": ("archaudit.stats.analyses.adaptive", "adaptive_seeding"),
    "AuditDesign": ("archaudit.stats.simulation.design", "AuditDesign"),
    "DesignRate": ("archaudit.stats.simulation.design_rate", "DesignRate"),
    "design_power": ("archaudit.stats.simulation.design_rate", "design_power"),
    "design_rate": ("archaudit.stats.simulation.design_rate", "design_rate"),
    "Design": ("archaudit.stats.simulation.power", "Design"),
    "DesignPower": ("archaudit.stats.simulation.power", "DesignPower"),
    "minimum_detectable_effect": ("archaudit.stats.simulation.power", "minimum_detectable_effect"),
    "power": ("archaudit.stats.simulation.power", "power"),
    "seeds_needed": ("archaudit.stats.simulation.power", "seeds_needed"),
    "simulate_null": ("archaudit.stats.simulation.simulate", "simulate_null"),
    "Row": ("archaudit.stats.records.table", "Row"),
    "Table": ("archaudit.stats.records.table", "Table"),
    "load_table": ("archaudit.stats.records.table", "load_table"),
    "VERDICTS": ("archaudit.stats.records.verdicts", "VERDICTS"),
}
"""Public name → (module, attribute), imported when first asked for."""

__all__ = [
    "CORRECTIONS",
    "REFERENCES",
    "VERDICTS",
    "ArmVerdict",
    "AuditDesign",
    "Design",
    "DesignPower",
    "DesignRate",
    "ItemTable",
    "JudgeOptions",
    "Judgement",
    "Row",
    "Table",
    "adaptive_seeding",
    "adjust_pvalues",
    "compare_item_measure",
    "compare_items",
    "cross_scale_transfer",
    "decoupling",
    "design_power",
    "design_rate",
    "dunnett_stepdown",
    "family_design",
    "fit_loss_surface",
    "fit_scaling_law",
    "fwer_uncorrected",
    "grade",
    "interactions",
    "judge",
    "kendall_tau_b",
    "load_items",
    "load_table",
    "mcnemar",
    "minimum_detectable_effect",
    "paired_bootstrap",
    "pooled_sd",
    "power",
    "resolve_direction",
    "seeds_needed",
    "simulate_null",
    "spearman",
    "transfer_across_baselines",
    "welch_test",
    "wilson_interval",
    "z_test",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'archaudit.stats' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
