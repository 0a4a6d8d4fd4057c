"""benchmarks/stress_logit_design.py, the planning tool behind z_loss_logits' design (issue 54):
a design keeps a pilot's rates (filling a lower-half rate it lacks), a fraction keeps that share
of the pilot's effect, and the stored record powers the claim file's design."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
from pathlib import Path
from types import ModuleType

import pytest

from archaudit.stats.analyses.logits import LogitRun

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def design() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "logit_design", ROOT / "benchmarks" / "stress_logit_design.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RATES = (1e-3, 3e-3, 9e-3, 0.03, 0.09, 0.3)


def runs() -> dict[str, list[LogitRun]]:
    """The baseline's |log Z| rises with the rate; the arm's is 2 lower, attention logit ×e⁻¹."""
    out: dict[str, list[LogitRun]] = {}
    for arm, gap in (("baseline", 0.0), ("z_loss", 2.0)):
        out[arm] = [
            LogitRun(arm, lr, seed, True, 10.0 * math.exp(-gap / 2), 10 + i + seed * 0.3 - gap)
            for i, lr in enumerate(RATES)
            for seed in range(3)
        ]
    return out


def test_a_design_keeps_its_rates_and_fills_a_missing_low_one(design):
    kept = design.restrict(runs(), [1e-4, 3e-3, 9e-3, 0.03])
    assert sorted({r.lr for r in kept["z_loss"]}) == [1e-4, 3e-3, 9e-3, 0.03]
    low = [r.log_z for r in kept["baseline"] if r.lr == 1e-4]
    assert low == [r.log_z for r in runs()["baseline"] if r.lr == 1e-3]  # the lowest rate's
    with pytest.raises(SystemExit, match="upper half"):
        design.restrict(runs(), [1e-3, 3e-3, 0.05, 0.09])


@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.0])
def test_a_fraction_keeps_that_share_of_the_effect_and_the_spread(design, fraction):
    shrunk = design.shrink(runs(), fraction)
    for lr in RATES:
        arm = [r for r in shrunk["z_loss"] if r.lr == lr]
        base = [r for r in shrunk["baseline"] if r.lr == lr]
        gap = statistics.fmean(r.log_z for r in arm) - statistics.fmean(r.log_z for r in base)
        assert gap == pytest.approx(-2.0 * fraction)
        ratio = statistics.fmean(math.log(r.attn_logit) for r in arm) - math.log(10.0)
        assert ratio == pytest.approx(-1.0 * fraction)
        assert statistics.stdev(r.log_z for r in arm) == pytest.approx(0.3)


def test_the_stored_record_powers_the_claim_files_design_at_half_the_pilot_effect(tmp_path):
    from archaudit.audit.replicating.replicate import claim_spec, get_claim

    claim = get_claim("z_loss_logits")
    spec = claim_spec(claim, tmp_path / "runs")
    rates = [spec.recipe.lr * f for f in spec.stress.lr_factors]
    record = json.loads((ROOT / "benchmarks/stress/logit-design-wortsman2023z.json").read_text())
    row = next(
        r
        for r in record["rows"]
        if r["fraction"] == 0.5
        and r["seeds"] == spec.stress.seeds
        and len(r["rates"]) == len(rates)
        and all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(r["rates"], rates, strict=True))
    )
    assert row["power"] >= 0.8
