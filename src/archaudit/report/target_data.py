"""The prediction the report's target section shows (report/target.py): `stats.predict` on
the ladder of the audit file, when that file names a [target]."""

from __future__ import annotations

from pathlib import Path

from archaudit.audit import store
from archaudit.audit.ladder import audit_ladder
from archaudit.audit.spec import load_audit
from archaudit.stats.family import resolve_direction
from archaudit.stats.options import JudgeOptions
from archaudit.stats.predict import Prediction, predict
from archaudit.stats.table import Table


def target_prediction(
    source: Path, audit_dir: Path | None, table: Table, metrics: tuple[str, ...], baseline: str
) -> Prediction | None:
    """The prediction for the first loss among `metrics`, when the audit file has a [target]."""
    audit_file = source if source.suffix == ".toml" else None
    if audit_file is None and audit_dir is not None:
        recorded = (store.read_json(audit_dir / store.AUDIT_FILE) or {}).get("source")
        audit_file = Path(recorded) if recorded else None
    losses = [m for m in metrics if resolve_direction(m, None)]
    if audit_file is None or not audit_file.is_file() or not losses:
        return None
    spec = load_audit(audit_file)
    if spec.target is None:
        return None
    ladder = audit_ladder(spec, baseline=baseline)
    return predict(table, losses[0], ladder, JudgeOptions(baseline=baseline))
