"""Issue 36, must-show 1 (this branch's share): generated hostile cases through the real CLI
entry point for the commands added since the first fuzz set: `import lm-eval` (damaged results
and samples files, hostile values and task names, hostile folder names and label options),
results CSV and Parquet into `stats` and `report` (formula cells, HTML and `javascript:` links,
damaged bytes), `export hf` (hostile output folders, damaged runs) and `eval` of a Hugging Face
folder (tampered config.json, weights and tokenizer). The harness is test_audit_fuzz's: every
case ends with exit 0 or 2, no traceback, a refusal's first line names the file or option at
fault, and nothing outside the named output changes. Cases that must do the whole work (a
successful export, a rendered report) are marked slow; the rest run by default."""

from __future__ import annotations

import copy
import csv
import json
import math
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_audit_fuzz import HOSTILE, assert_clean_exit, damage, mutate_bytes, set_path, snapshot

from archaudit.stats.records.csvio import FORMULA_STARTS

SEED = "archaudit-fuzz-doors-1"
HOSTILE_NAMES = [
    "=cmd|'-C calc'!A0", "+1+1", "-2", "@SUM(A1)", "\tx", "<script>alert(1)</script>",
    "[x](javascript:alert(1))", "a,b", 'a"b', "é\u202e", "x" * 200, "...", "seed-9",
]  # fmt: skip
HOSTILE_TASKS = ["../x", "a/b", "", ".hidden", "x" * 300, "=cmd", "a\u0000b", "ok_task"]
LMEVAL_PATHS = [
    "results", "results.arc_easy_local", "results.arc_easy_local.acc,none",
    "results.arc_easy_local.acc_norm,none", "results.arc_easy_local.acc_stderr,none", "config",
    "config.model_num_parameters", "config.model_args", "config.fewshot_seed", "config.model",
    "configs", "configs.arc_easy_local", "configs.arc_easy_local.metric_list", "n-shot",
    "model_name_sanitized",
]  # fmt: skip
LMEVAL_VALUES = [*HOSTILE, 10**400, "135M", "1.5B", "12Q", "0.5", -(10**400), 1e-320]
LABEL_OPTIONS = [
    ("--arm-from", "parent"), ("--arm-from", "regex:("), ("--arm-from", "regex:zz(\\d)"),
    ("--arm-from", "model"), ("--arm-from", "fewshot"), ("--seed-from", "seed"),
    ("--seed-from", "params"), ("--seed-from", "regex:seed-(\\d+)"), ("--scale-from", "params"),
    ("--scale-from", "nope"), ("--seed-from", "regex:(x)?"), ("--scale-from", "model"),
]  # fmt: skip


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    """`{d}` stands for the case folder, `{suite}` for the two-item suite file."""
    names: tuple[str, ...]
    """A refusal's first line must contain one of these."""
    out: str
    start_from: tuple[str, ...]
    """Fixtures copied into the case folder (lmeval, run, hf, res)."""
    mutate: Callable[[Path, random.Random], None] | None = None
    check: Callable[[Path], None] | None = None
    """On exit 0: a check of what was written."""
    slow: bool = False


# ---------------------------------------------------------------------------------------------
# checks on what a successful command wrote


def csv_cells_are_safe(folder: Path) -> None:
    for path in folder.glob("*.csv"):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    if cell.startswith(FORMULA_STARTS):
                        float(cell)  # only numbers may start like a formula


def markdown_is_inert(folder: Path) -> None:
    for path in folder.glob("*.md"):
        text = path.read_text().lower()
        assert "<script" not in text and "](javascript:" not in text, path


# ---------------------------------------------------------------------------------------------
# import lm-eval


RESULTS_GLOB = "lmeval/baseline/seed-1/*/results_*.json"
SAMPLES_GLOB = "lmeval/baseline/seed-1/*/samples_*.jsonl"
IMPORT = ("import", "lm-eval", "{d}/lmeval", "--out", "{d}/out")


def _one(d: Path, pattern: str) -> Path:
    (path,) = d.glob(pattern)
    return path


def _edit_results(d: Path, edit: Callable[[dict], None]) -> None:
    path = _one(d, RESULTS_GLOB)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))


def import_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:import:{i}")
        kind = i % 6
        options: tuple[str, ...] = ("--arm-from", "parent")
        names: tuple[str, ...] = ("results_", "samples_", "out")
        if kind == 0:  # a hostile value at a path of the results file
            key, value = rng.choice(LMEVAL_PATHS), copy.deepcopy(rng.choice(LMEVAL_VALUES))

            def mutate(d, rng, key=key, value=value):
                _edit_results(d, lambda doc: set_path(doc, key.split("."), value))
        elif kind == 1:  # a hostile task name
            name = rng.choice(HOSTILE_TASKS)

            def mutate(d, rng, name=name):
                def rename(doc):
                    doc["results"][name] = doc["results"].pop("arc_easy_local")
                    doc["configs"][name] = doc["configs"].pop("arc_easy_local")

                _edit_results(d, rename)
        elif kind == 2:  # byte damage to the results file or the samples file
            pattern = rng.choice([RESULTS_GLOB, SAMPLES_GLOB])

            def mutate(d, rng, pattern=pattern):
                path = _one(d, pattern)
                path.write_bytes(mutate_bytes(path.read_bytes(), rng))
        elif kind == 3:  # one samples line replaced by a hostile value
            value = rng.choice(HOSTILE)

            def mutate(d, rng, value=value):
                path = _one(d, SAMPLES_GLOB)
                lines = path.read_text().splitlines()
                lines[rng.randrange(len(lines))] = json.dumps(value)
                path.write_text("\n".join(lines))
        elif kind == 4:  # an arm folder with a hostile name
            name = rng.choice(HOSTILE_NAMES)

            def mutate(d, rng, name=name):
                (d / "lmeval" / "zero_shot").rename(d / "lmeval" / name.replace("/", "|"))

            names = ("results_", "out", "--arm-from")
        else:  # label options, one or two
            options = tuple(x for _ in range(rng.randint(1, 2)) for x in rng.choice(LABEL_OPTIONS))
            names = ("--arm-from", "--seed-from", "--scale-from", "results_", "regex")
            mutate = None
        yield Case(f"import-{i:03d}", (*IMPORT, *options), names, "out", ("lmeval",), mutate,
                   csv_cells_are_safe)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# results CSV and Parquet into stats and report


def results_rows(rng: random.Random) -> list[list[str]]:
    """A results table whose arm (and sometimes scale and value) cells are hostile."""
    arms = ["baseline", rng.choice(HOSTILE_NAMES), rng.choice(HOSTILE_NAMES)]
    rows = [["arm", "scale", "seed", "metric", "value"]]
    for arm in arms:
        for seed in range(3):
            value: object = 3 + rng.random() / 10
            if rng.random() < 0.1:
                value = rng.choice([math.inf, math.nan, 1e308, -0.0, "1_000", "=1+1", ""])
            rows.append([arm, rng.choice(["xs", "xs", "=x"]), str(seed), "val_loss", str(value)])
    return rows


def _write_csv(d: Path, rng: random.Random) -> None:
    (d / "res").mkdir()
    path = d / "res" / "results.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(results_rows(rng))
    if rng.random() < 0.3:
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))


def table_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        kind = i % 4
        if kind in (0, 1):
            argv = ("stats", "{d}/res", "--metric", "val_loss", "--json")
            out, check, slow = "none", None, False
        elif kind == 2:
            argv = ("report", "{d}/res", "--out", "{d}/out/r.html", "--markdown", "{d}/out/r.md")
            out, check, slow = "out", markdown_is_inert, True
        else:  # a symlinked figures folder or a foreign page where the report goes
            argv = ("report", "{d}/res", "--out", "{d}/out/r.html", "--markdown", "{d}/out/r.md")
            out, check, slow = "none", None, False

        def mutate(d, rng, kind=kind):
            _write_csv(d, rng)
            if kind == 3:
                (d / "out").mkdir()
                (d / "elsewhere").mkdir()
                if rng.random() < 0.5:
                    (d / "out" / "r_files").symlink_to(d / "elsewhere")
                else:
                    (d / "out" / "r.html").write_text("<html>mine</html>")

        names = ("results.csv", "r_files", "r.html", "val_loss", "res")
        yield Case(f"table-{i:03d}", argv, names, out, (), mutate, check, slow)


def parquet_cases(n: int) -> Iterator[Case]:
    """A results.parquet beside (or instead of) the CSV, damaged."""
    for i in range(n):

        def mutate(d, rng):
            pd = pytest.importorskip("pandas")
            (d / "res").mkdir()
            frame = pd.DataFrame({"arm": ["baseline"] * 3 + ["=cmd"] * 3, "scale": ["xs"] * 6,
                                  "seed": [0, 1, 2] * 2, "metric": ["val_loss"] * 6,
                                  "value": [3.0, 3.1, 3.05, 2.9, 2.95, 3.0]})  # fmt: skip
            path = d / "res" / "results.parquet"
            frame.to_parquet(path, index=False)
            path.write_bytes(mutate_bytes(path.read_bytes(), rng))

        argv = ("stats", "{d}/res/results.parquet", "--metric", "val_loss", "--json")
        yield Case(f"parquet-{i:03d}", argv, ("results.parquet", "res"), "none", (), mutate)


# ---------------------------------------------------------------------------------------------
# export hf


EXPORT = ("export", "hf", "{d}/run", "--out", "{d}/out")
OUT_SITUATIONS = ["new", "empty", "foreign", "link", "file", "earlier", "earlier+extra",
                  "checkpoint", "config-link"]  # fmt: skip
RUN_FILES = ["spec.json", "tokenizer.json", "ckpt/model.safetensors", "ckpt/meta.json",
             "ckpt/SHA256SUMS"]  # fmt: skip


def _situation(d: Path, situation: str, rng: random.Random) -> None:
    out = d / "out"
    if situation == "empty":
        out.mkdir()
    elif situation in ("foreign", "config-link"):
        out.mkdir()
        (out / "model-00001-of-00002.safetensors").write_bytes(b"theirs")
        if situation == "config-link":
            (d / "theirs.json").write_text("{}")
            (out / "config.json").symlink_to(d / "theirs.json")
    elif situation == "link":
        (d / "elsewhere").mkdir()
        out.symlink_to(d / "elsewhere")
    elif situation == "file":
        out.write_text("x")
    elif situation.startswith("earlier"):
        shutil.copytree(d / "hf", out)
        if situation.endswith("extra"):
            (out / "notes.txt").write_text("mine")


def export_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:export:{i}")
        situation = OUT_SITUATIONS[i % len(OUT_SITUATIONS)]
        target = rng.choice(RUN_FILES) if i >= len(OUT_SITUATIONS) else None
        argv = EXPORT
        if situation == "checkpoint":
            argv = ("export", "hf", "{d}/run", "--out", "{d}/run/checkpoint/step-000002")

        def mutate(d, rng, situation=situation, target=target):
            _situation(d, situation, rng)
            if target is not None:
                path = d / "run" / target
                if target.startswith("ckpt/"):
                    path = d / "run" / "checkpoint" / "step-000002" / target[5:]
                damage(path, rng, d / "outside.bin")

        heavy = target is None and situation in ("new", "empty", "earlier")
        names = ("out", "run", "spec.json", "tokenizer.json", "step-000002", "checkpoint")
        yield Case(f"export-{i:03d}", argv, names, "out", ("run", "hf"), mutate,
                   check=None, slow=heavy)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# eval of a Hugging Face folder


CONFIG_KEYS = [
    "num_hidden_layers", "hidden_size", "vocab_size", "intermediate_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "model_type", "tie_word_embeddings",
    "max_position_embeddings", "rms_norm_eps", "rope_parameters", "architectures", "hidden_act",
    "eos_token_id",
]  # fmt: skip
CONFIG_VALUES = [*HOSTILE[:14], 1, 2, 4, 3, 64, 300, 255, "bogus", "llama", "qwen3", None]
HF_FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "generation_config.json"]  # fmt: skip
EVAL = ("eval", "{d}/hf", "--suite", "{suite}", "--data-root", "{suite_dir}", "--limit", "2",
        "--json")  # fmt: skip


def eval_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:eval:{i}")
        if i % 2 == 0:
            key, value = rng.choice(CONFIG_KEYS), copy.deepcopy(rng.choice(CONFIG_VALUES))

            def mutate(d, rng, key=key, value=value):
                path = d / "hf" / "config.json"
                config = json.loads(path.read_text())
                config[key] = value
                path.write_text(json.dumps(config))
        else:
            target = rng.choice(HF_FILES)

            def mutate(d, rng, target=target):
                damage(d / "hf" / target, rng, d / "outside.bin")

        names = ("hf", "maximum length")  # a config that shrinks the context: the items' length
        yield Case(f"eval-{i:03d}", EVAL, names, "none", ("hf",), mutate)


CASES = [*import_cases(72), *table_cases(32), *parquet_cases(10), *export_cases(36),
         *eval_cases(36)]  # fmt: skip
PARAMS = [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]


# ---------------------------------------------------------------------------------------------
# the harness


@pytest.mark.parametrize("case", PARAMS)
def test_hostile_door_is_a_clean_exit(case: Case, tiny, tmp_path, monkeypatch, capsys):
    d = tmp_path / "case"
    d.mkdir()
    for name in case.start_from:
        shutil.copytree(tiny[name], d / name, symlinks=True)
    if case.mutate is not None:
        case.mutate(d, random.Random(f"{SEED}:{case.id}:mutate"))
    monkeypatch.chdir(d)
    monkeypatch.setattr(sys, "argv", sys.argv)
    suite = tiny["suite"]
    argv = [a.replace("{d}", str(d)).replace("{suite_dir}", str(suite.parent))
            .replace("{suite}", str(suite)) for a in case.argv]  # fmt: skip
    out = d / case.out
    before = snapshot(tmp_path, out)
    suite_before = snapshot(suite.parent, suite.parent / "-")
    code = assert_clean_exit(argv, case.names, capsys)
    if code == 0 and case.check is not None:
        case.check(out)
    assert snapshot(tmp_path, out) == before, "something outside the output changed"
    assert snapshot(suite.parent, suite.parent / "-") == suite_before


def test_the_case_count_is_the_issues_share() -> None:
    assert len(CASES) >= 170
