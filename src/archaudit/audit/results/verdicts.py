"""How an audit's families are judged: its primary metrics, and α split over them (`findings`
asks here for every family it judges)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from archaudit.audit.grid.store import AUDIT_FILE, read_json
from archaudit.audit.setup.spec import default_primaries
from archaudit.stats.choices.options import primary_alpha

if TYPE_CHECKING:  # scipy loads only when an audit is judged
    from archaudit.stats import Judgement, JudgeOptions, Table


def audit_primaries(audit_dir: Path) -> tuple[str, ...]:
    """The audit's primary metrics as its audit.json records them (an older audit.json: the
    default for an audit with or without an eval suite)."""
    record = read_json(audit_dir / AUDIT_FILE) or {}
    primary = record.get("primary")
    if isinstance(primary, list) and primary and all(isinstance(m, str) for m in primary):
        return tuple(primary)
    return default_primaries(bool(record.get("suite")))


def family_options(
    audit_dir: Path, table: Table, metric: str, options: JudgeOptions
) -> tuple[JudgeOptions, str]:
    """The options one family of an audit is judged with, and the note that says so: α is split
    evenly (Bonferroni) over the primary metrics the table holds, so that the audit as a whole,
    not each metric, errs at most α (as the sequential loop splits it); any other metric is
    exploratory, judged at α outside that budget. `run`, `stats` and the report all ask here."""
    primaries = [m for m in audit_primaries(audit_dir) if m in table.metrics]
    names = ", ".join(primaries) or "none present"
    if metric not in primaries:
        return options, (
            f"exploratory: {metric} is not a primary metric of this audit ({names}); it is "
            f"judged at α = {options.alpha}, outside the audit's error budget"
        )
    if len(primaries) == 1:
        return options, ""
    split = primary_alpha(options.alpha, len(primaries))
    return options.but(alpha=split), (
        f"α = {options.alpha} is split over the audit's {len(primaries)} primary metrics "
        f"({names}): {metric} is judged at α = {split:g}, so the audit as a whole errs at most "
        f"α = {options.alpha} (Bonferroni)"
    )


def with_note(judgement: Judgement, note: str) -> Judgement:
    return dataclasses.replace(judgement, notes=(*judgement.notes, note)) if note else judgement
