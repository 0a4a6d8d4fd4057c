"""Statistics and verdicts: is a modification real progress or seed noise? (docs/protocol.md)

Works on a long-format table of (arm, scale, seed, metric, value) rows, from an audit directory
or from a CSV of anybody's runs. Never imports torch (scipy provides the distributions).

    from archaudit.stats import load_table, judge
    judgement = judge(load_table("runs/my-audit"), "val_loss")  # a loss: lower is better
    print(judgement.to_json())
"""

from archaudit.metrics import lower_is_better as resolve_direction
from archaudit.stats.analyses.baseline_transfer import transfer_across_baselines
from archaudit.stats.analyses.decoupling import decoupling
from archaudit.stats.analyses.grading import grade
from archaudit.stats.analyses.interactions import interactions
from archaudit.stats.analyses.ranking import kendall_tau_b, spearman
from archaudit.stats.analyses.scaling import fit_loss_surface, fit_scaling_law
from archaudit.stats.analyses.transfer import cross_scale_transfer
from archaudit.stats.family import family_design
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
from archaudit.stats.judge import ArmVerdict, Judgement, judge
from archaudit.stats.options import JudgeOptions
from archaudit.stats.simulation.adaptive import adaptive_seeding
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
from archaudit.stats.table import Row, Table, load_table
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
