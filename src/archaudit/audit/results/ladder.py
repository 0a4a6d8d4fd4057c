"""The ladder of an audit file: its trained scales and its [target] (`archaudit stats predict`).

Parameters are counted on the meta device from the baseline's model at each scale (and from the
target's preset), tokens are the steps each scale's token budget gives times the batch; a target
without tokens takes them from the line of the trained scales (docs/predict.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import model_sizes, scale_recipe
from archaudit.audit.setup.spec import AuditSpec, TargetSpec, load_audit
from archaudit.config import ModelConfig, build, merge_tables
from archaudit.errors import ConfigError
from archaudit.metrics import lower_is_better
from archaudit.presets import MODEL_PRESETS
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.predictions.ladders import Ladder, LadderScale, line_tokens, parse_size
from archaudit.stats.predictions.predict import Prediction, predict
from archaudit.stats.records.table import Table


def audit_ladder(
    spec: AuditSpec, target: TargetSpec | None = None, *, baseline: str = "baseline"
) -> Ladder:
    """The audit's scales (by parameters) and `target` (default: the file's [target])."""
    target = target or spec.target
    if target is None:
        raise ConfigError(
            f'{spec.source}: no target scale: add a [target] table (preset = "base", or '
            "params = 1.2e9) or give --target"
        )
    if baseline not in spec.baselines:
        baseline = next(iter(spec.baselines))
    scales = []
    for scale in spec.scales:
        model = spec.models[(baseline, scale.name)]
        recipe = scale_recipe(spec.recipe, scale)
        tokens = recipe.steps * recipe.batch_tokens
        scales.append(LadderScale(scale.name, float(model_sizes(model)[0]), tokens))
    ordered = tuple(sorted(scales, key=lambda s: s.params))
    return Ladder(ordered, target_scale(target, ordered, spec.baselines[baseline]))


def target_scale(
    target: TargetSpec, scales: tuple[LadderScale, ...], delta: Mapping[str, Any]
) -> LadderScale:
    """The target's parameters (counted for a preset) and tokens (given, per parameter, or on
    the ladder's line)."""
    if target.params is not None:
        params = target.params
    else:
        model = merge_tables(MODEL_PRESETS[str(target.preset)], delta)
        params = float(model_sizes(build(ModelConfig, model, section="target"))[0])
    if target.tokens is not None:
        tokens = target.tokens
    elif target.tokens_per_param is not None:
        tokens = target.tokens_per_param * params
    else:
        tokens = line_tokens(scales, params)
    name = target.preset if target.preset and target.name == "target" else target.name
    return LadderScale(name, params, tokens)


def parse_target(text: str, tokens: float | None = None) -> TargetSpec:
    """`--target`: a model preset or a number of parameters (1.2e9, 64M, 1.2B);
    `--target-tokens`."""
    params = parse_size(text)
    if params is None:
        return TargetSpec(preset=text, tokens=tokens)
    return TargetSpec(params=params, tokens=tokens)


def target_prediction(
    source: Path, audit_dir: Path | None, table: Table, metrics: tuple[str, ...], baseline: str
) -> Prediction | None:
    """The prediction for the first loss among `metrics`, when the audit file has a [target]."""
    audit_file = source if source.suffix == ".toml" else None
    if audit_file is None and audit_dir is not None:
        recorded = (store.read_json(audit_dir / store.AUDIT_FILE) or {}).get("source")
        audit_file = Path(recorded) if recorded else None
    losses = [m for m in metrics if lower_is_better(m, None)]
    if audit_file is None or not audit_file.is_file() or not losses:
        return None
    spec = load_audit(audit_file)
    if spec.target is None:
        return None
    ladder = audit_ladder(spec, baseline=baseline)
    return predict(table, losses[0], ladder, JudgeOptions(baseline=baseline))
