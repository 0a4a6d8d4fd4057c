"""`archaudit stats ...` and `archaudit simulate-null` through the real entry point."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from archaudit.cli import main, stats_cmd  # noqa: F401  (registers the commands)
from archaudit.stats import (
    Design,
    cross_scale_transfer,
    decoupling,
    interactions,
    judge,
    load_table,
    minimum_detectable_effect,
    simulate_null,
)

HEADER = ["arm", "scale", "seed", "metric", "value", "family"]
LEVELS = {"baseline": 0.50, "qk": 0.56, "gqa": 0.44, "qk+gqa": 0.52, "wide": 0.70}


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `archaudit <command line>` through main(); return (exit code, stdout, stderr)."""

    def run(command: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
        monkeypatch.setenv("COLUMNS", "200")
        with pytest.raises(SystemExit) as exit_:
            main()
        captured = capsys.readouterr()
        return exit_.value.code or 0, captured.out, captured.err

    return run


@pytest.fixture
def results(write_csv):
    rows = [HEADER]
    for arm, level in LEVELS.items():
        for scale, shift in (("d6", 0.0), ("d12", 0.05)):
            for seed, noise in enumerate((-0.01, 0.0, 0.012)):
                family = "attention-output" if arm == "gqa" else "norm"
                rows.append([arm, scale, seed, "acc", level + shift + noise, family])
                rows.append([arm, scale, seed, "val_loss", 3.0 - level + noise, family])
    return write_csv(rows)


def test_verdicts_json_is_the_library_judgement(cli, results):
    options = "--metric acc --scale d6 --correction bonferroni --json"
    code, out, _ = cli(f"stats {results} {options}")
    assert code == 0
    expected = judge(load_table(results), "acc", scale="d6", correction="bonferroni")
    assert json.loads(out) == json.loads(expected.to_json())
    assert cli(f"stats verdicts {results} {options}")[1] == out


def test_verdicts_table(cli, results):
    code, out, _ = cli(f"stats --metric val_loss {results} --lower-is-better --scale d12")
    assert code == 0
    assert "improver" in out and "qk+gqa" in out
    assert "no effect larger than" in out
    assert "R6" in out  # gqa is an attention-output arm judged on a loss


def test_user_errors_are_one_line_with_exit_code_2(cli, results):
    code, _, err = cli(f"stats {results} --metric acc --scale d6 --baseline basline")
    assert code == 2
    assert err.startswith("error: ") and "did you mean 'baseline'" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli(f"stats {results} --metric acc")
    assert code == 2 and "--scale" in err


def test_simulate_null(cli):
    options = "--arms 6 --seeds 2 --audits 40 --effect 3 --effect-arms 1"
    code, out, _ = cli(f"simulate-null {options} --json")
    assert code == 0
    expected = simulate_null(arms=6, seeds=2, audits=40, effect=3.0, effect_arms=1)
    assert json.loads(out) == expected.to_dict()
    text = cli(f"simulate-null {options}")[1]
    assert "family-wise false-positive rate" in text and "power formula" in text


def test_power(cli, results):
    code, out, _ = cli("stats power --seeds 3 --arms 19 --effect 3 --json")
    data = json.loads(out)
    assert code == 0
    assert data["mde_sigmas"] == pytest.approx(
        minimum_detectable_effect(Design(arm_seeds=3, baseline_seeds=3, arms=19))
    )
    assert data["seeds_needed"] >= 3
    code, out, _ = cli(f"stats power {results} --metric acc --scale d6 --json")
    assert code == 0
    assert {a["arm"] for a in json.loads(out)["arms"]} == set(LEVELS) - {"baseline"}


def test_other_analyses_print_the_library_results(cli, results):
    table = load_table(results)
    cases = [
        ("transfer --metric acc --n-boot 50", cross_scale_transfer(table, "acc", n_boot=50)),
        ("interactions --metric acc --scale d6", interactions(table, "acc", scale="d6")),
        (
            "decoupling --downstream-metric acc --scale d6",
            decoupling(table, downstream_metric="acc", scale="d6"),
        ),
    ]
    for command, expected in cases:
        name, options = command.split(" ", 1)
        code, out, _ = cli(f"stats {name} {results} {options} --json")
        assert code == 0, command
        assert json.loads(out) == json.loads(expected.to_json()), command
        code, text, _ = cli(f"stats {name} {results} {options}")
        assert code == 0 and "qk" in text, command


def test_transfer_across_baselines(cli, results):
    options = "--metric acc --baseline baseline --baseline wide --scale d6 --json"
    code, out, _ = cli(f"stats transfer {results} {options}")
    assert code == 0
    assert json.loads(out)["baselines"] == ["baseline", "wide"]


def test_items(cli, write_csv):
    rows = [["arm", "scale", "seed", "task", "item", "correct"]]
    rows += [
        [arm, "s", seed, "t", item, int((item * (seed + 2) + len(arm)) % 3 > 0)]
        for arm in ("baseline", "x")
        for seed in range(2)
        for item in range(60)
    ]
    path = write_csv(rows, name="items.csv")
    code, out, _ = cli(f"stats items {path} --scale s --n-boot 100 --json")
    assert code == 0
    assert json.loads(out)[0]["n_items"] == 60
