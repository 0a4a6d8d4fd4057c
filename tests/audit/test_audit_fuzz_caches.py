"""Issue 44, must-show 1: a cache that lies changes nothing. `stats` and `train` run once on an
empty cache; then one entry of the cache they filled (calibrated levels, design rates, the
token cache) is damaged: re-signed with a value no computation produces (a matching checksum:
only the reader's own range checks stand between it and the result), re-keyed, torn, zeroed,
truncated, emptied, swapped with another entry, or replaced by a FIFO, a folder or a link
out. The command must exit 0 with the clean run's output, and say at most two lines about
the cache, each naming the cache folder. (A level of 0.9 turned a verdict, a zeroed
tokens.bin trained to another loss.)"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import shutil
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import alarm_after, to_toml
from test_audit_fuzz import CONFIG, HOSTILE, SEED, TRAIN, mutate_bytes, results_csv

from archaudit.cli import main
from archaudit.files import value_checksum

STATS = ("stats", "{d}/results.csv", "--metric", "val_loss", "--json")
DAMAGE = [
    "re-signed", "bytes", "fifo", "folder", "link-out", "empty", "another-key", "swapped",
    "zeroed", "truncated",
]  # fmt: skip
IMPOSSIBLE = [-1, -0.5, 1.5, math.nan, math.inf, "0.02", None, True, [], {}]
"""Values no cached level (in [0, α]), rate or count can be. A checksum is no signature: a
re-signed value the computation could have produced is believed (docs/caches.md); one it
could not is recomputed."""
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # the command, and the fields of its JSON output that may change (a path, a speed)
    "stats": (STATS, ("source",)),
    "train": (TRAIN, ("tokens_per_s", "out", "wall_s", "elapsed_s")),
}
ALARM_S = 300
"""Far past any case's time: only a blocked read reaches it."""


@dataclass(frozen=True)
class CacheCase:
    id: str
    command: str
    """A key of COMMANDS."""
    damage: str


def cache_cases(n: int) -> list[CacheCase]:
    cases = []
    for i in range(n):
        rng = random.Random(f"{SEED}:cache:{i}")
        command = "train" if i % 4 == 3 else "stats"  # a training run costs more
        cases.append(CacheCase(f"cache-{command}-{i:03d}", command, rng.choice(DAMAGE)))
    return cases


CASES = cache_cases(40)


def resign(path: Path, rng: random.Random, forge_key: bool) -> None:
    """An entry with a hostile value (one leaf of it) or another key, and a checksum that
    matches its value."""
    entry = json.loads(path.read_text())
    if forge_key:
        entry["key"] = json.dumps({"forged": rng.choice(HOSTILE[:13])})
    else:
        entry["value"] = with_leaf(entry["value"], rng)
    entry["sha256"] = value_checksum(entry["value"])
    path.write_text(json.dumps(entry))


def with_leaf(value: Any, rng: random.Random) -> Any:
    """`value` with one leaf (or the whole, when it has none) set to an impossible value."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        return value | {key: with_leaf(value[key], rng)}
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        return [*value[:i], with_leaf(value[i], rng), *value[i + 1 :]]
    return copy.deepcopy(rng.choice(IMPOSSIBLE))


def damage_entry(
    path: Path, kind: str, rng: random.Random, entries: list[Path], outside: Path
) -> None:
    """One lie a cache entry can tell: edited, torn, zeroed, swapped, not a file, a link."""
    data = path.read_bytes()
    if kind in ("re-signed", "another-key") and path.suffix == ".json" and b'"sha256"' in data:
        resign(path, rng, forge_key=kind == "another-key")
    elif kind in ("fifo", "folder", "link-out"):
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        else:
            outside.write_bytes(mutate_bytes(data, rng))
            path.symlink_to(outside)
    elif kind == "swapped" and len(entries) > 1:
        path.write_bytes(rng.choice([e for e in entries if e != path]).read_bytes())
    elif kind == "zeroed":
        path.write_bytes(bytes(len(data)))
    elif kind in ("empty", "truncated"):
        path.write_bytes(b"" if kind == "empty" else data[: rng.randrange(max(len(data), 1))])
    else:
        path.write_bytes(mutate_bytes(data, rng) if data else b"\x00")


def forget_in_process() -> None:
    """A fresh process: what the disk caches hold is all that is left."""
    from archaudit.stats.simulation import calibrate, design_rate
    from archaudit.stats.simulation.sequential import sequential_design_rate

    calibrate.design_level.cache_clear()
    design_rate._rates.cache_clear()
    design_rate.arm_mde.cache_clear()
    sequential_design_rate.cache_clear()


def run_captured(argv: list[str]) -> tuple[int | str, str, str]:
    """`archaudit ARGV` through main(): (exit code or traceback, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = ["archaudit", *argv]
        try:
            main()
            code: int | str = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
        except BaseException:
            code = traceback.format_exc()
    return code, out.getvalue(), err.getvalue()


def run_command(d: Path, command: str, monkeypatch) -> tuple[int | str, dict, str]:
    """The command run in `d` with `d/cache` as its cache, as a fresh process would."""
    monkeypatch.chdir(d)
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(d / "cache"))
    monkeypatch.setattr(sys, "argv", sys.argv)
    shutil.rmtree(d / "run", ignore_errors=True)
    forget_in_process()
    code, out, err = run_captured([a.replace("{d}", str(d)) for a in COMMANDS[command][0]])
    return code, json.loads(out) if code == 0 else {}, err


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Iterator[dict[str, tuple[Path, dict]]]:
    """Per command: a folder with its input and the cache it filled, and its clean output."""
    made = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for command in COMMANDS:
            d = tmp_path_factory.mktemp(f"clean-{command}")
            rows = results_csv(random.Random(SEED))
            (d / "results.csv").write_text("".join(",".join(row) + "\n" for row in rows))
            (d / "cfg.toml").write_text(to_toml(CONFIG))
            code, data, err = run_command(d, command, monkeypatch)
            assert code == 0 and data, err
            made[command] = (d, data)
    yield made
    forget_in_process()


@pytest.fixture
def alarm() -> Iterator[None]:
    with alarm_after(ALARM_S):
        yield


def without(data: dict, free: tuple[str, ...]) -> dict:
    return {k: v for k, v in data.items() if k not in free}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_lying_cache_changes_nothing(case: CacheCase, clean, tmp_path, monkeypatch, alarm):
    template, expected = clean[case.command]
    d = Path(shutil.copytree(template, tmp_path / "case", symlinks=True))
    rng = random.Random(f"{SEED}:{case.id}:damage")
    entries = sorted(p for p in (d / "cache").rglob("*") if p.is_file())
    target = rng.choice(entries)
    damage_entry(target, case.damage, rng, entries, d / "outside.bin")
    code, data, err = run_command(d, case.command, monkeypatch)
    assert code == 0 and "Traceback" not in err, (target, err[-3000:])
    free = COMMANDS[case.command][1]
    assert without(data, free) == without(expected, free), target
    said = [line for line in err.splitlines() if str(d / "cache") in line]
    assert len(said) <= 2, err
