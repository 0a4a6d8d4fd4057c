"""Issue 57's doors: a missing audit file, audit folder or table gets a did-you-mean on every
command that takes one (one helper, `errors.did_you_mean_path`); `archaudit stats` without a
source is one line and exit 2, not 120 lines of help."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.cli import main
from archaudit.errors import did_you_mean_path


def _main(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """`archaudit ARGV` as the console script runs it: its exit code and stderr."""
    monkeypatch.setattr("sys.argv", ["archaudit", *argv])
    with pytest.raises(SystemExit) as done:
        main()
    return int(done.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "typo", "meant"),
    [
        (["stress"], "my_audt.toml", "my_audit.toml"),
        (["plan"], "my_audt.toml", "my_audit.toml"),
        (["run"], "my_audt.toml", "my_audit.toml"),
        (["status"], "my_audt.toml", "my_audit.toml"),
        (["stats"], "runs/small_audt", "runs/small_audit"),
        (["report"], "runs/small_audt", "runs/small_audit"),
        (["stats", "predict"], "ladr.csv", "ladder.csv"),
        (["eval"], "runs/small_audt", "runs/small_audit"),
    ],
)
def test_a_missing_path_names_the_close_one(
    command: list[str], typo: str, meant: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    (tmp_path / "runs" / "small_audit").mkdir(parents=True)
    (tmp_path / "my_audit.toml").write_text('name = "x"\n')
    (tmp_path / "ladder.csv").write_text("arm,scale,seed,metric,value\n")
    monkeypatch.chdir(tmp_path)
    code, err = _main([*command, typo], capsys, monkeypatch)
    assert code == 2, err
    assert f"(did you mean {meant!r}?)" in err and err.count("\n") == 1, err


def test_no_close_name_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "results.csv").touch()
    assert did_you_mean_path(tmp_path / "zzz.toml") == ""
    assert did_you_mean_path(tmp_path / "absent" / "x.toml") == ""


def test_stats_without_a_source_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, err = _main(["stats"], capsys, monkeypatch)
    assert code == 2 and capsys.readouterr().out == ""
    assert err.splitlines() == [
        "error: archaudit stats needs a source: archaudit stats RUNS_DIR (an audit folder, "
        "audit file or results CSV) — see archaudit stats --help"
    ]
