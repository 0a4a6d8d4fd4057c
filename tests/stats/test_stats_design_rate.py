"""Every judgement carries its design's measured family-wise error rate and MDE, cached."""

from __future__ import annotations

import importlib
import json

import pytest

from archaudit.stats import AuditDesign, design_rate, judge, simulate_null
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.judgement_text import header
from archaudit.stats.records.noise_panel import CALIBRATION_PANEL
from archaudit.stats.simulation import calibrate
from archaudit.stats.simulation.design_rate import DESIGN_AUDITS, DESIGN_SEED, arm_mde

# The module, not the function `archaudit.stats.simulation.design_rate` that shadows it.
design_rate_module = importlib.import_module("archaudit.stats.simulation.design_rate")

VALUES = {"baseline": [0.0, 1.0, 2.0], "a": [5.0], "b": [1.0, 2.0], "c": [0.5]}


def test_json_states_the_design_and_its_measured_rate(make_table):
    data = json.loads(judge(make_table(VALUES), "acc").to_json())
    assert data["reference"] == "t" and data["calibrated"] is True
    assert data["test"] == "robust"
    design = AuditDesign(arm_seeds=(1, 2, 1), baseline_seeds=3)
    expected = simulate_null(design=design, audits=DESIGN_AUDITS, seed=DESIGN_SEED)
    assert DESIGN_AUDITS >= 2000
    assert data["design"]["fwer"] == data["design_fwer"] == expected.fwer
    assert data["design"]["audits"] == DESIGN_AUDITS
    assert data["design"]["mde_sigmas"] == pytest.approx(arm_mde(design, 1))
    assert data["design"]["design"]["arm_seeds"] == [1, 1, 2]
    assert data["design_above_alpha"] is False
    worst = data["design"]["panel_worst"]
    assert (
        worst["noise"] in CALIBRATION_PANEL
        and data["design_panel_worst"] == worst["fwer"] <= 0.05 + 2 * (worst["fwer_se"])
    )
    assert "Δ > 0 means better" in data["direction"]
    paper = json.loads(judge(make_table(VALUES), "acc", JudgeOptions(reference="normal")).to_json())
    assert paper["reference"] == "normal" and paper["calibrated"] is False


def test_a_design_above_alpha_is_flagged(make_table):
    values = {"baseline": [0.0, 1.0, 2.0], **{f"arm{i}": [0.1 * i] for i in range(19)}}
    judgement = judge(make_table(values), "acc", JudgeOptions(reference="normal"))
    assert judgement.design_above_alpha and judgement.design.fwer > 0.4
    assert any("ABOVE α" in line for line in header(judgement))
    assert any("above α = 0.05" in note for note in judgement.notes)
    assert not any("ABOVE" in line for line in header(judge(make_table(values), "acc")))


def test_rates_are_cached_in_process_and_on_disk(design_cache, monkeypatch):
    design = AuditDesign(arm_seeds=(1,) * 5, baseline_seeds=4, correction="bonferroni")
    first = design_rate(design)
    assert list((design_cache / "stats").glob("design-*.json"))

    def no_simulation(*_, **__):
        raise AssertionError("the cached rate was simulated again")

    monkeypatch.setattr(design_rate_module, "null_rates", no_simulation)
    monkeypatch.setattr(calibrate, "simulate_outcomes", no_simulation)
    design_rate_module._rates.cache_clear()  # a fresh process: only the disk cache is left
    calibrate.design_level.cache_clear()
    again = design_rate(design)
    assert again.fwer == first.fwer and again.panel_worst == first.panel_worst
    assert again.level == first.level and again.candidate_rate == first.candidate_rate


def test_uncorrected_above_alpha_prints_no_improver(make_table):
    """Issue 41.3: 19 arms × 3 seeds uncorrected measured 0.113 and printed improvers under a
    "≤ α while no arm is wider than 12× σ" clause. Now it is flagged, labelled uncorrected, its
    verdicts are nominal and the clause is gone."""
    values = {"baseline": [0.0, 1.0, 2.0]} | {
        f"arm{i}": [0.5 + 0.1 * i, 1.0, 1.5 - 0.1 * i] for i in range(18)
    }
    values["far"] = [40.0, 40.5, 41.0]
    judgement = judge(make_table(values), "acc", JudgeOptions(correction="none"))
    assert judgement.design_above_alpha and judgement.design.fwer > 0.05
    said = "\n".join(header(judgement))
    assert "ABOVE α (uncorrected: --correction none)" in said and "≤ α while" not in said
    assert judgement.arm("far").verdict == "nominal-improver"
    assert not {a.verdict for a in judgement.arms} & {"improver", "regressor"}
