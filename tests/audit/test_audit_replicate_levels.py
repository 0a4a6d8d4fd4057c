"""Issue 54 (second wave): confirming runs on fresh seeds (`seeds.offset`, `pilot_seeds`), level
claims (attention sinks, the LM-head bottleneck, pruning × test-time scaling) judged from the
values stored in their folder, and each run's process CPU time in its DONE."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archaudit.audit.execute.runner import PROCESS_CPU, run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import materialize, read_record
from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.replicating.replicate import (
    Claim,
    ClaimTest,
    check_fresh_seeds,
    claim_spec,
    get_claim,
    load_claims,
)
from archaudit.audit.replicating.replicate_levels import (
    MEASURES,
    LevelSample,
    level_test,
    measure_units,
    one_sided_power,
    oracle_gain,
    sample_path,
    stored_sample,
    uniform_sink,
    units_for,
    vote_gain,
    vote_gain_over_mean,
    vote_share,
    write_sample,
)
from archaudit.audit.replicating.replicate_run import plan_claims
from archaudit.audit.replicating.replication import Outcome, judge_claim
from archaudit.audit.setup.spec import load_audit
from archaudit.audit.stability.stress import stress_plan
from archaudit.diagnose.tts import TTSCurves
from archaudit.errors import ConfigError

# --- seeds.offset and pilot_seeds ----------------------------------------------------------


def test_an_offset_trains_fresh_seeds_with_their_own_ids(write_audit):
    plain = make_plan(load_audit(write_audit()))
    fresh = make_plan(load_audit(write_audit(seeds={"noise_floor": 2, "arms": 1, "offset": 3})))
    assert sorted({r.seed for r in fresh.runs}) == [3, 4]
    assert {r.path for r in fresh.runs} == {"baseline/xs/seed-3", "baseline/xs/seed-4",
                                            "qk_norm/xs/seed-3"}  # fmt: skip
    assert not {r.run_id for r in fresh.runs} & {r.run_id for r in plain.runs}


def test_the_stress_sweep_takes_the_offset_too(write_audit):
    spec = load_audit(write_audit(seeds={"noise_floor": 2, "offset": 5}, stress={"seeds": 2}))
    assert {p.run.seed for p in stress_plan(spec).points} == {5, 6}


def test_an_offset_is_refused_where_seeds_are_numbered_from_zero(write_audit):
    with pytest.raises(ConfigError, match=r"seeds.offset = 2: the sequential policy"):
        load_audit(write_audit(seeds={"noise_floor": 2, "offset": 2, "policy": "sequential"}))
    with pytest.raises(ConfigError, match=r"seeds.offset = -1 must be in"):
        load_audit(write_audit(seeds={"noise_floor": 2, "offset": -1}))


def _level_claim(**changes) -> dict:
    return {"title": "t", "paper": "p", "test": "level", "measure": "sink_ratio",
            "band": [2.0, math.inf]} | changes  # fmt: skip


def test_a_confirming_run_on_the_pilots_seeds_is_refused(write_audit):
    path = write_audit(arms=[], claims={"c": _level_claim(pilot_seeds=[0, 1])})
    (claim,) = load_claims(path)
    with pytest.raises(ConfigError, match=r"seeds \[0, 1\] are the pilots'.*offset = 2"):
        check_fresh_seeds(claim, load_audit(path))
    check_fresh_seeds(claim, load_audit(path, ["seeds.offset=2"]))  # fresh: accepted


def test_every_claim_that_records_pilot_seeds_confirms_on_others(tmp_path: Path):
    from archaudit.audit.replicating.replicate import confirming_seeds, list_claims

    recorded = [c for c in list_claims() if c.pilot_seeds]
    assert {c.name for c in recorded} >= {"attention_sinks", "pruning_breaks_tts"}
    for claim in recorded:
        spec = claim_spec(claim, tmp_path / "runs", data_root=tmp_path)
        assert not set(claim.pilot_seeds) & set(confirming_seeds(claim, spec)), claim.name


# --- the level test ------------------------------------------------------------------------


def test_level_test_declares_inside_outside_or_neither():
    band = (0.95, 0.99)
    inside = level_test([0.97, 0.975, 0.972, 0.978, 0.971, 0.974], band, 0.05)
    assert inside.sign == 1 and inside.p < 0.05
    low, high = inside.interval
    assert 0.95 < low < inside.mean < high < 0.99  # the 90% interval inside: TOST
    below = level_test([0.90, 0.91, 0.905, 0.902], band, 0.05)
    assert below.sign == -1 and below.p_outside < 0.05
    wide = level_test([0.93, 0.99, 0.96, 1.0], band, 0.05)
    assert wide.sign == 0 and wide.power is not None and wide.power < 0.8
    one_edge = level_test([2.5, 3.1, 2.8, 3.4], (2.0, math.inf), 0.05)
    assert one_edge.sign == 1 and one_edge.distance_sd > 0


def test_level_test_with_one_unit_declares_nothing():
    result = level_test([3.0], (2.0, math.inf), 0.05)
    assert result.sign == 0 and result.power is None and result.n == 1


def test_units_for_reaches_the_goal_and_no_fewer():
    n = units_for(1.0, 0.05)
    assert n is not None and one_sided_power(1.0, n, 0.05) >= 0.8
    assert one_sided_power(1.0, n - 1, 0.05) < 0.8
    assert units_for(-0.5, 0.05) is None  # measured outside the band: no count reproduces it


def test_uniform_sink_is_the_mass_an_even_head_puts_on_the_first_token():
    window = 8
    expected = sum(1 / (t + 1) for t in range(1, window)) / (window - 1)
    assert uniform_sink(window) == pytest.approx(expected)
    assert uniform_sink(2) == pytest.approx(0.5)


# --- level claims judged from a stored small run folder ------------------------------------

MEASURED = {
    "sink_ratio": ("seed", (3.1, 2.6, 2.9, 3.4), (1.1, 0.9, 1.2, 1.0), (1.5, 2.9, 2.2, 3.8)),
    "suppressed_fraction": (
        "text window",
        (0.975, 0.978, 0.972, 0.980, 0.976, 0.977),
        (0.90, 0.91, 0.905, 0.902, 0.899, 0.907),
        (0.93, 0.99, 0.96, 1.0, 0.94, 0.995),
    ),
    "vote_gain_lost": ("seed", (0.2, 0.3, 0.25, 0.28), (-0.2, -0.3, -0.25, -0.22),
                       (0.1, -0.1, 0.2, -0.15)),
}  # fmt: skip
"""Per measure: its unit, then values inside, outside and undecided against `BANDS`."""
BANDS = {"sink_ratio": [2.0, math.inf], "suppressed_fraction": [0.95, 0.99],
         "vote_gain_lost": [0.0, math.inf]}  # fmt: skip


@pytest.mark.parametrize("measure", sorted(MEASURED))
@pytest.mark.parametrize(
    ("which", "outcome"),
    [(1, Outcome.REPRODUCED), (2, Outcome.CONTRADICTED), (3, Outcome.NOT_ESTABLISHED)],
)
def test_a_level_claim_is_judged_from_its_stored_values(write_audit, measure, which, outcome):
    path = write_audit(arms=[], claims={"c": _level_claim(measure=measure, band=BANDS[measure])})
    (claim,) = load_claims(path)
    spec = load_audit(path)
    assert judge_claim(claim, spec).outcome is Outcome.NOT_RUN  # nothing measured yet
    unit, *values = MEASURED[measure]
    sample = LevelSample(measure=measure, unit=unit, values=values[which - 1], reference=0.5,
                         reference_name="chance", source="fabricated")  # fmt: skip
    write_sample(sample, sample_path(spec.audit_dir, claim.name))
    result = judge_claim(claim, spec)
    assert result.outcome is outcome
    assert result.evidence is not None and result.evidence.alpha == 0.05
    if outcome is Outcome.NOT_ESTABLISHED:
        assert "give 0.8" in result.why or "up to 1000" in result.why
        assert 0.0 <= result.evidence.power < 0.8


def test_values_stored_for_another_measure_are_neither_judged_nor_reused(write_audit):
    """A claim whose measure changed (FLB's did, twice) is not judged on the old measure's
    values left in its folder: it reads as not run, and `replicate` measures it again."""
    path = write_audit(arms=[], claims={"c": _level_claim(measure="vote_share_lost",
                                                          band=[0.0, math.inf])})  # fmt: skip
    (claim,) = load_claims(path)
    spec = load_audit(path)
    old = LevelSample(measure="vote_gain_lost", unit="seed", values=(0.3, 0.4, 0.35, 0.32))
    write_sample(old, sample_path(spec.audit_dir, claim.name))
    assert stored_sample(claim, spec.audit_dir) is None
    assert judge_claim(claim, spec).outcome is Outcome.NOT_RUN
    same = LevelSample(measure="vote_share_lost", unit="seed", values=(0.3, 0.4, 0.35, 0.32))
    write_sample(same, sample_path(spec.audit_dir, claim.name))
    found = stored_sample(claim, spec.audit_dir)
    assert found is not None and found.values == same.values
    assert judge_claim(claim, spec).outcome is Outcome.REPRODUCED


def test_level_claim_errors_teach():
    with pytest.raises(ConfigError, match="did you mean 'sink_ratio'"):
        Claim(name="x", title="t", paper="p", test="level", measure="sink_ratoi", band=(1, 2))
    with pytest.raises(ConfigError, match=r"band = .* must be \[low, high\]"):
        Claim(name="x", title="t", paper="p", test="level", measure="sink_ratio", band=(2, 1))
    with pytest.raises(ConfigError, match="one of them finite"):
        Claim(name="x", title="t", paper="p", test="level", measure="sink_ratio",
              band=(-math.inf, math.inf))  # fmt: skip
    with pytest.raises(ConfigError, match="direction is its band"):
        Claim(name="x", title="t", paper="p", test="level", measure="sink_ratio",
              band=(1, 2), direction="better")  # fmt: skip
    with pytest.raises(ConfigError, match=r"temperature = 0 must be > 0 \(greedy"):
        Claim(name="x", title="t", paper="p", test="level", measure="vote_gain_lost",
              band=(0, math.inf), temperature=0)  # fmt: skip
    with pytest.raises(ConfigError, match="pilot_seeds"):
        Claim(name="x", title="t", paper="p", test="verdict", arm="a", direction="worse",
              pilot_seeds=(-1,))  # fmt: skip


def test_the_issue_level_claims_are_runnable_level_claims():
    for name, measure in [("attention_sinks", "sink_ratio"),
                          ("lm_head_bottleneck", "suppressed_fraction"),
                          ("pruning_breaks_tts", "vote_share_lost")]:  # fmt: skip
        claim = get_claim(name)
        assert claim.runnable and claim.test == ClaimTest.LEVEL and claim.measure == measure
        assert claim.measure in MEASURES


def test_a_model_file_claim_plans_nothing_to_train(tmp_path: Path):
    (plan,) = plan_claims(["lm_head_bottleneck"], tmp_path / "runs", probe=False)
    assert plan.runs_left == 0 and plan.cpu_s == 0.0 and "nothing to train" in plan.power[0]
    (tts,) = plan_claims(["pruning_breaks_tts"], tmp_path / "runs", probe=False)
    assert tts.runs_left == 4 and "vote_share_lost to measure (seeds)" in tts.power[0]


def test_the_reasoning_corpus_is_written_once_with_the_same_bytes(tmp_path: Path):
    claim = get_claim("pruning_breaks_tts")
    first = claim_spec(claim, tmp_path / "a")
    second = claim_spec(claim, tmp_path / "b")
    a, b = Path(first.recipe.corpus), Path(second.recipe.corpus)
    assert a != b and a.read_bytes() == b.read_bytes() and b"=" in a.read_bytes()[:200]
    written = a.stat().st_mtime_ns
    again = claim_spec(claim, tmp_path / "a")
    assert a.stat().st_mtime_ns == written  # written once: a resumed claim finds its runs
    assert {r.run_id for r in make_plan(again).runs} == {r.run_id for r in make_plan(first).runs}


# --- a real run: its CPU time and the measures on its model --------------------------------


@pytest.fixture
def trained(write_audit) -> tuple[Path, Path]:
    path = write_audit(arms=[])
    run_dir = materialize(make_plan(load_audit(path)))[0]
    assert run_one(run_dir, RunOptions(threads=1)) == "done"
    return path, run_dir


def test_done_records_the_process_cpu_time(trained):
    _, run_dir = trained
    record = read_record(run_dir)
    assert record is not None and record.train[PROCESS_CPU] > 0.0


def test_the_measures_run_on_a_trained_model(trained):
    """Per seed (the audit's runs) and per text window (a model file), on a real model."""
    path, run_dir = trained
    spec = load_audit(path)
    sinks = Claim(name="s", title="t", paper="p", test="level", measure="sink_ratio",
                  band=(2.0, math.inf), tokens=64, window=16)  # fmt: skip
    sample = measure_units(sinks, spec)
    assert sample.unit == "seed" and len(sample.values) == 1 and sample.values[0] > 0
    assert sample.reference == 1.0
    head = Claim(name="h", title="t", paper="p", test="level", measure="suppressed_fraction",
                 band=(0.5, 1.0), model=str(run_dir), tokens=64, window=16)  # fmt: skip
    sample = measure_units(head, spec)
    assert sample.unit == "text window" and len(sample.values) == 4
    assert all(0.0 <= v <= 1.0 for v in sample.values)
    assert 0.0 < sample.reference < 1.0  # 1 − rank/V
    json.dumps(sample.to_json())


def test_the_pruning_measures_run_on_a_trained_two_layer_model(write_audit):
    scale = {"xs": {"d_model": 32, "n_layers": 2, "n_heads": 2, "context_length": 32}}
    path = write_audit(arms=[], scales=scale)
    run_dir = materialize(make_plan(load_audit(path)))[0]
    assert run_one(run_dir, RunOptions(threads=1)) == "done"
    spec = load_audit(path)
    for measure in ("vote_gain_lost", "vote_gain_lost_mean1", "tts_gain_lost"):
        claim = Claim(name="p", title="t", paper="p", test="level", measure=measure,
                      band=(0.0, math.inf), tokens=64, window=16, items=3, samples=2)  # fmt: skip
        sample = measure_units(claim, spec)
        assert sample.unit == "seed" and len(sample.values) == 1
        assert -1.0 <= sample.values[0] <= 1.0  # a difference of two gains in accuracy


def test_the_pruning_measures_sample_at_the_claims_temperature(write_audit, monkeypatch):
    import archaudit.diagnose.tts as tts

    scale = {"xs": {"d_model": 32, "n_layers": 2, "n_heads": 2, "context_length": 32}}
    path = write_audit(arms=[], scales=scale)
    run_dir = materialize(make_plan(load_audit(path)))[0]
    assert run_one(run_dir, RunOptions(threads=1)) == "done"
    seen: list[float] = []
    real = tts.tts_curves

    def spy(*args, **kwargs):
        seen.append(kwargs["temperature"])
        return real(*args, **kwargs)

    monkeypatch.setattr(tts, "tts_curves", spy)
    claim = Claim(name="p", title="t", paper="p", test="level", measure="vote_share_lost",
                  band=(0.0, math.inf), tokens=64, window=16, items=3, samples=2,
                  temperature=1.5)  # fmt: skip
    sample = measure_units(claim, load_audit(path))
    assert seen == [1.5, 1.5]  # the full model and the pruned one
    (value,) = sample.values
    assert math.isnan(value) or value <= 2.0  # a difference of two shares, each at most 1


def test_each_gain_reads_its_own_ends_of_the_curves():
    """Majority vote against the first sample, against the mean of all samples (pass@1), and
    the oracle's pass@N against pass@1: three different numbers from one set of curves."""
    curves = TTSCurves(model="m", items=10, temperature=1.0, samples=16, ns=[1, 16],
                       best_of_n=[0.3, 0.9], majority_vote=[0.2, 0.6], budgets=[0],
                       budget_accuracy=[0.0])  # fmt: skip
    assert vote_gain(curves) == pytest.approx(0.4)
    assert vote_gain_over_mean(curves) == pytest.approx(0.3)
    assert oracle_gain(curves) == pytest.approx(0.6)
    assert vote_share(curves) == pytest.approx(0.3 / 0.7)  # of the 0.7 it got wrong at N = 1


def test_the_share_is_a_gain_against_the_room_a_model_had():
    """Voting that takes one model from 0.9 to 1.0 and another from 0.2 to 0.3 gains both 0.1;
    the first fixed every error it had, the second one in eight. No errors: nothing to fix."""

    def curves(pass1: float, vote: float) -> TTSCurves:
        return TTSCurves(model="m", items=10, temperature=1.5, samples=16, ns=[1, 16],
                         best_of_n=[pass1, 1.0], majority_vote=[pass1, vote], budgets=[0],
                         budget_accuracy=[0.0])  # fmt: skip

    assert vote_gain_over_mean(curves(0.9, 1.0)) == pytest.approx(0.1)
    assert vote_gain_over_mean(curves(0.2, 0.3)) == pytest.approx(0.1)
    assert vote_share(curves(0.9, 1.0)) == pytest.approx(1.0)
    assert vote_share(curves(0.2, 0.3)) == pytest.approx(0.125)
    assert vote_share(curves(0.9, 0.8)) == pytest.approx(-1.0)  # voting made it worse
    assert math.isnan(vote_share(curves(1.0, 1.0)))


def test_a_unit_with_no_value_is_left_out_of_the_level_test():
    with_nan = level_test([0.5, math.nan, 0.6, 0.7], (0.0, math.inf), 0.05)
    without = level_test([0.5, 0.6, 0.7], (0.0, math.inf), 0.05)
    assert with_nan.n == 3 and with_nan.mean == pytest.approx(without.mean)
    assert with_nan.p == pytest.approx(without.p)


STORED = Path(__file__).resolve().parents[1] / "data" / "replications"
"""The values the level claims' confirming measurements stored (docs/replications.md)."""


@pytest.mark.parametrize(
    ("claim", "outcome"),
    [
        ("lm_head_bottleneck", Outcome.REPRODUCED),
        ("attention_sinks", Outcome.REPRODUCED),
        ("pruning_breaks_tts", Outcome.REPRODUCED),
    ],
)
def test_the_stored_confirming_measurements_judge_as_the_docs_say(tmp_path: Path, claim, outcome):
    found = get_claim(claim)
    spec = claim_spec(found, tmp_path / "runs", data_root=tmp_path)
    stored = STORED / f"{spec.name}-{claim}.json"
    path = sample_path(spec.audit_dir, claim)
    path.parent.mkdir(parents=True)
    path.write_text(stored.read_text())
    result = judge_claim(found, spec)
    assert result.outcome is outcome and result.evidence is not None
    assert result.evidence.design.startswith(("16 text windows", "4 seeds"))
    assert result.cpu_s > 0  # the measuring's process CPU time


def test_the_interaction_contrast_power_is_alpha_at_zero_and_grows():
    from archaudit.audit.replicating.replication import _contrast_seeds, contrast_power

    assert contrast_power(0.0, 1.0, 8, 0.05) == pytest.approx(0.05)
    assert contrast_power(1.0, 1.0, 8, 0.05) < contrast_power(3.0, 1.0, 8, 0.05) < 1.0
    assert contrast_power(1.0, 0.0, 8, 0.05) is None
    reach = _contrast_seeds(-0.04, 0.04, 4, 2, 0.05)  # the OlmPool pilot's shape
    assert reach.endswith("seeds per cell give 0.8 for the measured contrast")
    assert int(reach.split()[0]) > 2
