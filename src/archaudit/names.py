"""The project's shared words, each spelled once: the baseline arm's name, the results file,
and the vocabulary of a finished run's status (StrEnums, as OLMo-core's TransformerBlockType:
a member compares and serialises as its string, so records and CSVs keep their text)."""

from __future__ import annotations

from enum import StrEnum

BASELINE = "baseline"
"""The arm every audit compares with (and the default `--baseline`)."""
RESULTS_FILE = "results.csv"
"""An audit's long-format results: one row per run and metric (`archaudit.stats.records.table`)."""
ITEMS_FILE = "items.csv"
"""Item-level results: one row per item, run and task (`archaudit.stats.inference.items`)."""


class ResultStatus(StrEnum):
    """How a finished run ended."""

    OK = "ok"
    DIVERGED = "diverged"
    """Its loss blew up (at its `diverged_step`)."""


class Correction(StrEnum):
    """How a family's p-values are corrected for its many arms (`--correction`)."""

    HOLM = "holm"
    """The default: controls the family-wise error, never less powerful than Bonferroni."""
    BONFERRONI = "bonferroni"
    """The 2026 audit's choice."""
    DUNNETT = "dunnett"
    """Many-to-one step-down on the shared-σ t."""
    BH = "bh"
    """Benjamini–Hochberg: controls the false discovery rate, not the family-wise error."""
    NONE = "none"
    """No correction: labelled, and above α over several arms."""


class Reference(StrEnum):
    """The distribution a test statistic is read against (`--reference`)."""

    T = "t"
    """Student's t with the noise floor's degrees of freedom (default)."""
    NORMAL = "normal"
    """The paper's z: treats σ as exact (a labelled, uncalibrated reproduction mode)."""


class Test(StrEnum):
    """The built-in tests a family's arms are judged by (chosen from their seeds and the
    options). Each is a registered entry, one file in stats/tests/; a plugin may
    register more (docs/guides/statistical-test.md), and a judgement's `test` is then its name."""

    WELCH = "welch"
    """Each arm's own seed variance (the default with ≥ 2 seeds per arm)."""
    ROBUST = "robust"
    """Welch, with single-seed arms held to the noise panel's widest σ."""
    POOLED_T = "pooled-t"
    """One pooled σ for every arm (`--equal-variance`): uncalibrated when arms differ."""
    Z = "z"
    """The paper's z on the noise floor's σ (`--reference normal`): a reproduction mode."""
    SEQUENTIAL = "sequential"
    """The sequential loop's group-sequential test (`run --until-settled`)."""
