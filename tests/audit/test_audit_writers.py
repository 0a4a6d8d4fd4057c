"""Issue 36, must-show 2: every writer owns its output. For each command that writes, a foreign
file (or folder) and a symbolic link are put where its output goes; the command refuses in one
line that names the place and the option that chooses another, and both stay untouched (the
link, its target outside, and the foreign files: same bytes, same times)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from audit_helpers import TINY, to_toml
from test_audit_fuzz import run_cli, snapshot

RESULTS = "arm,scale,seed,metric,value\n" + "".join(
    f"{arm},xs,{seed},val_loss,{3 + seed / 10 + (arm == 'x') / 50}\n"
    for arm in ("baseline", "x")
    for seed in range(3)
)
FOREIGN = b"someone else's file\n"


@dataclass(frozen=True)
class Door:
    name: str
    argv: Callable[[Path, dict[str, Path]], list[str]]
    target: str
    """Where the output goes, relative to the case folder."""
    flag: str
    """The option a refusal names."""
    foreign: dict[str, bytes] = field(default_factory=lambda: {"": FOREIGN})
    """What the foreign variant puts at the target (relative to it; "" is the target itself)."""
    link_to_dir: bool = False
    setup: Callable[[Path, dict[str, Path]], None] = lambda d, fx: None
    kinds: tuple[str, ...] = ("foreign", "link")


def _results_dir(d: Path, fx: dict[str, Path]) -> None:
    (d / "res").mkdir()
    (d / "res" / "results.csv").write_text(RESULTS)


def _audit(d: Path, fx: dict[str, Path]) -> None:
    (d / "audit.toml").write_text(to_toml(TINY | {"name": "w"}))


def _run_copy(d: Path, fx: dict[str, Path]) -> None:
    shutil.copytree(fx["run"], d / "run")
    (d / "text.txt").write_text("the cat sat on the mat and the dog ran far away. " * 20)


def _status(d: Path, fx: dict[str, Path]) -> None:
    (d / "V").mkdir()


DOORS = [
    Door("export", lambda d, fx: ["export", "hf", str(fx["run"]), "--out", f"{d}/out"], "out",
         "--out", {"config.json": b"{}", "model-00001-of-00002.safetensors": FOREIGN},
         link_to_dir=True),
    Door("import", lambda d, fx: ["import", "lm-eval", str(fx["lmeval"]), "--arm-from", "parent",
                                  "--out", f"{d}/out"], "out", "--out",
         {"results.csv": FOREIGN, "items.csv": FOREIGN}, link_to_dir=True),
    Door("report", lambda d, fx: ["report", f"{d}/res/results.csv"], "res/results.report.html",
         "--out", setup=_results_dir),
    Door("report-markdown", lambda d, fx: ["report", f"{d}/res", "--out", f"{d}/r.html",
                                           "--markdown", f"{d}/r.md"], "r_files", "--markdown",
         {"headline.svg": FOREIGN}, link_to_dir=True, setup=_results_dir),
    Door("run-runs-dir", lambda d, fx: ["run", f"{d}/audit.toml", "--runs-dir", f"{d}/V"],
         "V/w", "--runs-dir", {"results.csv": FOREIGN}, link_to_dir=True, setup=_audit),
    Door("status-report", lambda d, fx: ["status", f"{d}/V/w", "--report"], "V/w/audit.json",
         "audit file", {"": b"{}"}, setup=_status),
    Door("eval-out", lambda d, fx: ["eval", str(fx["hf"]), "--suite", str(fx["suite"]),
                                    "--data-root", str(fx["suite"].parent), "--out",
                                    f"{d}/res.json"], "res.json", "--out"),
    Door("init-force", lambda d, fx: ["init", f"{d}/audit.toml", "--force"], "audit.toml",
         "audit file", {}),
    Door("init", lambda d, fx: ["init", f"{d}/audit.toml"], "audit.toml", "--force",
         kinds=("foreign",)),
    Door("diagnose", lambda d, fx: ["diagnose", "bottleneck", f"{d}/run", "--data",
                                    f"{d}/text.txt", "--tokens", "64", "--window", "16"],
         "run/diagnostics", "--out", {"bottleneck.json": b'{"mine": 1}'}, link_to_dir=True,
         setup=_run_copy),
    Door("data-prepare", lambda d, fx: ["data", "prepare", f"{d}/text.txt", "--out",
                                        f"{d}/corpus"], "corpus", "--out",
         {"tokenizer.json": FOREIGN}, link_to_dir=True,
         setup=lambda d, fx: (d / "text.txt").write_text("hello world " * 50)),
]  # fmt: skip
VARIANTS = [(door, kind) for door in DOORS for kind in door.kinds if door.foreign or kind == "link"]


def _place(d: Path, door: Door, kind: str) -> None:
    target = d / door.target
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link":
        outside = d / "outside" / "victim"
        outside.parent.mkdir()
        if door.link_to_dir:
            outside.mkdir()
            (outside / "keep.txt").write_bytes(FOREIGN)
        else:
            outside.write_bytes(FOREIGN)
        target.symlink_to(outside)
        return
    for relative, content in door.foreign.items():
        path = target / relative if relative else target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


@pytest.mark.parametrize(("door", "kind"), VARIANTS, ids=[f"{d.name}-{k}" for d, k in VARIANTS])
def test_a_writer_leaves_foreign_files_and_links_alone(
    door, kind, tiny, tmp_path, monkeypatch, capsys
):
    d = tmp_path / "case"
    d.mkdir()
    door.setup(d, tiny)
    _place(d, door, kind)
    monkeypatch.chdir(d)
    before = snapshot(tmp_path, tmp_path / "-")
    code, err = run_cli(door.argv(d, tiny), capsys)
    assert code == 2, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    first = errors[0]
    assert Path(door.target).name in first or Path(door.target).parent.name in first, first
    assert door.flag in first, first
    assert snapshot(tmp_path, tmp_path / "-") == before


def test_export_inside_the_runs_checkpoints_is_refused(tiny, tmp_path, capsys):
    run = shutil.copytree(tiny["run"], tmp_path / "run")
    (step,) = sorted((run / "checkpoint").iterdir())
    before = snapshot(tmp_path, tmp_path / "-")
    for out in (step, run / "checkpoint" / "step-000099"):
        code, err = run_cli(["export", "hf", str(run), "--out", str(out)], capsys)
        assert code == 2 and "checkpoint folder" in err and "--out" in err, err
    assert snapshot(tmp_path, tmp_path / "-") == before


def test_an_earlier_export_and_import_are_replaced_whole(tiny, tmp_path, capsys):
    """The writer's own marker (export.json, import.json) lists its files: a rerun replaces
    them; a file someone added beside them makes the folder foreign again."""
    for argv in (["export", "hf", str(tiny["run"])],
                 ["import", "lm-eval", str(tiny["lmeval"]), "--arm-from", "parent"]):  # fmt: skip
        out = tmp_path / argv[0]
        for _ in range(2):
            code, err = run_cli([*argv, "--out", str(out)], capsys)
            assert code == 0, err
        (out / "notes.txt").write_bytes(FOREIGN)
        code, err = run_cli([*argv, "--out", str(out)], capsys)
        assert code == 2 and "notes.txt" in err, err
        assert (out / "notes.txt").read_bytes() == FOREIGN
