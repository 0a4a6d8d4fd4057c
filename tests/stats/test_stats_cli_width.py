"""At 80 columns (the width when output is piped) the `stats` tables keep every arm and metric
name whole, never chop a word, and keep the columns that carry the answer (issue 32 item 6).
Before, `stats decoupling` lost its arm and decoupled columns, `stats snr` printed "downstre /
am_avg" and `stats items` "qk_nor / m"."""

from __future__ import annotations

import json
import re

import pytest

from archaudit.cli.base.tables import fit

ARMS = ("qk_norm", "gated_attn_headwise", "softpick")
METRICS = ("downstream_avg", "hellaswag/score", "winogrande_debiased/score")


def results_rows() -> list[list[object]]:
    rows: list[list[object]] = [["arm", "scale", "seed", "metric", "value", "family"]]
    levels = {"baseline": 0.0, "qk_norm": 0.02, "gated_attn_headwise": -0.004, "softpick": 0.3}
    for arm, shift in levels.items():
        for seed, noise in enumerate((-0.01, 0.0, 0.012)):
            family = "attention-logits" if arm != "baseline" else "baseline"
            for metric, base, sign in (
                ("val_loss", 3.0, -1),
                ("downstream_avg", 0.5, 1),
                ("hellaswag/score", 0.4, 1),
                ("winogrande_debiased/score", 0.6, 1),
            ):
                value = base + sign * shift * (1 + seed / 10) + noise
                rows.append([arm, "d64", seed, metric, value, family])
    return rows


def items_rows() -> list[list[object]]:
    rows: list[list[object]] = [
        ["arm", "scale", "seed", "task", "item", "correct", "bpb", "margin"]
    ]
    for a, arm in enumerate(("baseline", *ARMS)):
        for seed in range(2):
            for item in range(40):
                correct = int((item * (seed + 2) + a) % 3 > 0)
                bpb = 1.0 + (item % 7) / 10 - 0.01 * a + 0.002 * seed
                rows.append([arm, "d64", seed, "hellaswag", item, correct, bpb, 0.1 * a])
    return rows


def assert_whole(out: str, names: tuple[str, ...], header: tuple[str, ...]) -> None:
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    words = set(out.split())
    for name in names:
        assert name in words, f"{name!r} is chopped or missing:\n{out}"
    header_line = next(line for line in lines if line.lstrip().startswith(header[0]))
    for column in header:
        assert re.search(rf"(^|\s){re.escape(column)}(\s|$)", header_line), (column, out)


@pytest.mark.parametrize("columns", [80, 200])
def test_decoupling_keeps_arm_and_decoupled_columns(cli, write_csv, columns):
    path = write_csv(results_rows())
    code, out, _ = cli(f"stats decoupling {path}", columns=columns)
    assert code == 0, out
    verdicts = json.loads(cli(f"stats decoupling {path} --json")[1])["arms"]
    labels = {a[side] for a in verdicts for side in ("loss_verdict", "downstream_verdict")}
    assert "within-noise" in labels  # the longest words are there to be chopped
    if columns == 80:
        # each verdict whole, even when a comma follows it ("within-noise, flat")
        words = {word.strip(",") for word in out.split()}
        assert labels <= words, out
        assert_whole(out, ARMS, ("arm", "loss", "downstream", "decoupled"))
        assert "left out at 80 columns" in out
    else:
        assert "left out" not in out and "family" in out


def test_snr_keeps_metric_names_whole(cli, write_csv):
    path = write_csv(results_rows())
    code, out, _ = cli(f"stats snr {path}", columns=80)
    assert code == 0, out
    assert_whole(out, ("val_loss", *METRICS), ("metric", "scale", "σ", "SNR"))


@pytest.mark.parametrize("measure", ["correct", "bpb"])
def test_items_keep_arm_names_whole(cli, write_csv, measure):
    path = write_csv(items_rows(), name="items.csv")
    code, out, _ = cli(f"stats items {path} --scale d64 --measure {measure} --n-boot 50", 80)
    assert code == 0, out
    assert_whole(out, ARMS, ("arm",))
    assert "qk_nor" not in out.replace("qk_norm", "")


def test_items_say_they_test_the_checkpoints_not_the_seeds(cli, write_csv):
    path = write_csv(items_rows(), name="items.csv")
    code, out, _ = cli(f"stats items {path} --scale d64 --measure bpb --n-boot 50", 200)
    assert code == 0
    assert "items of these checkpoints" in out
    assert "not the seeds" in out and "seed-level verdict" in out


def test_fit_keeps_names_whole_and_drops_optional_columns_in_order():
    columns = ("arm", "family", "verdict", "z")
    cells = [["gated_attn_headwise", "attention-logits", "nominal-improver", "-0.0596"]]
    wide = fit(columns, cells, 200, optional=("family", "z"))
    assert wide.kept == (0, 1, 2, 3) and wide.dropped == ()
    narrow = fit(columns, cells, 48, optional=("family", "z"))
    assert narrow.dropped == ("family",) and narrow.kept == (0, 2, 3)
    assert narrow.widths[0] == len("gated_attn_headwise")
    assert sum(narrow.widths) + 2 * (len(narrow.kept) - 1) <= 48
    assert narrow.widths[1] >= len("nominal-improver")  # a word is never cut
    # an optional column this table lacks (the verdicts' "paper's rule" outside paper mode)
    absent = fit(columns, cells, 48, optional=("paper's rule", "family", "z"))
    assert absent == narrow


def test_transfer_prints_not_estimable_instead_of_a_rho(cli, write_csv):
    """Arms within noise of each other at both scales: ρ's interval is all of [−1, 1], so the
    title says "not estimable" (it printed "Spearman ρ = 0 [—, —]")."""
    rows: list[list[object]] = [["arm", "scale", "seed", "metric", "value"]]
    for scale in ("d48", "d64"):
        for a, arm in enumerate(("baseline", "a", "b", "c")):
            for seed, noise in enumerate((-0.01, 0.0, 0.01)):
                rows.append([arm, scale, seed, "val_loss", 3.0 + noise + 0.001 * ((a * 7) % 3)])
    path = write_csv(rows)
    code, out, _ = cli(f"stats transfer {path} --metric val_loss", 80)
    assert code == 0, out
    assert "Spearman ρ not estimable" in out and "Spearman ρ =" not in out
