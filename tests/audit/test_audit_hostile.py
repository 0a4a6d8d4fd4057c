"""Issue 23: `index`/`status` never rewrite a folder that is not an audit directory, a torn
claim goes stale by its file time instead of blocking `run` forever, and `plan` refuses
absurd grids in one line instead of listing or probing them for minutes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from audit_helpers import TINY, merged, to_toml

from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.claims import current_claim
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import materialize, run_status
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import main
from archaudit.errors import ConfigError, DataError
from archaudit.rundir import DONE


def cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["archaudit", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    captured = capsys.readouterr()
    return exit_.value.code or 0, captured.out, captured.err


def test_status_refuses_a_folder_that_is_not_an_audit(monkeypatch, capsys, tmp_path: Path):
    folder = tmp_path / "d"
    folder.mkdir()
    results = "arm,scale,seed,metric,value\nbaseline,s,0,val_loss,1\n"
    (folder / "results.csv").write_text(results)
    code, _, err = cli(monkeypatch, capsys, "status", str(folder))
    assert code == 2 and err.startswith(f"error: {folder} is not an audit directory"), err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["results.csv"]
    assert (folder / "results.csv").read_text() == results


def torn_claim(run_dir: Path, age_s: float) -> Path:
    path = run_dir / "claim.0"
    path.write_text('{"pid": 12')
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def test_a_torn_claim_is_stale_by_its_file_time(tmp_path: Path):
    torn_claim(tmp_path, age_s=2 * 3600)
    claim = current_claim(tmp_path)
    assert claim is not None and claim.stale(120.0), "two hours without a heartbeat"
    torn_claim(tmp_path, age_s=0)
    assert not current_claim(tmp_path).stale(120.0), "a claim being written is live"


def test_run_takes_over_a_torn_old_claim_instead_of_waiting(write_audit):
    plan = make_plan(load_audit(write_audit(arms=[]), ["recipe.steps=2", "seeds.noise_floor=2"]))
    run_dir = materialize(plan)[0]
    torn_claim(run_dir, age_s=2 * 3600)
    assert run_status(run_dir).state == "stale"
    assert run_one(run_dir) == "done"
    assert (run_dir / DONE).is_file() and not list(run_dir.glob("claim.*"))


ABSURD = {
    "10^8 seeds per arm": (["seeds.arms=100000000"], r"more than 10,000 runs"),
    "10^5 noise-floor seeds": (["seeds.noise_floor=100000"], r"more than 10,000 runs"),
    "10,000 duplicate arms": (
        ["arms=[" + ", ".join(['"qk_norm"'] * 10_000) + "]"],
        r"arms has 10,000 entries",
    ),
    "10^5 layers": (["scales.xs.n_layers=100000"], r"model.n_layers = 100,000 is past"),
    "a trillion-parameter block": (
        ["scales.xs.d_model=60000", "scales.xs.n_heads=2", "scales.xs.n_layers=1000"],
        r"about 4.3e\+13 parameters",
    ),
}


@pytest.mark.parametrize("case", ABSURD)
def test_plan_refuses_an_absurd_grid_in_one_line_and_fast(write_audit, case: str):
    overrides, message = ABSURD[case]
    path = write_audit()
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=message):
        make_plan(load_audit(path, overrides))
    assert time.perf_counter() - start < 10, "refused before anything was built or listed"


def test_repeated_arms_resolve_once(write_audit):
    path = write_audit()
    arms = "arms=[" + ", ".join(['"qk_norm"'] * 1000) + "]"
    start = time.perf_counter()
    plan = make_plan(load_audit(path, [arms]))
    assert time.perf_counter() - start < 10
    assert sorted({r.arm for r in plan.runs}) == ["baseline", "qk_norm"]


@pytest.fixture(scope="module")
def _finished_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from archaudit.audit.execute.coordinator import run_audit

    path = tmp_path_factory.mktemp("finished") / "audit.toml"
    path.write_text(to_toml(merged(TINY, {"arms": []})))
    plan = make_plan(load_audit(path, ["recipe.steps=2"]))
    run_audit(plan, live=False)
    return plan.audit_dir


@pytest.fixture
def finished_audit(_finished_once: Path, tmp_path: Path) -> Path:
    """A copy of a finished two-run audit (the baseline's seeds, two steps each)."""
    return Path(shutil.copytree(_finished_once, tmp_path / "runs" / _finished_once.name))


HEAVY = "1" + "0" * 308
SUITE = b'name = "s"\n[[tasks]]\nname = "i"\nformat = "probe"\nlimit = 4\n'
SUITE += b'params = { generator = "induction", seed = 0 }\n'
CLI_REFUSALS = {
    "non-UTF-8 audit": ("audit", b'name = "\xff\xfe"\n', (), r"audit.toml: not UTF-8"),
    "deep arrays": ("audit", b"x = " + b"[" * 3000 + b"]" * 3000, (), r"nested too deep"),
    "lr = inf": ("audit", None, ("recipe.lr=inf",), r"recipe.lr = inf must be a finite number"),
    "a typo'd scale": ("audit", None, ("scales.tnyi.d_model=64",), r"no scales.tnyi"),
    "unknown device": ("audit", None, ("recipe.device=quantum",), r"recipe.device = 'quantum'"),
    "absent device": ("audit", None, ("recipe.device=cuda:7",), r"device 'cuda:7'"),
    "unknown tracker": ("audit", None, ('tracker="myspace"',), r"unknown tracker 'myspace'"),
    "workers = 1e8": (
        "audit", None, ("executor.workers=100000000",),
        r"executor.workers = 100000000 must be in \[0, 100,000\]",
    ),
    "a 300-char name": ("audit", None, (f'name="{"a" * 300}"',), r"300 bytes"),
    "a 300-char scale": (
        "audit", None, (f"scales.{'s' * 300}={{ preset = 'tiny' }}",), r"300 bytes",
    ),
    "heldout missing": (
        "suite", SUITE + b'[heldout]\npath = "no.txt"\n', (), r"\[heldout\] path 'no.txt'",
    ),
    "suite tasks = 3": ("suite", b'name = "s"\ntasks = 3\n', (), r"tasks = 3 must be \[\[tas"),
    "1e308 in a CSV": ("csv", f"baseline,s,0,val_loss,{HEAVY}\n".encode(), (), r"beyond ±1e\+1"),
}  # fmt: skip


@pytest.mark.parametrize("case", CLI_REFUSALS)
def test_hostile_values_are_refused_in_one_line(
    monkeypatch, capsys, write_audit, tmp_path: Path, case: str
):
    import re

    kind, content, overrides, message = CLI_REFUSALS[case]
    monkeypatch.setenv("ARCHAUDIT_DATA", str(tmp_path))
    if kind == "csv":
        path = tmp_path / "results.csv"
        rows = "".join(
            f"{a},s,{k},val_loss,{3 + k / 100}\n" for a in ("baseline", "x") for k in (0, 1, 2)
        )
        path.write_bytes(b"arm,scale,seed,metric,value\n" + rows.encode() + content)
        argv = ["stats", str(path), "--metric", "val_loss", "--json"]
    else:
        path = write_audit()
        if kind == "audit" and content is not None:
            path.write_bytes(content)
        if kind == "suite":
            (tmp_path / "suite.toml").write_bytes(content)
            path = write_audit(eval={"suite": "suite.toml"}, scales={"xs": {"preset": "tiny"}})
        argv = ["plan", str(path), "--no-probe", "--json", *(f"--set={o}" for o in overrides)]
    code, _, err = cli(monkeypatch, capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


@pytest.fixture
def read_only(finished_audit: Path):
    """The finished audit's runs directory, bind-mounted read-only (root only: root ignores
    permission bits, so a chmod would not stop its writes)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    runs = finished_audit.parent
    if subprocess.run(["mount", "--bind", str(runs), str(runs)]).returncode:
        pytest.skip("cannot bind-mount here")
    subprocess.run(["mount", "-o", "remount,ro,bind", str(runs)], check=True)
    yield finished_audit
    subprocess.run(["umount", "-l", str(runs)], check=True)


@pytest.mark.parametrize("command", ["status", "stats", "report"])
def test_a_read_only_runs_directory_is_one_line(monkeypatch, capsys, read_only: Path, command):
    """A finished audit's exports are current, so `status` and `stats` read it without writing
    (issue 36); `report` must write report.html there: one line."""
    capsys.readouterr()
    extra = ["--metric", "val_loss"] if command == "stats" else []
    code, _, err = cli(monkeypatch, capsys, command, str(read_only), *extra)
    if command != "report":
        # the fixture holds the baseline alone: `stats` may say so, but never fail to write
        assert code == 0 or "no arm to judge" in err, err
        assert "Read-only" not in err and "readonly" not in err, err
        return
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Read-only file system" in err or "readonly" in err, err


@pytest.mark.parametrize("factor", ["1e300", "0", "-1", "nan", "inf"])
def test_a_moe_capacity_factor_out_of_use_is_refused_in_one_line(write_audit, factor: str):
    """Issue 44: `capacity_factor = 1e300` was an OverflowError in training."""
    with pytest.raises(
        ConfigError, match=r"capacity_factor = .* must be (> 0 and at most|a finite)"
    ):
        make_plan(load_audit(write_audit(), [f"scales.xs.moe.capacity_factor={factor}"]))


def test_run_fills_the_folder_a_stress_sweep_was_put_in_first(write_audit):
    """Issue 44: `stress` then `run` on one audit file refused ("not an audit directory"): the
    sweep's `_stress/` audit directory is the folder's only entry. A foreign file beside it is
    still refused."""
    from archaudit.audit.stability.stress import stress_plan

    spec = load_audit(write_audit())
    materialize(stress_plan(spec).plan)  # what `stress` lays out before it trains
    assert [p.name for p in spec.audit_dir.iterdir()] == ["_stress"]
    assert materialize(make_plan(spec))
    assert (spec.audit_dir / "audit.json").is_file()
    foreign = load_audit(write_audit(), runs_dir=spec.runs_dir.parent / "other")
    materialize(stress_plan(foreign).plan)
    (foreign.audit_dir / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="not an audit directory of archaudit"):
        materialize(make_plan(foreign))
