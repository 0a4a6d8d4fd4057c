"""Statistics and verdicts: is a modification real progress or seed noise? (docs/protocol.md)

Works on a long-format table of (arm, scale, seed, metric, value) rows, from an audit directory
or from a CSV of anybody's runs. Never imports torch (scipy provides the distributions).

    from archaudit.stats import load_table, judge
    judgement = judge(load_table("runs/my-audit"), "val_loss")  # a loss: lower is better
    print(judgement.to_json())
"""

from archaudit.metrics import lower_is_better as resolve_direction
from archaudit.stats.adaptive import adaptive_seeding
from archaudit.stats.baseline_transfer import transfer_across_baselines
from archaudit.stats.corrections import CORRECTIONS, adjust_pvalues, fwer_uncorrected
from archaudit.stats.decoupling import decoupling
from archaudit.stats.design import AuditDesign
from archaudit.stats.design_rate import DesignRate, design_rate
from archaudit.stats.dunnett import dunnett_stepdown
from archaudit.stats.family import family_design
from archaudit.stats.family_test import REFERENCES
from archaudit.stats.grading import grade
from archaudit.stats.interactions import interactions
from archaudit.stats.items import ItemTable, load_items
from archaudit.stats.judge import ArmVerdict, Judgement, judge
from archaudit.stats.noise import pooled_sd
from archaudit.stats.options import JudgeOptions
from archaudit.stats.paired import (
    compare_item_measure,
    compare_items,
    mcnemar,
    paired_bootstrap,
    wilson_interval,
)
from archaudit.stats.power import (
    Design,
    DesignPower,
    design_power,
    minimum_detectable_effect,
    power,
    seeds_needed,
)
from archaudit.stats.ranking import kendall_tau_b, spearman
from archaudit.stats.scaling import fit_loss_surface, fit_scaling_law
from archaudit.stats.significance import welch_test, z_test
from archaudit.stats.simulate import simulate_null
from archaudit.stats.table import Row, Table, load_table
from archaudit.stats.transfer import cross_scale_transfer
from archaudit.stats.verdicts import VERDICTS

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
