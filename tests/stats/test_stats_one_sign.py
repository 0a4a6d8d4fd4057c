"""One sign (issue 46, item 1): every Δ the tool prints or stores is positive when the arm is
better, as the metric registry's direction says. On one audit with two arms that are better on
every measure and one that is worse, this walks every Δ-printing command (`stats`, `stats
transfer`, `stats decoupling`, `stats items` on correctness, bpb and margin, `stats predict`),
their JSON, the report's record and its Markdown twin, and finds one sign per arm.

Defect: `stats` printed qk_norm +0.371, `stats predict` −0.371 (arm − baseline) and `stats items
--measure bpb` −0.413 "favours arm". Not a Δ: decoupling's `r_L`, the relative loss change its
figure plots (left = a lower loss), which says so in its name and its axis."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from archaudit.report.build import build_report

BETTER = {"qk_norm": 1.0, "gelu_mlp": 0.5}
WORSE = {"post_ln": -1.0}
QUALITY = {"baseline": 0.0, **BETTER, **WORSE}
"""Each arm's quality: + is better on every measure (lower loss and bpb, higher scores)."""
WIDTHS = (16, 24, 32, 48)
SEEDS = 3
ITEMS = 200
STEP = 0.05
"""How far one unit of quality moves each metric: ten times the seed noise below."""
NOISE = STEP / 10

AUDIT = """name = "sign"
arms = {arms}
[eval]
suite = ""
[recipe]
batch_tokens = 1024
[target]
params = 5e5
"""


def _results(rng: random.Random) -> tuple[list[str], list[str]]:
    """Rows of results.csv (val_loss, downstream_avg) and items.csv (correct, bpb, margin)."""
    rows, items = ["arm,scale,seed,metric,value"], ["arm,scale,seed,task,item,correct,bpb,margin"]
    for i, width in enumerate(WIDTHS):
        for arm, quality in QUALITY.items():
            for seed in range(SEEDS):
                loss = 3.0 - STEP * (i + quality) + rng.gauss(0.0, NOISE)
                score = 0.5 + STEP * quality + rng.gauss(0.0, NOISE)
                rows += [f"{arm},d{width},{seed},val_loss,{loss!r}"]
                rows += [f"{arm},d{width},{seed},downstream_avg,{score!r}"]
                for k in range(ITEMS):
                    correct = int(rng.random() < 0.5 + 3 * STEP * quality)
                    bpb = 1.0 - 2 * STEP * quality + rng.gauss(0.0, STEP)
                    margin = 2 * STEP * quality + rng.gauss(0.0, STEP)
                    items += [f"{arm},d{width},{seed},arc,arc/{k},{correct},{bpb!r},{margin!r}"]
    return rows, items


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An audit file with four scales and a target, its results and items beside it."""
    root = tmp_path_factory.mktemp("sign")
    text = AUDIT.format(arms=json.dumps([*BETTER, *WORSE]))
    for width in WIDTHS:
        text += f"[scales.d{width}]\nd_model = {width}\nn_layers = 2\nn_heads = 4\n"
        text += f"context_length = 64\ntokens = {100 * width * 1024}\n"
    (root / "audit.toml").write_text(text)
    runs = root / "runs" / "sign"
    runs.mkdir(parents=True)
    rows, items = _results(random.Random(0))
    (runs / "results.csv").write_text("\n".join(rows) + "\n")
    (runs / "items.csv").write_text("\n".join(items) + "\n")
    return root / "audit.toml"


def commands(audit: Path) -> list[str]:
    """Every command that prints a Δ, on this audit."""
    runs = audit.parent / "runs" / "sign"
    largest = f"d{WIDTHS[-1]}"
    return [
        f"stats {audit} --scale {largest}",
        f"stats transfer {audit} --metric val_loss",
        f"stats transfer {audit} --metric downstream_avg",
        f"stats decoupling {audit} --scale {largest}",
        f"stats items {runs} --scale {largest}",
        f"stats items {runs} --scale {largest} --measure bpb",
        f"stats items {runs} --scale {largest} --measure margin",
        f"stats predict {audit} --metric val_loss --n-boot 200",
    ]


def json_deltas(document: object, arm: str | None = None) -> Iterator[tuple[str, str, float]]:
    """(arm, key, value) for every number stored under a Δ's key (`…delta…`, `difference`)."""
    if isinstance(document, dict):
        arm = document.get("arm", arm)
        for key, value in document.items():
            if arm in QUALITY and re.search(r"delta|^difference$", key):
                numbers = value if isinstance(value, list) else [value]
                for number in numbers:
                    if isinstance(number, float):
                        yield arm, key, number
            yield from json_deltas(value, arm)
    elif isinstance(document, list):
        for item in document:
            yield from json_deltas(item, arm)


CELL_GAP = re.compile(r"\s{2,}")


def printed_deltas(out: str) -> Iterator[tuple[str, str, float]]:
    """(arm, column, value) for every printed column whose name starts with Δ."""
    columns: list[str] = []
    for line in out.splitlines():
        cells = CELL_GAP.split(line.strip())
        if cells[0] == "arm":
            columns = cells
        elif columns and cells[0] in QUALITY and len(cells) <= len(columns):
            for name, cell in zip(columns, cells, strict=False):  # a last cell may be blank
                if name.startswith("Δ") and cell not in ("—", "–"):
                    yield cells[0], name, float(cell.split()[0])  # "Δ̂ at target": Δ̂ [interval]


def assert_one_sign(found: list[tuple[str, str, float]], where: str) -> None:
    assert {arm for arm, _, _ in found} == set(BETTER) | set(WORSE), (where, found)
    for arm, key, value in found:
        assert (value > 0) == (arm in BETTER), (where, arm, key, value)


def test_every_command_prints_and_stores_one_sign(cli, audit):
    for command in commands(audit):
        code, out, err = cli(command)
        assert code == 0, (command, err)
        assert_one_sign(list(printed_deltas(out)), command)
        code, out, err = cli(f"{command} --json")
        assert code == 0, (command, err)
        assert_one_sign(list(json_deltas(json.loads(out))), f"{command} --json")


def test_the_report_and_its_twin_print_one_sign(audit):
    report = build_report(audit)
    stored = [
        (a.arm, f"{v.metric} at {v.scale}", value)
        for v in report.data.verdicts
        for a in v.arms
        for value in (a.delta, *a.seed_deltas)
    ]
    assert_one_sign(stored, "the report's record")
    markdown, _ = report.markdown("figures")
    assert_one_sign(list(markdown_deltas(markdown)), "the Markdown twin")


def markdown_deltas(markdown: str) -> Iterator[tuple[str, str, float]]:
    """(arm, column, value) for every Δ column of the twin's tables (unescaped)."""
    columns: list[str] = []
    for line in markdown.splitlines():
        cells = [c.strip().replace("\\", "") for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            columns = []
        elif cells[0] == "arm":
            columns = cells
        elif columns and cells[0] in QUALITY:
            for name, cell in zip(columns, cells, strict=True):
                if name.startswith("Δ") and cell not in ("—", "–"):
                    yield cells[0], name, float(cell.split()[0])  # "Δ̂ at target": Δ̂ [interval]
