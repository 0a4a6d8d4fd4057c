"""Issue 33, items 5 and 6: a real ladder, and ladders with known truth, for `stats predict`.

Trains an audit ladder on tinyshakespeare (6 arms × 5 widths × 3 seeds, tokens ∝ √parameters,
about 15 minutes of CPU; `--full` for 6 widths, 7 arms and 5 seeds), in this process and
resumably (finished runs are read back, not retrained), and stores its results.csv beside its
audit file in tests/stats/data/ladder/ so that the default tests reuse it. Then measures the
prediction on that ladder (the per-arm table, the backtest lines, the largest scale predicted
from the smaller ones) and writes docs/predict.md's block on it. The method's coverage on
ladders of known truth is benchmarks/predict_coverage.py's.

    PYTHONPATH=src nice -n 10 python benchmarks/ladder.py                # train, then measure
    PYTHONPATH=src python benchmarks/ladder.py --measure-only             # stored results only
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from archaudit.stats.predictions.ladders import Ladder
from archaudit.stats.predictions.predict import Prediction, predict
from archaudit.stats.records.table import Table
from doc_blocks import replace_block

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "tests" / "stats" / "data" / "ladder"
AUDIT_FILE = STORED / "ladder.toml"
DOC = ROOT / "docs" / "predict.md"

ARMS = ("post_ln", "qk_norm", "gelu_mlp", "softpick", "z_loss")
"""Besides the baseline: four with real effects at this size, and z_loss as the null-like arm
(an auxiliary loss on the softmax normaliser that leaves a small model's loss where it was)."""
FULL_ARMS = (*ARMS, "layernorm")
WIDTHS = (16, 24, 32, 48, 64)
FULL_WIDTHS = (*WIDTHS, 96)
BASE_TOKENS = 98_304
"""Tokens of the narrowest scale; a scale with N parameters trains BASE_TOKENS·√(N/N₁₆)."""
PARAMS_16 = 14_928


def audit_text(full: bool) -> str:
    """The ladder's audit file: one recipe, widths at a fixed depth, tokens ∝ √N."""
    from archaudit.audit.grid.plan import model_sizes
    from archaudit.config import ModelConfig, build

    arms = FULL_ARMS if full else ARMS
    lines = [
        "# benchmarks/ladder.py writes this file: the ladder of issue 33 (docs/predict.md).",
        f'name = "ladder-ts{"-full" if full else ""}"',
        f"arms = [{', '.join(repr(a).replace(chr(39), chr(34)) for a in arms)}]",
        'runs_dir = "."',
        "",
        "[seeds]",
        f"noise_floor = {5 if full else 3}",
        f"arms = {5 if full else 3}",
        "",
        "[eval]",
        'suite = ""',
        "",
        "[recipe]",
        'corpus = "../../../../../shared/data/corpora/tinyshakespeare/input.txt"',
        "batch_tokens = 1024",
        "lr = 3e-3",
        "eval_every = 100000",
        "eval_batches = 32",
        "checkpoint_every = 100000",
        "",
        "[target]  # never trained: the same depth and context at width 128",
        'name = "d128"',
        "params = 467_584",
        "",
    ]
    for width in FULL_WIDTHS if full else WIDTHS:
        model = dict(d_model=width, n_layers=2, n_heads=4, context_length=64)
        params, _ = model_sizes(build(ModelConfig, model, section="model"))
        tokens = round(BASE_TOKENS * (params / PARAMS_16) ** 0.5 / 1024) * 1024
        lines += [f"[scales.d{width}]  # {params:,} parameters"]
        lines += [f"{key} = {value}" for key, value in model.items()]
        lines += [f"tokens = {tokens}", ""]
    return "\n".join(lines)


def train(out: Path, full: bool, reverse: bool = False, middle: bool = False) -> Path:
    """Train every run of the ladder (seed by seed, so that an early stop leaves whole ladders)
    and return the audit's results.csv."""
    from archaudit.audit.execute.runner import run_one
    from archaudit.audit.grid import store
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.launcher.launch import RunOptions
    from archaudit.audit.setup.spec import load_audit

    spec = load_audit(write_audit(full), runs_dir=out / "runs")
    plan = make_plan(spec)
    run_dirs = store.materialize(plan)
    order = {scale.name: i for i, scale in enumerate(spec.scales)}

    def key(run_dir: Path) -> tuple[int, int, str]:
        run = store.read_spec(run_dir)
        return run.seed, order[run.scale], run.arm

    options = RunOptions(threads=1, device="cpu")
    start = time.process_time()
    # more processes (--reverse, --middle) share the work: each run is claimed by one of them
    ordered = sorted(run_dirs, key=key, reverse=reverse)
    if middle:
        ordered = ordered[len(ordered) // 2 :] + ordered[: len(ordered) // 2]
    for i, run_dir in enumerate(ordered):
        state = run_one(run_dir, options)
        print(f"[{i + 1}/{len(run_dirs)}] {run_dir.relative_to(out)}: {state}", flush=True)
        if i % 6 == 5:
            store.refresh_export(spec.audit_dir)
    store.refresh_export(spec.audit_dir)
    print(f"trained in {time.process_time() - start:.0f} s of CPU (this process)", flush=True)
    return spec.audit_dir / store.RESULTS


def write_audit(full: bool) -> Path:
    """The audit file in the test data (its relative corpus is read from there)."""
    path = STORED / ("full" if full else "") / "ladder.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(audit_text(full))
    return path


def store_results(results: Path, full: bool) -> Path:
    """Copy results.csv beside the audit file (runs_dir = "." there) for the default tests."""
    path = write_audit(full)
    stored = path.parent / ("ladder-ts-full" if full else "ladder-ts")
    stored.mkdir(exist_ok=True)
    shutil.copyfile(results, stored / "results.csv")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="6 widths, 7 arms, 5 seeds")
    parser.add_argument("--out", type=Path, default=Path("/tmp/archaudit-ladder"))
    parser.add_argument("--train-only", action="store_true")
    parser.add_argument("--reverse", action="store_true", help="train from the last run back")
    parser.add_argument("--middle", action="store_true", help="train from the middle run on")
    parser.add_argument("--measure-only", action="store_true")
    args = parser.parse_args()
    if not args.measure_only:
        args.out.mkdir(parents=True, exist_ok=True)
        results = train(args.out, args.full, args.reverse, args.middle)
        print(f"stored {store_results(results, args.full)}")
    if args.train_only:
        return
    text = measure(STORED / ("full" if args.full else "") / "ladder.toml")
    print(text)
    replace_block(DOC, BEGIN, END, text)


# ---------------------------------------------------------------------------------------------
# the stored real ladder: its prediction at the target, and d64 predicted from the scales below
# (benchmarks/predict_coverage.py measures the method on ladders of known truth)


def arm_table(result: Prediction) -> list[str]:
    """The per-arm table `stats predict` prints, as markdown."""
    largest = result.ladder.scales[-1].name
    head = ["arm", f"Δ̂ {largest}", f"Δ̂ {result.ladder.target.name}",
            f"{result.confidence:.0%} interval", "P(sign holds)", "rank (could be)"]  # fmt: skip
    rows = [
        [a.arm, f"{a.delta_largest:+.4f}", f"{a.delta:+.4f}",
         f"[{a.interval[0]:+.4f}, {a.interval[1]:+.4f}]", f"{a.p_sign_holds:.2f}",
         f"{a.rank} ({a.rank_interval[0]:.0f}–{a.rank_interval[1]:.0f})"]
        for a in result.arms
    ]  # fmt: skip
    return table_lines(head, rows)


def held_out_line(table: Table, ladder: Ladder) -> str:
    """The largest scale predicted by `predict` from the smaller ones: how many of its
    observed Δ̂ fell in the intervals (they carry the target's seed noise only through the
    drift term: a stricter test than the truth)."""
    scales = ladder.scales
    smaller = Ladder(scales[:-1], scales[-1])
    hits = []
    for level in LEVELS:
        result = predict(table, "val_loss", smaller, confidence=level, n_boot=N_BOOT)
        observed = predict(table, "val_loss", ladder, n_boot=N_BOOT).arms
        hits.append(sum(p.interval[0] <= o.delta_largest <= p.interval[1]
                        for p, o in zip(result.arms, observed, strict=True)))  # fmt: skip
    return (
        f"{scales[-1].name} predicted from {', '.join(s.name for s in scales[:-1])} "
        f"({result.model.replace('_', '-')}): the observed Δ̂ of {hits[0]} of "
        f"{len(result.arms)} arms in the 80% intervals, {hits[1]} in the 95% intervals."
    )


LEVELS = (0.8, 0.95)
N_BOOT = 2000


def table_lines(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def measure(path: Path) -> str:
    """docs/predict.md's block on the stored ladder: the per-arm table, the backtest lines."""
    from archaudit.audit.results.ladder import audit_ladder
    from archaudit.audit.setup.spec import load_audit
    from archaudit.stats import load_table

    start = time.process_time()
    spec = load_audit(path)
    ladder, table = audit_ladder(spec), load_table(spec.audit_dir)
    result = predict(table, "val_loss", ladder, n_boot=N_BOOT)
    where = path.relative_to(ROOT)
    lines = [
        f"The stored ladder (`{where}`), val_loss at {ladder.target.name} "
        f"({ladder.target.params:,.0f} parameters): `archaudit stats predict {where}`",
        "",
        *arm_table(result),
        "",
        *(f"- {b.summary()}" for b in (*result.candidates, result.backtest) if b is not None),
        *(f"- {note}" for note in result.notes),
        f"- {held_out_line(table, ladder)}",
        "",
        f"(`benchmarks/ladder.py --measure-only`, {time.process_time() - start:.0f} s of CPU.)",
    ]
    return "\n".join(lines)


BEGIN, END = "<!-- ladder.py: begin -->", "<!-- ladder.py: end -->"


if __name__ == "__main__":
    main()
