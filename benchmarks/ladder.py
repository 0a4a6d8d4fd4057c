"""Issue 33, items 5 and 6: a real ladder, and ladders with known truth, for `stats predict`.

Trains an audit ladder on tinyshakespeare (6 arms × 5 widths × 3 seeds, tokens ∝ √parameters,
about 15 minutes of CPU; `--full` for 6 widths, 7 arms and 5 seeds), in this process and
resumably (finished runs are read back, not retrained), and stores its results.csv beside its
audit file in tests/stats/data/ladder/ so that the default tests reuse it. Then measures the
adopted method by backtests on that ladder (largest 1 and 2 scales held out) and by simulated
ladders with known Δ(N) under the noise panel's models, and writes docs/predict.md's tables.

    PYTHONPATH=src nice -n 10 python benchmarks/ladder.py                # train, then measure
    PYTHONPATH=src python benchmarks/ladder.py --measure-only             # stored results only
"""

from __future__ import annotations

import argparse
import itertools
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from archaudit.stats.predictions.backtest import Forecast, forecast, interval, observed_draws
from archaudit.stats.predictions.ladder_fit import LadderArrays

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
    from archaudit.audit.plan import model_sizes
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
    from archaudit.audit import store
    from archaudit.audit.launch import RunOptions
    from archaudit.audit.plan import make_plan
    from archaudit.audit.runner import run_one
    from archaudit.audit.spec import load_audit

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
    parser.add_argument("--reps", type=int, default=60, help="simulated ladders per row")
    parser.add_argument("--n-boot", type=int, default=400)
    parser.add_argument("--measure-only", action="store_true")
    args = parser.parse_args()
    if not args.measure_only:
        args.out.mkdir(parents=True, exist_ok=True)
        results = train(args.out, args.full, args.reverse, args.middle)
        print(f"stored {store_results(results, args.full)}")
    if args.train_only:
        return
    text = measure(STORED / ("full" if args.full else "") / "ladder.toml", args.reps, args.n_boot)
    print(text)
    write_doc(text)


# ---------------------------------------------------------------------------------------------
# measuring the method: backtests on the real ladder, and simulated ladders with known truth

LEVELS = (0.8, 0.95)
SIM_TRUTHS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "gain": lambda u: -1.5 + 0.0 * u,
    "loss": lambda u: 1.0 + 0.0 * u,
    "fading": lambda u: -3.0 * 2.0 ** (-0.5 * u),
    "crossing": lambda u: 1.5 - 0.5 * u,
    "growing": lambda u: -0.3 * u,
    "null": lambda u: 0.0 * u,
}
"""Δ(N) in units of the seed σ, u = doublings of N above the smallest scale: effects that
persist, fade as N^-0.5, cross zero at u = 3, grow, and none."""
TARGET_STEPS = 2
"""The simulated target lies this many doublings beyond the largest trained scale."""


@dataclass
class Hits:
    """Counts behind coverage, sign and pairwise decision accuracy, method and baseline."""

    covered: dict[float, list[bool]] = field(default_factory=lambda: {x: [] for x in LEVELS})
    sign: list[bool] = field(default_factory=list)
    pairs: list[bool] = field(default_factory=list)
    base_sign: list[bool] = field(default_factory=list)
    base_pairs: list[bool] = field(default_factory=list)
    adopted: list[bool] = field(default_factory=list)

    def score(self, method: Forecast, draws: np.ndarray, truth: np.ndarray, single: np.ndarray,
              signed: np.ndarray) -> None:  # fmt: skip
        """One ladder's predictions against the truth (or the held-out observation)."""
        shown = np.isfinite(method.point)
        for level in LEVELS:
            low, high = interval(draws[:, shown], level)
            self.covered[level] += list((low <= truth[shown]) & (truth[shown] <= high))
        keep = shown & signed
        self.sign += list(np.sign(method.point[keep]) == np.sign(truth[keep]))
        self.base_sign += list(np.sign(single[keep]) == np.sign(truth[keep]))
        for i, j in itertools.combinations(np.flatnonzero(shown), 2):
            if truth[i] != truth[j]:
                self.pairs.append(
                    bool(np.sign(method.point[i] - method.point[j]) == np.sign(truth[i] - truth[j]))
                )
                self.base_pairs.append(
                    bool(np.sign(single[i] - single[j]) == np.sign(truth[i] - truth[j]))
                )
        self.adopted.append(method.adopted)

    def row(self) -> list[str]:
        def pct(values: list[bool]) -> str:
            return f"{np.mean(values):.0%}" if values else "–"

        return [
            *(pct(self.covered[level]) for level in LEVELS),
            pct(self.sign), pct(self.base_sign), pct(self.pairs), pct(self.base_pairs),
            pct(self.adopted),
        ]  # fmt: skip


COLUMNS = ["80% coverage", "95% coverage", "signs", "signs (single-scale)", "pairs",
           "pairs (single-scale)", "curve adopted"]  # fmt: skip


def real_ladder(path: Path, n_boot: int) -> list[list[str]]:
    """Hold out the largest 1 and 2 scales of the stored ladder and predict the largest."""
    from archaudit.audit.ladder import audit_ladder
    from archaudit.audit.spec import load_audit
    from archaudit.stats import load_table
    from archaudit.stats.options import DEFAULT
    from archaudit.stats.predictions.predict import ladder_arrays

    spec = load_audit(path)
    ladder = audit_ladder(spec)
    _, arrays, _ = ladder_arrays(load_table(spec.audit_dir), "val_loss", ladder, DEFAULT)
    scales = tuple(s.name for s in ladder.scales)
    rows = []
    for held_out in (1, 2):
        hits = Hits()
        seen = arrays.first(len(scales) - held_out)
        method = forecast(seen, scales[: len(seen.x)], arrays.x[-1:], n_boot=n_boot)
        draws = observed_draws(method.draws, seen, arrays.counts[:, -1], np.random.default_rng(0))
        observed = arrays.deltas[:, -1]
        hits.score(method, draws, observed, seen.deltas[:, -1], np.ones(len(observed), bool))
        label = f"{scales[-1]} from {', '.join(scales[: len(seen.x)])} ({method.curve})"
        rows.append([label, *hits.row()])
    return rows


def simulate(scales: int, seeds: int, noise: str, reps: int, n_boot: int) -> Hits:
    """`reps` ladders of SIM_TRUTHS (σ = 1) under one noise model, each predicted
    TARGET_STEPS doublings beyond its largest scale, scored against the true Δ there."""
    from archaudit.stats.noise_panel import parse_one

    model, rng, hits = parse_one(noise), np.random.default_rng(scales * 100 + seeds), Hits()
    u = np.arange(scales, dtype=float)
    truth = np.array([[0.0] * scales, *(f(u) for f in SIM_TRUTHS.values())])  # baseline first
    target = np.array([f(np.array(scales - 1.0 + TARGET_STEPS)) for f in SIM_TRUTHS.values()])
    names = tuple(f"u{i}" for i in range(scales))
    widths = model.arm_sigmas(len(truth))[:, None, None]
    for rep in range(reps):
        values = truth[..., None] + model.draw(rng, (*truth.shape, seeds)) * widths
        arrays = LadderArrays(
            x=u * math.log(2.0),
            means=values.mean(-1),
            counts=np.full(truth.shape, float(seeds)),
            sigma=np.sqrt(values.var(-1, ddof=1).mean(0)),
            dof=np.full(scales, float(len(truth) * (seeds - 1))),
        )
        x_target = np.array([(scales - 1.0 + TARGET_STEPS) * math.log(2.0)])
        method = forecast(arrays, names, x_target, n_boot=n_boot, seed=rep)
        hits.score(method, method.draws, target, arrays.deltas[:, -1], target != 0)
    return hits


SIM_GRID = [(3, 3, "normal"), (5, 2, "normal"), (5, 3, "normal"), (5, 5, "normal"),
            (7, 3, "normal"), (5, 3, "t3"), (5, 3, "lognormal:1"), (5, 3, "hetero:3"),
            (5, 3, "hetero:6:3")]  # fmt: skip


def table_lines(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def measure(path: Path, reps: int, n_boot: int) -> str:
    """The tables of docs/predict.md: the real ladder's backtests and the simulations."""
    start = time.process_time()
    lines = ["Real ladder (`" + str(path.relative_to(ROOT)) + "`), val_loss, the largest "
             "scale predicted from the smaller ones:", ""]  # fmt: skip
    lines += table_lines(["held out", *COLUMNS], real_ladder(path, n_boot))
    sims = []
    for scales, seeds, noise in SIM_GRID:
        hits = simulate(scales, seeds, noise, reps, n_boot)
        sims.append([str(scales), str(seeds), noise, *hits.row()])
        print(f"simulated {scales} scales, {seeds} seeds, {noise}", flush=True)
    lines += ["", f"Simulated ladders ({reps} per row; truth {', '.join(SIM_TRUTHS)}; target "
              f"{TARGET_STEPS} doublings beyond the largest scale; σ = 1):", ""]  # fmt: skip
    lines += table_lines(["scales", "seeds", "noise", *COLUMNS], sims)
    lines += ["", f"(`benchmarks/ladder.py --measure-only --reps {reps}`, "
              f"{time.process_time() - start:.0f} s of CPU.)"]  # fmt: skip
    return "\n".join(lines)


def write_doc(text: str) -> None:
    """Replace the generated block of docs/predict.md."""
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


BEGIN, END = "<!-- ladder.py: begin -->", "<!-- ladder.py: end -->"


if __name__ == "__main__":
    main()
