"""`archaudit stats predict AUDIT`: the ladder from the audit file's scales and [target], the
per-arm table, the backtest lines, and errors that teach."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from predict_helpers import PARAMS, TARGET, constant, log_linear, table, write_csv

from archaudit.stats.records.table import Table

AUDIT = """name = "lad"
arms = ["qk_norm", "post_ln", "gelu_mlp"]
[eval]
suite = ""
[recipe]
batch_tokens = 1024
{target}
"""
WIDTHS = (16, 24, 32, 48)
STORED = Path(__file__).parent / "data" / "ladder" / "ladder.toml"


def audit_file(root: Path, target: str = "[target]\nparams = 5e5", widths=WIDTHS) -> Path:
    """An audit with widths at 2 layers, tokens ∝ √N, and results with known effects."""
    text = AUDIT.format(target=target)
    for width in widths:
        tokens = round(100 * width**1.0) * 1024
        text += f"[scales.d{width}]\nd_model = {width}\nn_layers = 2\nn_heads = 4\n"
        text += f"context_length = 64\ntokens = {tokens}\n"
    path = root / "audit.toml"
    path.write_text(text)
    truth = {"qk_norm": constant(-0.05), "post_ln": log_linear(0.2, -0.05),
             "gelu_mlp": constant(0.03)}  # fmt: skip
    params = [1.5e4, 2.6e4, 4.3e4, 8.0e4][: len(widths)]
    rows = table(truth, params=params, sigma=0.004, names=[f"d{w}" for w in widths])
    write_csv(rows, root / "runs" / "lad" / "results.csv")
    return path


def test_predict_prints_the_table_and_the_backtests(cli, tmp_path):
    code, out, err = cli(f"stats predict {audit_file(tmp_path)} --metric val_loss --n-boot 300")
    assert code == 0, err
    assert "at target target (500,000 parameters" in out and "from 4 scales" in out
    for arm in ("qk_norm", "post_ln", "gelu_mlp"):
        assert arm in out
    assert out.count("backtest of ") >= 3 and "single-scale baseline: signs" in out


def test_predict_json_has_a_record_per_arm(cli, tmp_path):
    path = audit_file(tmp_path)
    code, out, err = cli(f"stats predict {path} --json --n-boot 200 --target small")
    assert code == 0, err
    result = json.loads(out)
    assert result["ladder"]["target"]["name"] == "small"
    assert {a["arm"] for a in result["arms"]} == {"qk_norm", "post_ln", "gelu_mlp"}
    assert len(result["candidates"]) == 3


def test_two_scales_print_not_estimable(cli, tmp_path):
    path = audit_file(tmp_path, widths=WIDTHS[:2])
    code, out, err = cli(f"stats predict {path} --n-boot 200")
    assert code == 0, err
    assert "not estimable" in out and "too few scales: 2 trained" in out


def test_errors_teach(cli, tmp_path):
    path = audit_file(tmp_path, target="")
    code, _, err = cli(f"stats predict {path}")
    assert code == 2 and "no target scale: add a [target] table" in err
    path = audit_file(tmp_path, target='[target]\npreset = "bsae"')
    code, _, err = cli(f"stats predict {path}")
    assert code == 2 and "target.preset = 'bsae' (did you mean 'base'?)" in err
    path = audit_file(tmp_path, target="[target]\nparams = 1e6\ntokens = 1e3")
    code, _, err = cli(f"stats predict {path}")
    assert code == 2 and "target 'target' trains 1,000 tokens" in err and "Traceback" not in err
    path = audit_file(tmp_path, target='[target]\npreset = "base"\nparams = 1e6')
    code, _, err = cli(f"stats predict {path}")
    assert code == 2 and "give exactly one of preset" in err


def test_the_stored_ladder_is_predicted_and_backtested(cli):
    """The real ladder of benchmarks/ladder.py (tinyshakespeare, 5 widths, 6 arms, 3 seeds)."""
    code, out, err = cli(f"stats predict {STORED} --n-boot 400")
    assert code == 0, err
    assert "from 5 scales (d64" in out and "at target d128 (467,584 parameters" in out
    for arm in ("post_ln", "qk_norm", "gelu_mlp", "softpick", "z_loss"):
        assert arm in out
    assert out.count("backtest of ") >= 3 and "d32, d48, d64 each predicted" in out


def test_the_verdict_table_gets_a_line_at_the_target(cli, tmp_path, capsys):
    """`stats` renders the findings record's prediction (issue 42 item 5), computed once."""
    from archaudit.audit.results.findings import findings
    from archaudit.audit.results.findings_record import Analysis, Asked
    from archaudit.cli.stats.at_target import print_at_target
    from archaudit.formatting import interval

    path = audit_file(tmp_path)
    code, out, err = cli(f"stats {path} --metric val_loss --scale d48")
    assert code == 0, err
    out = " ".join(out.split())  # the console wraps long lines
    assert "- at target target (" in out and "`stats predict` for the backtest" in out
    assert "intervals held" in out  # the coverage its intervals earned
    asked = Asked(frozenset({Analysis.VERDICTS, Analysis.TARGET}))
    record = findings(path, ("val_loss",), asked=asked)
    assert record.prediction is not None
    for arm in record.prediction.arms:
        assert f"{arm.arm} Δ̂ " in out and " ".join(interval(arm.interval).split()) in out
    capsys.readouterr()
    print_at_target(record.prediction, "train_loss")  # under another metric's table: nothing
    assert capsys.readouterr().out == ""
    code, out, err = cli(f"stats {audit_file(tmp_path, target='')} --metric val_loss --scale d48")
    assert code == 0, err
    assert "at target" not in out  # no [target]: nothing


BAD_OPTIONS = [
    ("--confidence 1", "'1' for '--confidence': 1.0 is not a number in (0, 1)"),
    ("--confidence 0", "'0' for '--confidence': 0.0 is not a number in (0, 1)"),
    ("--confidence 1.5", "'1.5' for '--confidence'"),
    ("--confidence nan", "'nan' for '--confidence'"),
    ("--n-boot 0", "'0' for '--n-boot': 0 is not a number in [1, 100000]"),
    ("--n-boot -1", "'-1' for '--n-boot'"),
    ("--n-boot 1000000000", "'1000000000' for '--n-boot'"),
    ("--seed -1", "'-1' for '--seed': -1 is not a finite number >= 0"),
    ("--baseline nobody", "--baseline 'nobody' is not an arm of the table"),
]


def test_options_out_of_their_meaning_get_one_line_before_any_work(cli, tmp_path):
    """Issue 44: each of these was a traceback, a ZeroDivisionError, a 15 GiB allocation or a
    zero-width "0% interval"; now one line and exit 2."""
    path = audit_file(tmp_path)
    for flag, said in BAD_OPTIONS:
        code, _out, err = cli(f"stats predict {path} --metric val_loss {flag}")
        assert code == 2 and said in err, (flag, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (flag, err)


def test_target_tokens_apply_to_the_files_target(cli, tmp_path):
    path = audit_file(tmp_path)
    code, out, err = cli(f"stats predict {path} --json --n-boot 50 --target-tokens 2e7")
    assert code == 0, err
    assert json.loads(out)["ladder"]["target"]["tokens"] == 2e7


def runs_csv(root: Path, params=(1e6, 2e6, 4e6, 8e6), tokens_per_param=20.0) -> Path:
    """A results CSV of anyone's runs: the long table plus a params and a tokens column."""
    truth = {"qk_norm": constant(-0.05), "post_ln": log_linear(0.2, -0.05),
             "gelu_mlp": constant(0.03)}  # fmt: skip
    rows = table(truth, params=params, sigma=0.004, names=[f"{n / 1e6:g}M" for n in params])
    return sized_csv(root, rows, {f"{n / 1e6:g}M": n for n in params}, tokens_per_param)


def sized_csv(root: Path, rows: Table, size: dict[str, float], tokens_per_param: float) -> Path:
    """The rows as a results CSV with each scale's parameters and tokens."""
    lines = ["arm,scale,seed,metric,value,params,tokens"]
    lines += [f"{r.arm},{r.scale},{r.seed},{r.metric},{r.value!r},{size[r.scale]:g},"
              f"{size[r.scale] * tokens_per_param:g}" for r in rows.rows]  # fmt: skip
    path = root / "results.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_csv_ladder_is_predicted_end_to_end(cli, tmp_path):
    """Issue 42: anyone's runs, not only an audit's, with each scale's size in two columns."""
    path = runs_csv(tmp_path)
    code, out, err = cli(
        f"stats predict {path} --params-column params --tokens-column tokens --target 3.2e7 "
        "--n-boot 300"
    )
    assert code == 0, err
    assert "at target 3.2e7 (32,000,000 parameters, 640,000,000 tokens) from 4 scales" in out
    for arm in ("qk_norm", "post_ln", "gelu_mlp"):
        assert arm in out
    code, out, err = cli(f"stats predict {path} --target 3.2e7 --json --n-boot 100")
    assert code == 0, err
    result = json.loads(out)
    assert [s["name"] for s in result["ladder"]["scales"]] == ["1M", "2M", "4M", "8M"]
    assert all(a["estimable"] for a in result["arms"])


def test_a_claimed_stack_is_said_in_the_title(cli, tmp_path):
    """Issue 42: on a ladder at its noise floor whose stack wins the backtest significantly,
    the point is the stack's and the title says so; the interval stays the slope rule's."""
    flat = {f"arm{i}": constant(0.002 * (i - 3)) for i in range(12)}
    rows = table(flat, sigma=0.05, seeds=2, seed=1)
    path = sized_csv(tmp_path, rows, {f"s{i}": n for i, n in enumerate(PARAMS)}, 20.0)
    code, out, err = cli(f"stats predict {path} --target {TARGET.params:g} --n-boot 200")
    assert code == 0, err
    assert "the stack's point (it beats one scale's) in the slope rule's interval" in out
    code, out, err = cli(f"stats predict {path} --target {TARGET.params:g} --json --n-boot 100")
    assert code == 0, err
    assert json.loads(out)["model"] == "stacked"


def test_a_csv_ladder_is_checked_as_strictly_as_an_audits(cli, tmp_path):
    path = runs_csv(tmp_path)
    code, _, err = cli(f"stats predict {path} --target 4e6")
    assert code == 2 and "no larger than the largest trained scale '8M'" in err
    code, _, err = cli(f"stats predict {path} --target base")
    assert code == 2 and "--target base: a results table's target is a number" in err
    code, _, err = cli(f"stats predict {path} --target 3.2e7 --target-tokens 1e6")
    assert code == 2 and "target '3.2e7' trains 1,000,000 tokens" in err
    code, _, err = cli(f"stats predict {path} --target 3.2e7 --params-column size")
    assert code == 2 and "from the columns 'size' and 'tokens'" in err and "Traceback" not in err
    text = path.read_text().splitlines()
    text[3] = text[3].replace(",1e+06,", ",3e+06,")  # one row of scale 1M says another size
    path.write_text("\n".join(text) + "\n")
    code, _, err = cli(f"stats predict {path} --target 3.2e7")
    assert code == 2 and f"{path}:4: scale '1M' has params = 3e+06" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_dataframe_ladder_through_the_library():
    import pandas as pd

    from archaudit.stats.predictions.predict import predict
    from archaudit.stats.predictions.runs_ladder import read_runs_ladder

    params = (1e6, 2e6, 4e6)
    rows = table({"a": constant(-0.05), "b": constant(0.02)}, params=params, sigma=0.004,
                 names=["s", "m", "l"])  # fmt: skip
    size = dict(zip(["s", "m", "l"], params, strict=True))
    frame = pd.DataFrame(
        [{"arm": r.arm, "scale": r.scale, "seed": r.seed, "metric": r.metric, "value": r.value,
          "n_params": size[r.scale], "n_tokens": 20 * size[r.scale]} for r in rows.rows]
    )  # fmt: skip
    runs = read_runs_ladder(frame, "n_params", "n_tokens")
    assert [s.name for s in runs.scales] == ["s", "m", "l"]
    result = predict(runs.table, "val_loss", runs.to(1.6e7), n_boot=200)
    assert result.estimable and {a.arm for a in result.arms} == {"a", "b"}
    assert math.isclose(result.ladder.target.tokens, 20 * 1.6e7)


def test_a_csv_target_takes_an_si_suffix(cli, tmp_path):
    """Issue 55: `--target 64M` names a target as the tables name scales; the same ladder as
    `--target 6.4e7`."""
    path = runs_csv(tmp_path)
    code, out, err = cli(f"stats predict {path} --target 64M --json --n-boot 100")
    assert code == 0, err
    named = json.loads(out)
    code, out, err = cli(f"stats predict {path} --target 6.4e7 --json --n-boot 100")
    assert code == 0, err
    numbered = json.loads(out)
    assert named["ladder"]["target"]["params"] == 6.4e7
    assert named["ladder"]["target"]["name"] == "64M"
    assert named["arms"] == numbered["arms"]
    code, _, err = cli(f"stats predict {path} --target 64Q")
    assert code == 2 and "--target 64Q" in err and "e.g. --target 32M or 3.2e+07" in err


def test_each_backtest_line_prints_once_and_the_models_are_said_in_words(cli, tmp_path):
    """Issue 55: each backtest line prints once (the candidates', then the slope rule's whose
    intervals are printed), and the model names are explained with a link to the docs."""
    flat = {f"arm{i}": constant(0.002 * (i - 3)) for i in range(12)}
    rows = table(flat, sigma=0.05, seeds=2, seed=1)
    path = sized_csv(tmp_path, rows, {f"s{i}": n for i, n in enumerate(PARAMS)}, 20.0)
    code, out, err = cli(f"stats predict {path} --target {TARGET.params:g} --n-boot 100")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("- backtest of ")]
    assert len(lines) == len(set(lines)) == 4, lines  # three candidates and the rule's
    assert "single_scale, the prediction is Δ̂ at the largest trained scale" in out
    assert "docs/predict.md" in out


def test_shuffled_rows_give_the_same_prediction(cli, tmp_path):
    """Issue 57: the order of a CSV ladder's rows changes nothing (P(sign holds) and the ranks
    draw every arm together, so the arms are taken in one order whatever the file's)."""
    weak = {f"arm{i}": constant(0.002 * (i - 2)) for i in range(5)}
    rows = table(weak, params=(1e6, 2e6, 4e6, 8e6), sigma=0.004, names=["1M", "2M", "4M", "8M"])
    path = sized_csv(tmp_path, rows, {"1M": 1e6, "2M": 2e6, "4M": 4e6, "8M": 8e6}, 20.0)
    code, out, err = cli(f"stats predict {path} --target 64M --json --n-boot 300 --seed 3")
    assert code == 0, err
    head, *rows = path.read_text().splitlines()
    order = np.random.default_rng(0).permutation(len(rows))
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([head, *(rows[i] for i in order)]) + "\n")
    code, again, err = cli(f"stats predict {shuffled} --target 64M --json --n-boot 300 --seed 3")
    assert code == 0, err
    assert json.loads(again)["arms"] == json.loads(out)["arms"]
    assert again == out
