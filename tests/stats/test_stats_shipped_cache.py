"""The package's shipped simulation entries (issue 57): a first `plan` of `init`'s starter on a
fresh machine simulates nothing, because everything its power lines need ships with the
package. Fails after a version bump until `python -m archaudit.devtools.shipped_cache --write`
regenerates them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from archaudit.audit.setup.starter import DEFAULT_ARMS, write_starter
from archaudit.cli import app, register_commands
from archaudit.stats.simulation import disk_cache


def test_a_first_plan_of_the_starter_simulates_nothing(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(cache))
    monkeypatch.delenv(disk_cache.NO_SHIPPED, raising=False)
    audit = write_starter(tmp_path / "my_audit.toml", arms=DEFAULT_ARMS, force=True)
    register_commands()  # `plan` is registered with the rest, as `archaudit` does it
    for extra in ([], ["--until-settled"]):
        command = ["plan", str(audit), "--no-probe", "--runs-dir", str(tmp_path / "runs")]
        result = CliRunner().invoke(app, [*command, *extra])
        assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (cache / "stats").glob("*.json"))
    assert written == [], (
        f"plan simulated {written}: run `python -m archaudit.devtools.shipped_cache --write`"
    )


def test_a_damaged_shipped_entry_is_passed_over_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(disk_cache, "SHIPPED", tmp_path)
    monkeypatch.delenv(disk_cache.NO_SHIPPED, raising=False)
    key = json.dumps({"what": "a level"})
    name = disk_cache.entry_name("level", key)
    (tmp_path / name).write_text(json.dumps({"key": key, "value": 0.5, "sha256": "0" * 64}))
    assert disk_cache.shipped(name, key, float) is None
    assert "passed over" in capsys.readouterr().err


def test_the_shipped_entries_can_be_turned_off(monkeypatch) -> None:
    names = sorted(disk_cache.SHIPPED.glob("*.json"))
    assert names, "the package ships no simulation entries"
    stored = json.loads(names[0].read_text())
    monkeypatch.setenv(disk_cache.NO_SHIPPED, "1")
    assert disk_cache.shipped(names[0].name, stored["key"], lambda v: v) is None
