"""Issue 54: an interaction claim (OlmPool's GQA × SWA on retrieval) judged from its run folders
(reproduced / contradicted / not established, with the contrast's power), its generated
retrieval corpus, and the stored confirming run judged as docs/replications.md says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.replicating.replicate import GENERATED, claim_spec, get_claim, load_claims
from archaudit.audit.replicating.replication import Outcome, judge_claim
from archaudit.audit.setup.spec import AuditSpec, load_audit
from archaudit.errors import ConfigError

METRIC = "needle/acc"
Cells = Callable[[str, int], float]


def _interaction_audit(write_audit, direction: str = "worse") -> Path:
    claim = {"title": "t", "paper": "p", "test": "interaction", "arm": "gqa+swa",
             "direction": direction, "metric": METRIC}  # fmt: skip
    return write_audit(
        arms=["gqa", "swa", "gqa+swa"],
        seeds={"noise_floor": 4, "arms": 4, "primary": [METRIC]},
        claims={"c": claim},
    )


def _write_runs(spec: AuditSpec, value: Cells, cpu_s: float = 2.0) -> None:
    """Finished runs whose metric is `value(arm, seed)`, each with a CPU clock."""
    plan = make_plan(spec)
    store.materialize(plan)
    for run in plan.runs:
        train = {"tokens": 6000, "tokens_per_s": 1000.0, "process_cpu_s": cpu_s}
        metrics = {METRIC: value(run.arm, run.seed), "val_loss": 1.0}
        record = RunRecord.of_run(run, status="ok", metrics=metrics, train=train)
        store.write_done(plan.run_dir(run), record)
    store.refresh_export(plan.audit_dir)


def _accuracy(pair: float) -> Cells:
    """Cell means baseline 0.6, gqa 0.55, swa 0.45; the pair 0.4 + `pair` (additive: 0.4),
    seed noise σ 0.02."""
    means = {"baseline": 0.6, "gqa": 0.55, "swa": 0.45, "gqa+swa": 0.4 + pair}

    def value(arm: str, seed: int) -> float:
        rng = np.random.default_rng([sum(map(ord, arm)), seed])
        return means[arm] + 0.02 * float(rng.normal())

    return value


def _judged(path: Path):
    (claim,) = load_claims(path)
    return judge_claim(claim, load_audit(path))


@pytest.mark.parametrize(
    ("pair", "direction", "outcome"),
    [
        (-0.2, "worse", Outcome.REPRODUCED),  # the pair loses 0.2 beyond the sum of each alone
        (-0.2, "better", Outcome.CONTRADICTED),
        (0.2, "worse", Outcome.CONTRADICTED),
        (0.0, "worse", Outcome.NOT_ESTABLISHED),
    ],
)
def test_an_interaction_claim_reads_the_factorial_contrast(write_audit, pair, direction, outcome):
    path = _interaction_audit(write_audit, direction)
    _write_runs(load_audit(path), _accuracy(pair))
    result = _judged(path)
    assert result.outcome is outcome
    evidence = result.evidence
    assert evidence is not None and evidence.design == "4 seeds per cell × xs"
    assert evidence.estimate == pytest.approx(pair, abs=0.06)
    low, high = evidence.interval
    assert low < evidence.estimate < high
    assert result.runs == 16 and result.cpu_s == pytest.approx(32.0) and result.cpu_measured == 16


def test_an_interaction_not_established_says_its_power_and_seeds(write_audit):
    path = _interaction_audit(write_audit)
    _write_runs(load_audit(path), _accuracy(-0.01))  # half its SE (σ·2/√4): too small for 4
    result = _judged(path)
    assert result.outcome is Outcome.NOT_ESTABLISHED
    assert 0.05 < result.evidence.power < 0.8
    assert "seeds per cell give 0.8 for the measured contrast" in result.why


def test_an_interaction_without_its_pair_is_not_run(write_audit):
    path = _interaction_audit(write_audit)
    spec = load_audit(path)
    _write_runs(spec, _accuracy(-0.2))
    for done in sorted((spec.audit_dir / "gqa+swa").rglob("DONE")):
        done.unlink()
    store.refresh_export(spec.audit_dir)
    assert _judged(path).outcome is Outcome.NOT_RUN


# --- the generated retrieval corpus ---------------------------------------------------------


def test_the_retrieval_corpus_is_written_once_beside_the_runs(tmp_path: Path):
    claim = get_claim("gqa_swa_retrieval")
    first = claim_spec(claim, tmp_path / "a")
    second = claim_spec(claim, tmp_path / "b")
    a, b = Path(first.recipe.corpus), Path(second.recipe.corpus)
    assert a.name.startswith("retrieval-") and a.read_bytes() == b.read_bytes()
    assert b"? key " in a.read_bytes()[:2000]
    written = a.stat().st_mtime_ns
    again = claim_spec(claim, tmp_path / "a")
    assert a.stat().st_mtime_ns == written  # written once: a resumed claim finds its runs
    assert {r.run_id for r in make_plan(again).runs} == {r.run_id for r in make_plan(first).runs}


def test_a_generated_corpus_is_a_registration():
    assert {"reasoning", "retrieval"} <= set(GENERATED)
    with pytest.raises(ConfigError, match="did you mean 'retrieval'"):
        GENERATED.get("retreival")


# --- the claim's setting -------------------------------------------------------------------


def test_the_claim_confirms_on_fresh_seeds_with_the_retrieval_stream(tmp_path: Path):
    """Its pilots trained seeds 0-5 (the baseline never retrieved, docs/replications.md): a
    confirming run would train the 2×2 on seeds past them, on the generated stream, scored by
    the needle task inside the context."""
    claim = get_claim("gqa_swa_retrieval")
    spec = claim_spec(claim, tmp_path / "runs")
    runs = make_plan(spec).runs
    assert {r.arm for r in runs} == {"baseline", "gqa", "swa", "gqa+swa"}
    assert min(r.seed for r in runs) > max(claim.pilot_seeds)
    assert Path(spec.recipe.corpus).name.startswith("retrieval-")
    assert claim.metric == METRIC and spec.primary_metrics == (METRIC,)
