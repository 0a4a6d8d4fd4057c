"""Must-show 4: a bad audit file is one named error, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import archaudit

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup.spec import load_audit
from archaudit.errors import ConfigError


def plan_and_run(path: Path, overrides: tuple[str, ...] = ()) -> None:
    """What `archaudit run` does; a valid file here would run the (tiny) audit."""
    run_audit(make_plan(load_audit(path, overrides)), live=False)


CASES = {
    "unknown arm": (dict(arms=["qk_nrom"]), r"qk_nrom.*did you mean 'qk_norm'"),
    "unknown arm in a composition": (dict(arms=["qk_norm+gegl"]), r"did you mean 'geglu'"),
    "no scale": (dict(drop=("scales",)), r"no scale"),
    "arm at a missing scale": (
        dict(arms=[{"arm": "qk_norm", "scales": ["big"]}]),
        r"unknown scale 'big'",
    ),
    "one noise-floor seed": (dict(seeds={"noise_floor": 1}), r"seeds.noise_floor = 1.*at least 2"),
    "unknown eval suite": (dict(eval={"suite": "dem"}), r"unknown suite 'dem'"),
    "unknown arm suite": (dict(arms=["suite:audit2062"]), r"did you mean 'audit2026'"),
    "unknown recipe key": (dict(recipe={"lr_peak": 1e-3}), r"recipe.lr_peak"),
    "unknown executor": (dict(executor={"kind": "slurmm"}), r"did you mean 'slurm'"),
    "recipe arm not tuned": (
        dict(arms=[{"arm": "qk_norm", "recipe": {"lr": 0.1}}]),
        r"another recipe.*recipe.lr.*tuned = true",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_audit_is_one_named_error_and_writes_nothing(write_audit, tmp_path: Path, case: str):
    changes, message = CASES[case]
    path = write_audit(**changes)
    with pytest.raises(ConfigError, match=message) as err:
        plan_and_run(path)
    assert str(path) in str(err.value), "the error names the file"
    assert not (tmp_path / "runs").exists()


def test_malformed_toml_names_its_line(tmp_path: Path):
    path = tmp_path / "audit.toml"
    path.write_text('name = "x"\narms = ["qk_norm"\n[recipe]\n')
    with pytest.raises(ConfigError, match=r"malformed TOML.*line 3"):
        plan_and_run(path)
    assert not (tmp_path / "runs").exists()


def test_cli_prints_one_error_line_and_exits_2(write_audit, tmp_path: Path):
    path = write_audit(arms=["softpik"])
    done = archaudit("run", str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean 'softpick'" in lines[0], done.stderr
    assert not (tmp_path / "runs").exists()
