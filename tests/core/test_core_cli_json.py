"""Must-show 3: every subcommand, with `--json`, prints exactly one JSON document on stdout.

The commands are enumerated from the typer app, so a new command fails here until it has an
entry in ARGS (its minimal valid arguments). One tiny audit, run once per module, feeds the
commands that need runs; the statistics commands read small CSVs written here.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from archaudit.cli import app, register_commands
from archaudit.diagnose import diagnose_attention

AUDIT = """
name = "tiny"
arms = ["qk_norm", "softpick"]
[seeds]
noise_floor = 2
arms = 1
[eval]
suite = ""
[recipe]
steps = 8
batch_tokens = 512
corpus_chars = 100000
eval_every = 4
eval_batches = 2
checkpoint_every = 4
[scales.xs]
d_model = 32
n_layers = 2
n_heads = 2
context_length = 64
[executor]
workers = 2
threads = 1
"""

TINY_RECIPE = ["recipe.steps=2", "recipe.batch_tokens=512", "recipe.corpus_chars=100000"]
# The demo judges downstream_avg, which needs models trained far enough to differ across seeds
# (untrained ones all score the same, and a zero noise floor is an error): its case is slow.
DEMO = [
    "arms=[]", "seeds.noise_floor=3", "eval.limit=30", "scales.d48.tokens=153600",
    "scales.d64.tokens=153600", "recipe.corpus_chars=200000",
]  # fmt: skip
SLOW = {"demo"}
STATS = ["--metric", "acc", "--scale", "d6"]
PROBE = ["--data", "{text}", "--tokens", "62", "--window", "31", "--no-figure"]


LMEVAL = Path(__file__).resolve().parents[1] / "data" / "lmeval" / "smollm2"
REPO = Path(__file__).resolve().parents[2]


def _sets(overrides: list[str]) -> list[str]:
    return [arg for value in overrides for arg in ("--set", value)]


# Minimal valid arguments per command; {name} is a path from the `paths` fixture.
ARGS: dict[str, list[str]] = {
    "init": ["{tmp}/new.toml"],
    "plan": ["{audit}", "--no-probe"],
    "run": ["{audit}"],
    "run-one": ["{run_dir}"],
    "status": ["{audit_dir}"],
    "tune-baseline": ["{audit}", "--lr", "1e-3", "--dry-run"],
    "rerun": ["{run_dir}"],
    "demo": ["--runs-dir", "{tmp}/demo", *_sets(DEMO)],
    "train": ["--out", "{tmp}/train", "--arm", "qk_norm", *_sets(TINY_RECIPE)],
    "eval": ["{run_dir}", "--suite", "demo", "--limit", "2"],
    "mods list": [],
    "mods show": ["softpick"],
    "stats verdicts": ["{results}", *STATS],
    "stats transfer": ["{results}", "--metric", "acc", "--confidence", "0.9"],
    "stats interactions": ["{results}", *STATS],
    "stats scaling": ["{scaling}", "--n-boot", "10"],
    "stats power": ["{results}", *STATS],
    "stats decoupling": ["{results}", "--downstream-metric", "acc", "--scale", "d6"],
    "stats items": ["{items}", "--scale", "s", "--n-boot", "50"],
    "stats aggregate": ["{results}", *STATS, "--n-boot", "50"],
    "stats snr": ["{results}"],
    "stats predict": ["{ladder}", "--n-boot", "50"],
    "stress": ["{stress}", "--plan", "--no-probe", "--runs-dir", "{tmp}/stress-runs"],
    "replicate": ["list"],
    "simulate-null": ["--audits", "20", "--n-arms", "3"],
    "report": ["{audit_dir}", "--out", "{tmp}/report.html"],
    "data prepare": ["{text}", "--out", "{tmp}/prepared"],
    "export hf": ["{run_dir}", "--out", "{tmp}/hf"],
    "import lm-eval": [str(LMEVAL), "--arm-from", "parent", "--out", "{tmp}/imported"],
    "diagnose bottleneck": ["{run_dir}", *PROBE],
    "diagnose attention": ["{run_dir}", *PROBE],
    "diagnose heads": ["{run_dir}", *PROBE],
    "diagnose prune": ["{run_dir}", *PROBE, "--layers", "1"],
    "diagnose focus": ["{audit_dir}", "--metric", "val_loss", "--n-boot", "50", "--no-figure"],
    "diagnose task": ["{tmp}/task.txt", "--chars", "500"],
}


def commands() -> list[str]:
    register_commands()

    def leaves(group: Any, prefix: str) -> Iterator[str]:
        for name, command in sorted(group.commands.items()):
            if hasattr(command, "commands"):  # a group (typer may bring its own click)
                yield from leaves(command, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}"

    return list(leaves(typer.main.get_command(app), ""))


def test_every_command_has_arguments_here() -> None:
    assert set(commands()) == set(ARGS), "add the new command's minimal arguments to ARGS"


def _write_csv(path: Path, rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    register_commands()
    tmp = tmp_path_factory.mktemp("cli-json")
    audit = tmp / "tiny.toml"
    audit.write_text(AUDIT)
    ran = CliRunner().invoke(app, ["run", str(audit), "--json"])
    assert ran.exit_code == 0, ran.output
    audit_dir = Path(json.loads(ran.stdout)["audit_dir"])
    levels = {"baseline": 0.50, "qk": 0.56, "gqa": 0.44, "qk+gqa": 0.52}
    results = [["arm", "scale", "seed", "metric", "value", "family"]]
    for arm, level in levels.items():
        for scale, shift in (("d6", 0.0), ("d12", 0.05)):
            for seed, noise in enumerate((-0.01, 0.0, 0.012)):
                results.append([arm, scale, seed, "acc", level + shift + noise, "norm"])
                results.append([arm, scale, seed, "val_loss", 3.0 - level + noise, "norm"])
    scaling = [["arm", "scale", "seed", "metric", "value"]]
    for i, (n, d) in enumerate((n, d) for n in (1e6, 2e6, 4e6, 8e6) for d in (1e8, 4e8, 1.6e9)):
        loss = 1.7 + 400 / n**0.34 + 410 / d**0.28 + 0.002 * math.sin(i)
        scaling += [["baseline", f"p{i}", 0, m, v] for m, v in (("params", n), ("tokens", d))]
        scaling.append(["baseline", f"p{i}", 0, "val_loss", loss])
    items = [["arm", "scale", "seed", "task", "item", "correct"]]
    items += [
        [arm, "s", seed, "t", item, int((item * (seed + 2) + len(arm)) % 3 > 0)]
        for arm in ("baseline", "x")
        for seed in range(2)
        for item in range(30)
    ]
    (tmp / "corpus.txt").write_text("the cat sat on the mat. " * 200)
    for run in sorted(audit_dir.glob("*/xs/seed-*")):  # what `diagnose focus` reads
        diagnose_attention(run, tmp / "corpus.txt", tokens=62, window=31, figure=False)
    return {
        "tmp": tmp,
        "audit": audit,
        "audit_dir": audit_dir,
        "run_dir": audit_dir / "baseline" / "xs" / "seed-0",
        "results": _write_csv(tmp / "results.csv", results),
        "scaling": _write_csv(tmp / "scaling.csv", scaling),
        "items": _write_csv(tmp / "items.csv", items),
        "text": tmp / "corpus.txt",
        "ladder": REPO / "tests" / "stats" / "data" / "ladder" / "ladder.toml",
        "stress": REPO / "benchmarks" / "stress" / "stress.toml",
    }


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in sorted(ARGS)]
)
def test_json_is_one_document_on_stdout(command: str, paths: dict[str, Path]) -> None:
    args = [*command.split(), *(a.format(**paths) for a in ARGS[command]), "--json", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output, result.exception)
    document = json.loads(result.stdout)  # one document: anything else on stdout fails here
    assert isinstance(document, dict | list) and document, args
