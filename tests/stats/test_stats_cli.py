"""`archaudit stats ...` and `archaudit simulate-null` through the real entry point."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from archaudit.cli import main, stats_cmd  # noqa: F401  (registers the commands)
from archaudit.stats import (
    AuditDesign,
    Design,
    cross_scale_transfer,
    decoupling,
    interactions,
    judge,
    load_table,
    minimum_detectable_effect,
    seeds_needed,
    simulate_null,
)
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.simulation.calibrate import design_level
from archaudit.stats.simulation.design_rate import arm_mde

HEADER = ["arm", "scale", "seed", "metric", "value", "family", "duties"]
LEVELS = {"baseline": 0.50, "qk": 0.56, "gqa": 0.44, "qk+gqa": 0.52, "wide": 0.70}


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `archaudit <command line>` through main(); return (exit code, stdout, stderr)."""

    def run(command: str, columns: int = 200) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
        monkeypatch.setenv("COLUMNS", str(columns))
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
                duties = "downstream" if arm == "gqa" else "cross_scale"
                rows.append([arm, scale, seed, "acc", level + shift + noise, family, duties])
                rows.append([arm, scale, seed, "val_loss", 3.0 - level + noise, family, duties])
    return write_csv(rows)


def test_verdicts_json_is_the_library_judgement(cli, results):
    options = "--metric acc --scale d6 --correction bonferroni --json"
    code, out, _ = cli(f"stats {results} {options}")
    assert code == 0
    expected = judge(load_table(results), "acc", JudgeOptions(scale="d6", correction="bonferroni"))
    assert json.loads(out) == json.loads(expected.to_json())
    assert cli(f"stats verdicts {results} {options}")[1] == out


def test_verdicts_table(cli, results):
    code, out, _ = cli(f"stats --metric val_loss {results} --lower-is-better --scale d12")
    assert code == 0
    assert "improver" in out and "qk+gqa" in out
    assert "Δ > 0 means better" in out
    assert "design's measured family-wise error rate" in out and "MDE" in out
    assert "calibrated" in out and "UNCALIBRATED" not in out
    assert "no effect larger than" in out
    assert "R6" in out  # gqa owes the downstream duty and is judged on a loss


def test_user_errors_are_one_line_with_exit_code_2(cli, results):
    code, _, err = cli(f"stats {results} --metric acc --scale d6 --baseline basline")
    assert code == 2
    assert err.startswith("error: ") and "did you mean 'baseline'" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli(f"stats {results} --metric acc")
    assert code == 2 and "--scale" in err


def test_simulate_null(cli):
    options = "--n-arms 6 --seeds 2 --audits 40 --effect 3 --effect-arms 1"
    code, out, _ = cli(f"simulate-null {options} --json")
    assert code == 0
    expected = simulate_null(AuditDesign.balanced(6, 2), audits=40, effect=3.0, effect_arms=1)
    assert json.loads(out) == expected.to_dict()
    text = cli(f"simulate-null {options}")[1]
    assert "family-wise false-positive rate" in text and "power formula" in text


def test_power(cli, results):
    code, out, _ = cli("stats power --seeds 3 --n-arms 19 --effect 3 --json")
    data = json.loads(out)
    assert code == 0
    # the MDE at the design's calibrated levels (arm_mde averages them), not the formula at α
    design = AuditDesign((3,) * 19, 3)
    assert data["level"] == pytest.approx(design_level(design))
    assert data["mde_sigmas"] == pytest.approx(arm_mde(design, 3))
    nominal = minimum_detectable_effect(Design(arm_seeds=3, baseline_seeds=3, n_arms=19))
    assert data["mde_sigmas"] >= nominal
    assert data["seeds_needed"] >= 3
    code, out, _ = cli(f"stats power {results} --metric acc --scale d6 --json")
    assert code == 0
    assert {a["arm"] for a in json.loads(out)["arms"]} == set(LEVELS) - {"baseline"}


def test_other_analyses_print_the_library_results(cli, results):
    table = load_table(results)
    cases = [
        ("transfer --metric acc", cross_scale_transfer(table, "acc")),
        (
            "interactions --metric acc --scale d6",
            interactions(table, "acc", JudgeOptions(scale="d6")),
        ),
        (
            "decoupling --downstream-metric acc --scale d6",
            decoupling(table, JudgeOptions(scale="d6"), downstream_metric="acc"),
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
    # an items.csv without the measure columns: one line naming the missing one, exit 2
    code, out, err = cli(f"stats items {path} --scale s --measure bpb")
    assert code == 2 and "no column 'bpb'" in err and len(err.strip().splitlines()) == 1


def test_items_on_bpb(cli, write_csv):
    rows = [["arm", "scale", "seed", "task", "item", "correct", "bpb", "margin"]]
    rows += [
        [arm, "s", seed, "t", item, 1, 1.0 + (item % 7) / 10 - 0.05 * (arm == "x"), ""]
        for arm in ("baseline", "x")
        for seed in range(2)
        for item in range(30)
    ]
    path = write_csv(rows, name="items.csv")
    code, out, _ = cli(f"stats items {path} --scale s --measure bpb --n-boot 100 --json")
    assert code == 0
    (result,) = json.loads(out)
    assert result["measure"] == "bpb" and result["difference"]["difference"] == pytest.approx(0.05)
    code, out, _ = cli(f"stats items {path} --scale s --measure bpb --n-boot 100")
    assert code == 0 and "lower is better" in out


PUBLISHED = Path(__file__).with_name("data") / "published_reaudit.csv"


def test_paper_mode_is_labelled_uncalibrated_everywhere(cli):
    options = "--metric val_loss --reference normal --correction bonferroni"
    code, out, _ = cli(f"stats {PUBLISHED} {options}")
    assert code == 0
    assert "UNCALIBRATED" in out and "ABOVE α" in out
    data = json.loads(cli(f"stats {PUBLISHED} {options} --json")[1])
    assert data["reference"] == "normal" and data["calibrated"] is False
    assert data["design_above_alpha"] is True


def test_80_column_tables_never_split_a_number(cli):
    # Defect: rich folded "7.81e-06" into "7.81e-0" / "6" at 80 columns.
    options = "--metric val_loss --reference normal --correction bonferroni"
    code, out, _ = cli(f"stats {PUBLISHED} {options}", columns=80)
    assert code == 0
    softpick = next(line for line in out.splitlines() if line.startswith("softpick"))
    assert "7.82e-06" in softpick and "0.000149" in softpick
    assert "nominal-improver" in out  # verdicts are whole too
    assert not any(re.search(r"e-0?$", line.rstrip()) for line in out.splitlines())


def test_p_below_the_float_range_is_printed_as_a_bound(cli, write_csv):
    # Defect: a p that underflows to 0 printed as "0".
    rows = [["arm", "scale", "seed", "metric", "value"]]
    rows += [["baseline", "s", seed, "acc", 0.5 + 0.001 * (seed - 1)] for seed in range(3)]
    rows += [["huge", "s", 0, "acc", 50.0]]
    path = write_csv(rows)
    code, out, _ = cli(f"stats {path} --metric acc --reference normal")
    huge = next(line for line in out.splitlines() if line.startswith("huge"))
    assert code == 0 and huge.count("< 1e-300") == 2
    assert (
        json.loads(cli(f"stats {path} --metric acc --reference normal --json")[1])["arms"][0]["p"]
        == 0.0
    )


def test_simulate_null_with_one_seed_uses_the_baseline_it_says(cli):
    # Defect: --seeds 1 silently used a 2-seed baseline while the help said "as many as --seeds".
    code, out, _ = cli("simulate-null --n-arms 19 --seeds 1 --audits 200 --json")
    assert code == 0 and json.loads(out)["baseline_seeds"] == 3
    text = cli("simulate-null --n-arms 19 --seeds 1 --audits 200")[1]
    assert "baseline 3 seeds" in text
    assert "at least 3" in cli("simulate-null --help")[1]


def test_simulate_null_paper_mode_and_designs_like_a_file(cli, results, tmp_path):
    code, out, _ = cli("simulate-null --n-arms 19 --seeds 1 --baseline-seeds 3 --reference normal")
    assert code == 0 and "UNCALIBRATED" in out and "ABOVE α" in out
    data = json.loads(cli(f"simulate-null --like {PUBLISHED} --audits 300 --json")[1])
    assert data["design"]["arm_seeds"] == [1] * 19 and data["baseline_seeds"] == 3
    assert data["test"] == "robust"
    data = json.loads(cli(f"simulate-null --like {results} --scale d6 --audits 300 --json")[1])
    assert data["design"]["arm_seeds"] == [3] * 4 and data["test"] == "welch"
    fixed = tmp_path / "fixed.toml"
    demo = Path(__file__).parents[2] / "src" / "archaudit" / "audit" / "execute" / "demo.toml"
    text = demo.read_text().replace('policy = "sequential"', 'policy = "fixed"')
    fixed.write_text(text.replace("arms = 1 ", "arms = 2 "))
    code, out, err = cli(f"simulate-null --like {fixed} --equal-variance --audits 300 --json")
    assert code == 0, err
    expected = AuditDesign(arm_seeds=(2,) * 4, baseline_seeds=3, equal_variance=True)
    assert json.loads(out)["design"] == expected.to_dict()
    # The demo itself is sequential: --like simulates its closed loop, not its first round.
    code, out, err = cli(f"simulate-null --like {demo} --audits 300 --json")
    looped = json.loads(out)
    assert code == 0 and (looped["arms"], looped["max_seeds"], looped["baseline_seeds"]) == (
        4,
        3,
        3,
    )


def test_every_family_command_takes_exclude_and_arms(cli, results):
    base = f"{results} --scale d6"
    verdicts = json.loads(cli(f"stats {base} --metric acc --exclude wide --json")[1])
    assert {a["arm"] for a in verdicts["arms"]} == {"qk", "gqa", "qk+gqa"}
    assert verdicts["m"] == 3 and "wide" in verdicts["excluded"]
    chosen = json.loads(cli(f"stats {base} --metric acc --arms qk,gqa --json")[1])
    assert [a["arm"] for a in chosen["arms"]] == ["qk", "gqa"]
    decoupled = json.loads(
        cli(f"stats decoupling {base} --downstream-metric acc --arms qk --json")[1]
    )
    assert [a["arm"] for a in decoupled["arms"]] == ["qk"]
    inter = json.loads(cli(f"stats interactions {base} --metric acc --exclude wide --json")[1])
    assert "wide" not in {c["arm"] for c in inter["combinations"]}
    moved = json.loads(cli(f"stats transfer {results} --metric acc --exclude gqa --json")[1])
    assert "gqa" not in {a["arm"] for a in moved["arms"]}
    advice = json.loads(cli(f"stats power {base} --metric acc --arms qk --json")[1])
    assert [a["arm"] for a in advice["arms"]] == ["qk"]
    code, _, err = cli(f"stats {base} --metric acc --exclude wdie")
    assert code == 2 and "did you mean 'wide'" in err


def test_every_judging_command_pools_an_anchor(cli, results):
    """Issue 56 item 5: `--anchor` (a `JudgeOptions` field) is a flag of every command that
    judges a family, not of `stats verdicts` alone, and reaches the family each judges (whose
    check names a misspelled anchor)."""
    base = f"{results} --scale d6"
    verdicts = json.loads(cli(f"stats {base} --metric acc --anchor wide --json")[1])
    assert verdicts["anchors"] == ["wide"]
    for command in (
        f"stats {base} --metric acc",
        f"stats interactions {base} --metric acc",
        f"stats transfer {results} --metric acc",
        f"stats decoupling {base} --downstream-metric acc",
        f"stats power {base} --metric acc",
    ):
        code, _, err = cli(f"{command} --anchor wide --json")
        assert code == 0, (command, err)
        code, _, err = cli(f"{command} --anchor wdie")
        assert code == 2 and "did you mean 'wide'" in err, (command, err)
    code, _, err = cli("stats power --anchor wide")
    assert code == 2 and "--anchor wide: arm names need SOURCE" in err, err
    code, _, err = cli(f"stats decoupling {base} --lower-is-better")
    assert code == 2 and "each in its own direction" in err, err


def test_the_analyses_take_their_family_and_test_from_the_options(cli, results):
    """transfer, interactions and aggregate read one JudgeOptions built from their flags."""
    code, _, err = cli(f"stats transfer {results} --metric acc --scale d6")
    assert code == 2 and "--from" in err  # cross-scale transfer compares two scales
    base = f"{results} --metric acc --scale d6"
    code, _, err = cli(f"stats interactions {base} --correction dunnett")
    assert code == 2 and "dunnett does not apply" in err
    bonferroni = json.loads(cli(f"stats interactions {base} --correction bonferroni --json")[1])
    expected = interactions(
        load_table(results), "acc", JudgeOptions(scale="d6", correction="bonferroni")
    )
    assert bonferroni == json.loads(expected.to_json())
    pooled = json.loads(cli(f"stats aggregate {results} --scale d6 --exclude wide --json")[1])
    assert {a["arm"] for a in pooled["arms"]} == set(LEVELS) - {"wide"}


@pytest.mark.parametrize("command", ["simulate-null --arms 19", "stats power --arms 19 --seeds 3"])
def test_a_count_under_arms_is_refused_pointing_to_n_arms(cli, command):
    # --arms names arms on every command; the count these two took is --n-arms now.
    code, out, err = cli(command)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and "--n-arms 19" in err


def test_arm_names_without_a_table_are_refused(cli):
    code, _, err = cli("stats power --arms qk --seeds 3")
    assert code == 2 and "need SOURCE" in err and "--n-arms" in err


def test_simulate_null_like_a_table_takes_the_family_of_arms_and_exclude(cli, results):
    line = f"simulate-null --like {results} --scale d6 --audits 50 --json"
    chosen = json.loads(cli(f"{line} --arms qk,gqa")[1])
    assert chosen["design"]["arm_seeds"] == [3, 3]
    left = json.loads(cli(f"{line} --exclude wide")[1])
    assert left["design"]["arm_seeds"] == [3, 3, 3]


def test_power_counts_seeds_under_the_reference_of_its_mde(cli):
    # Defect: `stats power --reference normal` quoted the z-test's MDE but counted the seeds an
    # effect needs under the t reference (5 instead of 2 for 4σ over 19 arms).
    data = json.loads(cli("stats power --n-arms 19 --effect 4 --reference normal --json")[1])
    paper = JudgeOptions(reference="normal")
    assert data["design"]["reference"] == "normal"
    assert data["seeds_needed"] == seeds_needed(4.0, paper, n_arms=19) == 2
    assert seeds_needed(4.0, n_arms=19) > data["seeds_needed"]


def test_decoupling_judges_the_family_its_options_name(cli, results):
    line = f"stats decoupling {results} --scale d6 --downstream-metric acc --json"
    left = json.loads(cli(f"{line} --exclude wide --exclude gqa")[1])
    expected = decoupling(
        load_table(results),
        JudgeOptions(scale="d6", exclude=("wide", "gqa")),
        downstream_metric="acc",
    )
    assert left == json.loads(expected.to_json())
    assert [a["arm"] for a in left["arms"]] == ["qk", "qk+gqa"]


def test_arms_names_arms_and_n_arms_counts_them_on_every_command():
    # One meaning per flag: `--arms` is a repeatable list of names wherever it appears, and a
    # number of arms is always `--n-arms`.
    import typer.main

    from archaudit.cli import app, register_commands

    register_commands()

    def leaves(command):
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            yield command
        for sub in (subcommands or {}).values():
            yield from leaves(sub)

    repeatable: dict[str, set[bool]] = {"--arms": set(), "--n-arms": set()}
    for command in leaves(typer.main.get_command(app)):
        for param in command.params:
            for flag in repeatable:
                if flag in getattr(param, "opts", ()):
                    repeatable[flag].add(param.multiple)
    assert repeatable == {"--arms": {True}, "--n-arms": {False}}


def test_a_wide_table_is_told_to_be_long(cli, tmp_path):
    """Issue 46: `model,seed,acc` was refused without saying that the table must be long."""
    wide = tmp_path / "wide.csv"
    wide.write_text("model,seed,acc\na,0,0.5\n")
    code, _, err = cli(f"stats {wide} --metric acc")
    assert code == 2 and "the table must be long" in err and "melt" in err


def test_stats_help_lists_the_default_tables_options(cli):
    """Issue 46: `stats --help` listed only the sub-commands; `stats SOURCE` is `verdicts`."""
    code, out, _ = cli("stats --help")
    assert code == 0
    assert "stats verdicts SOURCE" in out
    for flag in ("--metric", "--correction", "--alpha", "--scale", "--json"):
        assert flag in out, flag
