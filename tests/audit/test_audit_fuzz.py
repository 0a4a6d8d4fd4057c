"""Issue 23, must-show 1: generated hostile inputs through the real CLI entry point.

Audit files, suite files (and their JSONL data), `--set` overrides, train configs, results
CSVs and the files of finished run directories are mutated by seeded generators (the seed is
a string: `random.Random` hashes it with SHA-512, so the cases do not depend on
PYTHONHASHSEED), and each case runs `archaudit.cli.main` in this process, in its own folder.
Every case must end with exit code 0 or 2, never a Python traceback; a refusal's first line on
stderr names the file or key at fault; and nothing outside the output folder the command was
given changes (the token cache, `$ARCHAUDIT_CACHE`, lives outside the case folder).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import TINY, to_toml

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import main
from archaudit.config import load_config
from archaudit.rundir import CHECKPOINT_META, CHECKSUMS, checkpoint_dirs
from archaudit.train import train

SEED = "archaudit-fuzz-1"
DEEP = 3000  # nesting depth of the deep-array cases (past Python's recursion limit)


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, bytes]
    """Written into the case folder (relative path → content)."""
    argv: tuple[str, ...]
    """`{d}` stands for the case folder."""
    names: tuple[str, ...]
    """A refusal's first line must contain one of these (the file or key at fault)."""
    out: str
    """The output folder the command is given, relative to the case folder."""
    start_from: str = ""
    """A finished run fixture copied into the case folder first ("audit" or "train")."""
    mutate: Callable[[Path, random.Random], None] | None = None
    """An in-place change of the copied fixture (for run-directory cases)."""


# ---------------------------------------------------------------------------------------------
# values and byte mutations


HOSTILE = [
    0, -1, 3, 10**30, -(10**30), 1e308, -1e308, math.inf, -math.inf, math.nan, 0.5, True, "",
    "x" * 300, "qk_nrom", "../../outside", "a\u0000b", "é\u202e", [], [1, "a"], {}, {"a": 1},
    {"preset": "tiny"}, "auto", "cuda:7", "quantum", "tpu9", "bpe:1", "demo",
]  # fmt: skip


def deep_array(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def mutate_bytes(text: bytes, rng: random.Random) -> bytes:
    """One byte-level damage: truncation, junk, not UTF-8, NULs, a BOM, deep nesting, a
    duplicated or dropped line."""
    kind = rng.randrange(8)
    cut = rng.randrange(len(text) + 1)
    if kind == 0:
        return text[:cut]
    if kind == 1:
        return text[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if kind == 2:
        return text[:cut] + b"\xff\xfe\xc3(" + text[cut:]
    if kind == 3:
        return text[:cut] + b"\x00" * 8 + text[cut:]
    if kind == 4:
        return b"\xef\xbb\xbf" + text
    if kind == 5:
        return text + b"\nzz = " + deep_array().encode() + b"\n"
    lines = text.splitlines(keepends=True) or [b""]
    i = rng.randrange(len(lines))
    return b"".join(lines[:i] + [lines[i]] * (2 if kind == 6 else 0) + lines[i + 1 :])


def set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


def mutated_tree(base: dict[str, Any], paths: list[str], rng: random.Random) -> tuple[bytes, str]:
    """`base` with one or two dotted paths set to hostile values, as TOML; the last key set."""
    tree = copy.deepcopy(base)
    key = ""
    for _ in range(rng.randint(1, 2)):
        key = rng.choice(paths)
        set_path(tree, key.split("."), copy.deepcopy(rng.choice(HOSTILE)))
    return to_toml(tree).encode(), key


# ---------------------------------------------------------------------------------------------
# generators


AUDIT = copy.deepcopy(TINY) | {"eval": {"suite": ""}}
AUDIT["recipe"] = {**AUDIT["recipe"], "steps": 2, "checkpoint_every": 1, "eval_every": 2}
AUDIT_PATHS = [
    "name", "arms", "runs_dir", "tracker", "plugins", "seeds", "seeds.arms", "seeds.noise_floor",
    "seeds.policy", "seeds.max", "seeds.anchors", "eval", "eval.suite", "eval.limit", "recipe",
    "recipe.steps", "recipe.lr", "recipe.batch_tokens", "recipe.device", "recipe.tokenizer",
    "recipe.corpus", "recipe.precision", "recipe.warmup_frac", "recipe.lr_peak", "scales",
    "scales.xs", "scales.xs.d_model", "scales.xs.n_heads", "scales.xs.context_length",
    "scales.xs.preset", "scales.xs.tokens", "scales.xs.attention", "scales.xs.attention.score",
    "scales.xs.mlp.name", "scales.x" * 1 + "y" * 300, "baselines", "baselines.b.d_model",
    "executor", "executor.kind", "executor.workers", "executor.heartbeat_s", "surprise",
]  # fmt: skip
RUNS = "out"
PLAN = ("plan", "{d}/audit.toml", "--no-probe", "--json", "--runs-dir", f"{{d}}/{RUNS}")


def audit_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:audit:{i}")
        if rng.random() < 0.6:
            text, key = mutated_tree(AUDIT, AUDIT_PATHS, rng)
        else:
            text, key = mutate_bytes(to_toml(AUDIT).encode(), rng), ""
        yield Case(f"audit-{i:03d}", {"audit.toml": text}, PLAN, ("audit.toml", key), RUNS)


OVERRIDE_KEYS = [*AUDIT_PATHS, "scales.tnyi.d_model", "recipe..lr", ".", "recipe.", "model.x"]
OVERRIDE_VALUES = [
    "inf", "nan", "-inf", "-1", "0", "1e308", "99999999999999999999999", "quantum", "tpu9",
    "[1,2]", "{a=1}", '"x"', "true", "", deep_array(), "é", "x" * 300, "{ preset = 'tiny' }",
    '"cuda:3"', '["qk_norm"]', "[[1]]", "'unterminated", "=",
]  # fmt: skip


def override_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:set:{i}")
        sets = [
            (rng.choice(OVERRIDE_KEYS), rng.choice(OVERRIDE_VALUES))
            for _ in range(rng.randint(1, 3))
        ]
        argv = [*PLAN]
        for key, value in sets:
            argv += ["--set", f"{key}={value}" if rng.random() < 0.95 else key]
        names = ("audit.toml", *(key for key, _ in sets))
        yield Case(
            f"set-{i:03d}", {"audit.toml": to_toml(AUDIT).encode()}, tuple(argv), names, RUNS
        )


SUITE = {
    "name": "s",
    "tasks": [
        {"name": "mc", "format": "multiple_choice", "path": "mc.jsonl", "limit": 4},
    ],
}
SUITE_PATHS = [
    "name",
    "tasks",
    "defaults",
    "heldout",
    "heldout.path",
    "description",
    "surprise",
]
TASK_KEYS = ["name", "format", "path", "limit", "metric", "fields", "params", "surprise"]
ITEMS = [{"query": "a b a", "choices": ["b", "a"], "gold": 0}] * 3
ITEM_KEYS = ["query", "choices", "gold", "surprise"]


def jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def suite_cases(n: int) -> Iterator[Case]:
    audit = to_toml(AUDIT | {"eval": {"suite": "suite.toml"}}).encode()
    for i in range(n):
        rng = random.Random(f"{SEED}:suite:{i}")
        suite, items, blamed = to_toml(SUITE).encode(), jsonl(ITEMS), "suite.toml"
        kind = rng.randrange(4)
        if kind == 0:
            suite, _ = mutated_tree(SUITE, SUITE_PATHS, rng)
        elif kind == 1:
            tree = copy.deepcopy(SUITE)
            tree["tasks"][0][rng.choice(TASK_KEYS)] = copy.deepcopy(rng.choice(HOSTILE))
            suite = to_toml(tree).encode()
        elif kind == 2:
            suite = mutate_bytes(suite, rng)
        else:
            rows = copy.deepcopy(ITEMS)
            rows[rng.randrange(len(rows))][rng.choice(ITEM_KEYS)] = copy.deepcopy(
                rng.choice(HOSTILE)
            )
            items = mutate_bytes(jsonl(rows), rng) if rng.random() < 0.5 else jsonl(rows)
            blamed = "mc.jsonl"
        files = {"audit.toml": audit, "suite.toml": suite, "mc.jsonl": items}
        yield Case(f"suite-{i:03d}", files, PLAN, (blamed,), RUNS)


CONFIG = {
    "model": {"d_model": 16, "n_layers": 1, "n_heads": 2, "context_length": 16},
    "recipe": {
        "steps": 1, "batch_tokens": 64, "corpus_chars": 20_000, "eval_batches": 1,
        "threads": 1, "device": "cpu",
    },
}  # fmt: skip
CONFIG_PATHS = [
    "model", "recipe", "model.d_model", "model.n_heads", "model.context_length", "model.vocab_size",
    "model.attention.score", "model.attention", "model.head.name", "model.extra", "model.dropout",
    "recipe.steps", "recipe.lr", "recipe.grad_accumulation", "recipe.device", "recipe.corpus",
    "recipe.tokenizer", "recipe.beta2", "recipe.keep_checkpoints", "surprise",
]  # fmt: skip
TRAIN = ("train", "--config", "{d}/cfg.toml", "--out", "{d}/run", "--json")


def config_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:config:{i}")
        if rng.random() < 0.7:
            text, key = mutated_tree(CONFIG, CONFIG_PATHS, rng)
        else:
            text, key = mutate_bytes(to_toml(CONFIG).encode(), rng), ""
        yield Case(f"config-{i:03d}", {"cfg.toml": text}, TRAIN, ("cfg.toml", key), "run")


CSV_CELLS = [
    "1e308", "-1e308", "inf", "nan", "-0", "", "x", "1" * 5000, "é", "1e-320", "3,4", '"',
    "baseline", " ", "-1", "0x10", "1_000",
]  # fmt: skip


def results_csv(rng: random.Random) -> list[list[str]]:
    rows = [["arm", "scale", "seed", "metric", "value"]]
    for arm, level in (("baseline", 3.0), ("qk_norm", 2.99)):
        for seed in range(3):
            rows.append([arm, "s", str(seed), "val_loss", repr(level + rng.random() * 0.01)])
    return rows


def csv_cases(n: int) -> Iterator[Case]:
    stats = ("stats", "{d}/results.csv", "--metric", "val_loss", "--json")
    for i in range(n):
        rng = random.Random(f"{SEED}:csv:{i}")
        rows = results_csv(rng)
        kind = rng.randrange(4)
        if kind <= 1:
            for _ in range(kind + 1):
                row = rng.randrange(len(rows))
                rows[row][rng.randrange(5)] = rng.choice(CSV_CELLS)
        elif kind == 2:
            rows.insert(rng.randrange(1, len(rows)), rng.choice(rows)[: rng.randrange(6)])
        text = "".join(",".join(row) + "\n" for row in rows).encode()
        if kind == 3:
            text = mutate_bytes(text, rng)
        yield Case(f"csv-{i:03d}", {"results.csv": text}, stats, ("results.csv",), "(none)")


RUN = "audit/runs/fuzz/baseline/xs/seed-0"
RUN_FILES = [
    "run.json", "DONE", "FAILED", "claim.0", "metrics.jsonl", "attempts.jsonl", "spec.json",
    "train.json", "env.json", "events.jsonl",
]  # fmt: skip
AUDIT_FILES = ["audit.json", "results.csv"]


def first_object(text: bytes) -> dict[str, Any] | None:
    """The JSON object a file (or its first line) holds, if any."""
    for candidate in (text, text.split(b"\n", 1)[0]):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and data:
            return data
    return None


def damage(path: Path, rng: random.Random, outside: Path) -> None:
    """Replace the file at `path` with hostile content (or a folder, or a link out)."""
    original = path.read_bytes() if path.is_file() else b'{"id": "x"}'
    kind = rng.randrange(9)
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == 0:
        path.mkdir()
    elif kind == 1:
        outside.write_bytes(original)
        path.symlink_to(outside)
    elif kind == 2:
        path.write_text(rng.choice(["[]", "3", '"x"', "{}", "null", '{"id": 3}']))
    elif kind == 3:
        path.write_text(deep_array(100_000))
    elif kind == 4 and first_object(original):
        data = first_object(original)
        data[rng.choice([*sorted(data), "surprise"])] = copy.deepcopy(rng.choice(HOSTILE))
        path.write_text(json.dumps(data))
    else:
        path.write_bytes(mutate_bytes(original, rng))


def audit_dir_cases(n: int) -> Iterator[Case]:
    commands = [("status",)]
    for i in range(n):
        rng = random.Random(f"{SEED}:rundir:{i}")
        target = rng.choice(
            [*(f"{RUN}/{f}" for f in RUN_FILES), *(f"audit/runs/fuzz/{f}" for f in AUDIT_FILES)]
        )
        command = rng.choice(commands)

        def mutate(d: Path, rng: random.Random, target: str = target) -> None:
            damage(d / target, rng, d / "outside.bin")

        argv = (*command, "{d}/audit/runs/fuzz", "--json")
        names = (Path(target).name, "seed-0" if target.startswith(RUN) else "")
        yield Case(f"rundir-{i:03d}", {}, argv, names, "audit/runs/fuzz", "audit", mutate)


TRAIN_FILES = ["spec.json", "metrics.jsonl", "events.jsonl", "env.json", "checkpoint"]
CKPT_FILES = [CHECKPOINT_META, CHECKSUMS, "train_state.pt", "model.safetensors"]


def train_dir_cases(n: int) -> Iterator[Case]:
    resume = ("train", "--config", "{d}/cfg.toml", "--out", "{d}/run", "--json")
    for i in range(n):
        rng = random.Random(f"{SEED}:traindir:{i}")
        target = rng.choice([*TRAIN_FILES, *(f"ckpt/{f}" for f in CKPT_FILES)])

        def mutate(d: Path, rng: random.Random, target: str = target) -> None:
            (d / "run" / "train.json").unlink()  # the rerun resumes from the last checkpoint
            path = d / "run" / target
            if target.startswith("ckpt/"):
                path = checkpoint_dirs(d / "run")[-1] / target[len("ckpt/") :]
            damage(path, rng, d / "outside.bin")

        names = (Path(target).name, "step-0000" if target.startswith("ckpt/") else "")
        yield Case(f"traindir-{i:03d}", {}, resume, names, "run", "train", mutate)


CASES = [
    *audit_cases(80), *override_cases(60), *suite_cases(50), *config_cases(40),
    *csv_cases(50), *audit_dir_cases(45), *train_dir_cases(25),
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# fixtures and the harness


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished two-run audit and a finished train run, copied into every case that damages
    run-directory files."""
    root = tmp_path_factory.mktemp("fuzz-fixtures")
    audit = root / "a" / "audit"  # a case folder holds audit/ (its file and runs/)
    audit.mkdir(parents=True)
    (audit / "audit.toml").write_text(to_toml(AUDIT | {"name": "fuzz", "arms": []}))
    run_audit(make_plan(load_audit(audit / "audit.toml")), live=False)
    trained = root / "train"
    trained.mkdir()
    config = {**CONFIG, "recipe": {**CONFIG["recipe"], "steps": 2}}
    (trained / "cfg.toml").write_text(to_toml(config))
    train(*load_config(trained / "cfg.toml"), trained / "run")
    return {"audit": audit.parent, "train": trained}


def snapshot(root: Path, skip: Path) -> dict[str, tuple]:
    """Every entry under `root` but `skip` (the output folder): kind, size, mtime, link target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        for name in [*dirnames, *filenames]:
            path = here / name
            if path == skip:
                continue
            info = path.lstat()
            link = os.readlink(path) if path.is_symlink() else ""
            # a folder's own size and time change when the output folder appears in it
            state = (info.st_size, info.st_mtime_ns) if not path.is_dir() else ()
            found[str(path.relative_to(root))] = (info.st_mode, *state, link)
    return found


def run_cli(argv: list[str], capsys) -> tuple[int | str, str]:
    """`archaudit ARGV` through main(); (exit code, stderr). An exception that escapes main is
    returned as its traceback in place of the code."""
    sys.argv = ["archaudit", *argv]
    try:
        main()
        code: int | str = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    except BaseException:
        code = traceback.format_exc()
    return code, capsys.readouterr().err


def lay_out(case: Case, d: Path, seed: str, monkeypatch) -> None:
    """Write the case's files into `d`, damage them as it says, and run from there."""
    for name, content in case.files.items():
        (d / name).write_bytes(content)
    if case.mutate is not None:
        case.mutate(d, random.Random(f"{seed}:{case.id}:mutate"))
    monkeypatch.chdir(d)
    monkeypatch.setenv("ARCHAUDIT_DATA", str(d))
    monkeypatch.setattr(sys, "argv", sys.argv)


def assert_clean_exit(argv: list[str], names: tuple[str, ...], capsys) -> int:
    """Run the CLI on `argv`: exit 0 or 2, no traceback, and a refusal's error line names one of
    `names` (the bad key, file or flag)."""
    code, err = run_cli(argv, capsys)
    assert code in (0, 2), f"exit {code!r}\n{err[-3000:]}"
    assert "Traceback" not in err, err[-3000:]
    if code == 2:
        lines = err.splitlines()
        first = next(
            (line for line in lines if line.startswith("error:")), lines[0] if lines else ""
        )
        assert any(name and name in first for name in names), (names, err[-3000:])
    return code


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_a_clean_exit(case: Case, finished, tmp_path, monkeypatch, capsys):
    d = tmp_path / "case"
    if case.start_from:
        shutil.copytree(finished[case.start_from], d, symlinks=True)
    d.mkdir(exist_ok=True)
    lay_out(case, d, SEED, monkeypatch)
    out = d / case.out
    before = snapshot(tmp_path, out)
    assert_clean_exit([a.replace("{d}", str(d)) for a in case.argv], case.names, capsys)
    assert snapshot(tmp_path, out) == before, "something outside the output folder changed"
