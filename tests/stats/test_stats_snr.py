"""Signal-to-noise per metric (`archaudit stats snr`): σ, spread, SNR and seeds needed."""

from __future__ import annotations

import csv
import json
import math
import shlex
import sys
from pathlib import Path

import pytest

from archaudit.cli import main
from archaudit.stats.analyses.snr import SELECTION_WARNING, signal_to_noise
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.errors import TableError
from archaudit.stats.records.table import Row, Table
from archaudit.stats.simulation.power import seeds_needed

VALUES = {
    # metric: {arm: seeds}; σ = 1 for "clear", 0.1 for "fine", 3 for "noisy"
    "clear": {"baseline": [1.0, 2.0, 3.0], "a": [4.0, 5.0, 6.0], "b": [7.0, 8.0, 9.0]},
    "noisy": {"baseline": [0.0, 3.0, 6.0], "a": [1.0, 4.0, 7.0], "b": [0.0, 3.0, 6.0]},
    "single": {"baseline": [1.0], "a": [2.0], "b": [3.0]},
}


def _table(scales: tuple[str, ...] = ("s",)) -> Table:
    rows = [
        Row(arm, scale, seed, metric, value + 10 * k)
        for k, scale in enumerate(scales)
        for metric, arms in VALUES.items()
        for arm, values in arms.items()
        for seed, value in enumerate(values)
    ]
    return Table(tuple(rows), source="t.csv")


def test_snr_is_the_spread_of_arm_means_over_seed_sigma():
    result = signal_to_noise(_table())
    clear = next(m for m in result.metrics if m.metric == "clear")
    assert clear.sigma == pytest.approx(1.0) and clear.sigma_dof == 6
    assert clear.spread == pytest.approx(3.0)  # stdev of the means 2, 5, 8
    assert clear.snr == pytest.approx(3.0) and clear.range == pytest.approx(6.0)
    assert clear.null_snr == pytest.approx(1 / math.sqrt(3))
    assert clear.effects == pytest.approx({"a": 3.0, "b": 6.0})
    needed = {"a": seeds_needed(3.0, n_arms=2), "b": seeds_needed(6.0, n_arms=2)}
    assert clear.seeds_needed == needed
    assert clear.median_effect == pytest.approx(4.5) and clear.largest_effect == pytest.approx(6.0)
    assert clear.seeds_for_largest_effect == seeds_needed(6.0, n_arms=2)
    noisy = next(m for m in result.metrics if m.metric == "noisy")
    assert noisy.sigma == pytest.approx(3.0) and noisy.snr < noisy.null_snr
    assert noisy.seeds_for_largest_effect is None  # 1/3 σ: never declared (under 2σ)
    assert [m.metric for m in result.metrics] == ["clear", "noisy"]  # most informative first
    assert result.warning == SELECTION_WARNING


def test_snr_names_the_spread_of_the_baseline_across_scales():
    result = signal_to_noise(_table(("s", "m")), metrics=["clear"])
    assert {m.scale for m in result.metrics} == {"s", "m"}
    assert all(m.scale_spread == pytest.approx(math.sqrt(50)) for m in result.metrics)


def test_snr_needs_seed_noise():
    with pytest.raises(TableError, match="two or more seeds"):
        signal_to_noise(_table(), metrics=["single"])


def test_snr_command(tmp_path: Path, monkeypatch, capsys):
    path = tmp_path / "results.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["arm", "scale", "seed", "metric", "value"])
        writer.writerows((r.arm, r.scale, r.seed, r.metric, r.value) for r in _table().rows)

    def run(command: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
        monkeypatch.setenv("COLUMNS", "200")
        with pytest.raises(SystemExit) as exit_:
            main()
        out = capsys.readouterr()
        return exit_.value.code or 0, out.out, out.err

    code, out, _ = run(f"stats snr {path}")
    assert code == 0 and "clear" in out and "selection" in out
    code, out, _ = run(f"stats snr {path} --json --metric clear")
    assert code == 0 and json.loads(out)["metrics"][0]["snr"] == pytest.approx(3.0)
    code, out, _ = run(f"stats snr {path} --json --metric clear --alpha 0.001")
    expected = signal_to_noise(_table(), JudgeOptions(alpha=0.001), metrics=["clear"])
    assert json.loads(out)["metrics"] == json.loads(expected.to_json())["metrics"]
    code, _, err = run(f"stats snr {path} --metric clearr")
    assert code == 2 and "clear" in err and "Traceback" not in err


def test_snr_leaves_out_tasks_without_signal_as_verdicts_do():
    from test_stats_signal import _audit

    result = signal_to_noise(_audit(recall_at_chance=True), metrics=None)
    assert "recall/score" not in {m.metric for m in result.metrics}
    assert any("recall" in note for note in result.notes)


def test_the_seeds_needed_follow_the_options_test():
    """The seeds each effect needs are planned for the options' correction and α."""
    holm = signal_to_noise(_table(), metrics=["clear"]).metrics[0]
    strict = signal_to_noise(
        _table(), JudgeOptions(alpha=0.001, correction="bonferroni"), metrics=["clear"]
    ).metrics[0]
    assert holm.seeds_needed == {
        arm: seeds_needed(effect, n_arms=2) for arm, effect in holm.effects.items()
    }
    assert strict.seeds_needed == {
        arm: seeds_needed(effect, JudgeOptions(alpha=0.001, correction="bonferroni"), n_arms=2)
        for arm, effect in strict.effects.items()
    }
    assert strict.seeds_needed["a"] > holm.seeds_needed["a"]
