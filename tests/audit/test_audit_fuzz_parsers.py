"""Issue 36, item 7 and must-show 1 (the parsers' share): generated hostile inputs for every parser
added since the first fuzz set, through the real CLI entry point.

Model configs of the MoE, latent-attention, sharing, residual and objective tables (as audit
files and as `--set` values), a trained run's spec.json, `simulate-null` options, CSV tables for
`stats` and `stats items`, and benchmark files (key-value retrieval JSONL, plain and gzip, with
their params; label side files) are mutated by seeded generators. The harness is
test_audit_fuzz.py's: every case must exit 0 or 2 without a traceback, a refusal's first line
names the file, key or flag at fault, and nothing outside the output folder changes.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import to_toml
from test_audit_fuzz import (
    AUDIT,
    CONFIG,
    HOSTILE,
    PLAN,
    RUNS,
    Case,
    assert_clean_exit,
    deep_array,
    jsonl,
    lay_out,
    mutate_bytes,
    snapshot,
)

from archaudit.config import load_config
from archaudit.train import train

SEED = "archaudit-fuzz-parsers-1"

# ---------------------------------------------------------------------------------------------
# model configs: the MoE, latent, sharing, residual and objective tables

SCALE = "scales.xs"
MODEL_KEYS = [
    "mlp.name", "moe.experts", "moe.top_k", "moe.shared_experts", "moe.capacity_factor",
    "moe.balance_loss", "moe.router_z_loss", "moe.routing", "moe.expert_hidden",
    "moe.normalize_top_k", "moe.shared_gate", "attention.name", "attention.latent_rank",
    "attention.latent_q_rank", "attention.latent_rope_dim", "sharing.blocks", "sharing.order",
    "residual.name", "residual.layerscale_init", "objective.mtp_heads", "objective.mtp_weight",
    "objective.z_loss", "stream.n_streams", "position.rope_fraction", "attention.ssmax_init",
]  # fmt: skip
MODEL_VALUES = [
    *HOSTILE, 4096, 4097, 2**31, 1e-300, -0.0, 31, 32, 33, 1.5, "moe", "latent", "expert_choice",
    "immediate", "layerscale", "cycle", 2**63 - 1,
]  # fmt: skip
ACTIVE = {"mlp": {"name": "moe"}, "attention": {"name": "latent"}, "sharing": {"blocks": 1}}
"""Tables a case may switch on first, so that their fields are read, not ignored."""


def _audit_with(tree: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    tree = copy.deepcopy(tree)
    scale = tree["scales"]["xs"] | {"n_layers": 2}
    for table, value in ACTIVE.items():
        if rng.random() < 0.4:
            scale[table] = dict(value)
    tree["scales"]["xs"] = scale
    return tree


def model_cases(n: int) -> Iterator[Case]:
    paths = [f"{SCALE}.{key}" for key in MODEL_KEYS]
    for i in range(n):
        rng = random.Random(f"{SEED}:model:{i}")
        base = _audit_with(AUDIT, rng)
        tree, key = copy.deepcopy(base), ""
        for _ in range(rng.randint(1, 2)):
            key = rng.choice(paths)
            node = tree["scales"]["xs"]
            *tables, leaf = key.removeprefix(f"{SCALE}.").split(".")
            for table in tables:
                node = node.setdefault(table, {})
            node[leaf] = copy.deepcopy(rng.choice(MODEL_VALUES))
        names = ("audit.toml", key.rsplit(".", 1)[-1])
        yield Case(f"model-{i:03d}", {"audit.toml": to_toml(tree).encode()}, PLAN, names, RUNS)


SET_VALUES = [
    "inf", "nan", "-inf", "1e999", "-1e999", "1_000", "0x10", "1e-400", "99999999999999999999999",
    "2\nmodel.d_model = 3", "0.5\r", "1\x00", "'moe'\nx = 1", '"latent"', '"expert_choice"',
    "true", "[1]", "{experts = 2}", deep_array(), "-0", "4097", "1e308", "é",
]  # fmt: skip


def set_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:set:{i}")
        base = _audit_with(AUDIT, rng)
        argv, keys = [*PLAN], []
        for _ in range(rng.randint(1, 2)):
            key = f"{SCALE}.{rng.choice(MODEL_KEYS)}"
            argv += ["--set", f"{key}={rng.choice(SET_VALUES)}"]
            keys.append(key)
        names = ("audit.toml", "override", *keys)
        yield Case(f"set-{i:03d}", {"audit.toml": to_toml(base).encode()}, tuple(argv), names, RUNS)


# ---------------------------------------------------------------------------------------------
# a trained run's spec.json, read by `eval`

KV_ROWS = [
    {"ordered_kv_records": [[f"k{j}", f"v{j}"] for j in range(4)], "key": "k2", "value": "v2"},
    {"ordered_kv_records": [[f"a{j}", f"b{j}"] for j in range(4)], "key": "a0", "value": "b0"},
]
KV_TASK = {"name": "kv", "format": "json_kv", "path": "kv.jsonl", "limit": 1,
           "params": {"keys": 2, "max_new_tokens": 3, "positions": [0]}}  # fmt: skip
EVAL = ("eval", "{d}/run", "--suite", "{d}/suite.toml", "--data-root", "{d}", "--json", "-q")


def _suite(*tasks: dict[str, Any]) -> bytes:
    return to_toml({"name": "s", "tasks": list(tasks)}).encode()


def _damaged_spec(spec: dict[str, Any], rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return mutate_bytes(json.dumps(spec).encode(), rng)
    spec = copy.deepcopy(spec)
    if kind == 1:
        spec[rng.choice([*sorted(spec), "surprise"])] = copy.deepcopy(rng.choice(HOSTILE))
    elif kind == 2:
        key = rng.choice([*sorted(spec["model"]), "moe", "surprise"])
        spec["model"][key] = copy.deepcopy(rng.choice(MODEL_VALUES))
    else:
        return json.dumps(rng.choice([[], "x", 3, None, {"model": []}])).encode()
    return json.dumps(spec).encode()


def spec_cases(n: int) -> Iterator[Case]:
    for i in range(n):

        def mutate(d: Path, rng: random.Random) -> None:
            spec = json.loads((d / "run" / "spec.json").read_text())
            (d / "run" / "spec.json").write_bytes(_damaged_spec(spec, rng))

        files = {"suite.toml": _suite(KV_TASK), "kv.jsonl": jsonl(KV_ROWS)}
        names = ("spec.json", "/run")
        yield Case(f"spec-{i:03d}", files, EVAL, names, "(none)", "train", mutate)


# ---------------------------------------------------------------------------------------------
# benchmark files: key-value retrieval (plain and gzip) and label side files

MC = {"name": "mc", "format": "multiple_choice", "path": "mc.jsonl", "labels": "labels.lst",
      "fields": {"choices": ["a", "b"]}, "prompt": "Q: {q}\nA:", "limit": 2}  # fmt: skip
MC_ROWS = [{"q": "x y", "a": "x", "b": "y"}, {"q": "y x", "a": "y", "b": "x"}]
KV_PARAMS = ["keys", "positions", "max_new_tokens", "match", "surprise"]
KV_PARAM_VALUES = [*HOSTILE, 2, 5, -5, [0, -1], [4], 1025, "exact"]


def benchmark_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:bench:{i}")
        kind, task, blamed = rng.randrange(4), copy.deepcopy(KV_TASK), "kv.jsonl"
        rows = jsonl(KV_ROWS)
        files: dict[str, bytes] = {}
        if kind == 0:  # params
            task["params"][rng.choice(KV_PARAMS)] = copy.deepcopy(rng.choice(KV_PARAM_VALUES))
            blamed = "params"
        elif kind == 1:  # the published gzip, whole or damaged
            task["path"], packed = "kv.jsonl.gz", gzip.compress(rows, mtime=0)
            files["kv.jsonl.gz"] = packed if rng.random() < 0.3 else mutate_bytes(packed, rng)
            blamed = "kv.jsonl.gz"
        elif kind == 2:  # a damaged plain file
            rows = mutate_bytes(rows, rng)
        else:  # a label side file
            task, blamed = copy.deepcopy(MC), "labels.lst"
            labels = rng.choice([b"0\n1\n", b"1\n", b"2\n0\n", b"x\n1\n", b"\xff\xfe\n", b""])
            files |= {"mc.jsonl": jsonl(MC_ROWS), "labels.lst": mutate_bytes(labels, rng)}
        files |= {"suite.toml": _suite(task), "kv.jsonl": rows}
        names = (blamed, "suite.toml", "task 'kv'", "task 'mc'", "mc.jsonl")
        yield Case(f"bench-{i:03d}", files, EVAL, names, "(none)", "train")


# ---------------------------------------------------------------------------------------------
# simulate-null options

SIMULATE_OPTIONS: dict[str, list[str]] = {
    "--noise": ["lognormal:800", "lognormal:inf", "lognormal:-1", "lognormal:nan", "hetero:1e308",
                "hetero:6:100", "hetero:6:0", "hetero:6:2.5", "hetero:0", "hetero:nan:1", "t3",
                "panel", "normal:1", "lognormal:", "", "hetero:6:3:1", "hetero:6:19"],
    "--effect": ["nan", "inf", "-inf", "1e308", "-3", "0", "0.5", "101"],
    "--effect-arms": ["0", "1", "-1", "20", "2147483648"],
    "--n-arms": ["0", "-1", "1", "100000000", "5000000", "3"],
    "--seeds": ["0", "1", "2", "-3", "100000000"],
    "--baseline-seeds": ["1", "2", "0", "10000000000"],
    "--audits": ["0", "-5", "10", "100000000000"],
    "--alpha": ["0", "1", "nan", "-0.1", "0.05", "inf"],
    "--seed": ["-1", "0", "99999999999999999999"],
    "--correction": ["holm", "dunnett", "none", "bonferroni", "bh", "quantum"],
    "--reference": ["t", "normal", "z"],
}  # fmt: skip
SIMULATE_NAMES = (
    "noise", "effect", "arm", "seed", "audit", "alpha", "memory", "design", "baseline",
    "correction", "reference", "dunnett", "--",
)  # fmt: skip


def simulate_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:simulate:{i}")
        argv = ["simulate-null", "--audits", "20", "--json"]
        for flag in rng.sample(sorted(SIMULATE_OPTIONS), rng.randint(1, 3)):
            argv += [flag, rng.choice(SIMULATE_OPTIONS[flag])]
        if rng.random() < 0.25:
            argv.append("--sequential")
        yield Case(f"simulate-{i:03d}", {}, tuple(argv), SIMULATE_NAMES, "(none)")


# ---------------------------------------------------------------------------------------------
# CSV tables for stats and stats items

CELLS = ["1_000", "3.", "nan", "inf", "1e999", "", "-0", "0x10", '"', "baseline", "133K", "1e-320"]


def results_rows(rng: random.Random) -> list[list[str]]:
    """A results table; a third of them puts the baseline and the arm at two scales (lm-eval's
    parameter-count labels: 133K and 134K)."""
    split = rng.random() < 0.34
    rows = [["arm", "scale", "seed", "metric", "value"]]
    for arm, scale in (("baseline", "133K"), ("qk_norm", "134K" if split else "133K")):
        for seed in range(3):
            rows.append([arm, scale, str(seed), "acc", f"{0.5 + rng.random() / 10:.4f}"])
    return rows


def items_rows(rng: random.Random) -> list[list[str]]:
    rows = [["arm", "scale", "seed", "task", "item", "correct"]]
    scale = "134K" if rng.random() < 0.5 else "133K"
    for arm, at in (("baseline", "133K"), ("qk_norm", scale)):
        rows += [[arm, at, "0", "t", str(k), str(rng.randrange(2))] for k in range(4)]
    return rows


def csv_cases(n: int) -> Iterator[Case]:
    for i in range(n):
        rng = random.Random(f"{SEED}:csv:{i}")
        items = rng.random() < 0.3
        rows = items_rows(rng) if items else results_rows(rng)
        if rng.random() < 0.5:
            rows[rng.randrange(1, len(rows))][rng.randrange(len(rows[0]))] = rng.choice(CELLS)
        text = "".join(",".join(row) + "\n" for row in rows).encode()
        kind = rng.randrange(4)
        if kind == 0:
            text = text[: rng.randrange(len(text) - 1)]  # cut, maybe mid-value
        elif kind == 1:
            text = mutate_bytes(text, rng)
        elif kind == 2:
            text = text.replace(b"\n", b"\r\n")
        if items:
            argv = ("stats", "items", "{d}/t.csv", "--scale", rng.choice(["133K", "134K", "x"]))
        else:
            argv = ("stats", "{d}/t.csv", "--metric", "acc", "--scale", "133K")
            if rng.random() < 0.3:
                argv += ("--exclude", rng.choice(["baseline", "qk_norm", "nope"]))
        yield Case(f"csv-{i:03d}", {"t.csv": text}, (*argv, "--json"), ("t.csv", "--"), "(none)")


CASES = [
    *model_cases(45), *set_cases(30), *spec_cases(15), *benchmark_cases(25),
    *simulate_cases(45), *csv_cases(40),
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the harness (test_audit_fuzz.py's rules), with a trained run as the one fixture


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-step run, copied to `<case>/run` by the cases that read one."""
    root = tmp_path_factory.mktemp("fuzz-parsers")
    config = {**CONFIG, "recipe": {**CONFIG["recipe"], "steps": 2}}
    (root / "cfg.toml").write_text(to_toml(config))
    train(*load_config(root / "cfg.toml"), root / "run")
    return root / "run"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_parser_input_is_a_clean_exit(case: Case, trained, tmp_path, monkeypatch, capsys):
    d = tmp_path / "case"
    d.mkdir()
    if case.start_from:
        shutil.copytree(trained, d / "run")
    lay_out(case, d, SEED, monkeypatch)
    out = d / case.out
    before = snapshot(tmp_path, out)
    assert_clean_exit([a.replace("{d}", str(d)) for a in case.argv], case.names, capsys)
    assert snapshot(tmp_path, out) == before, "something outside the output folder changed"


def test_the_parsers_fuzz_set_is_large_enough() -> None:
    """Must-show 1: this file's share is at least 150 generated cases."""
    assert len(CASES) >= 150 and len({c.id for c in CASES}) == len(CASES)
