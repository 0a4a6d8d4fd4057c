"""`archaudit report` and the commands that end with a report (`status --report`), through the
real entry point; the report is the same bytes whatever PYTHONHASHSEED is."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from report_helpers import fake_audit

from archaudit.cli import main


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `archaudit <command line>` through main(); return (exit code, stdout, stderr)."""

    def run(command: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
        with pytest.raises(SystemExit) as exit_:
            main()
        captured = capsys.readouterr()
        return exit_.value.code or 0, captured.out, captured.err

    return run


def test_report_writes_html_and_markdown_and_lists_the_sections(
    cli, results_csv: Path, tmp_path: Path
) -> None:
    html, md = tmp_path / "r.html", tmp_path / "md" / "r.md"
    code, out, _ = cli(f"report {results_csv} --out {html} --markdown {md} --json")
    assert code == 0
    result = json.loads(out)
    assert result["html"] == str(html) and result["markdown"] == str(md)
    absent = {s["key"]: s["absent"] for s in result["sections"] if not s["present"]}
    expected = {"curves", "interactions", "aggregates", "routing", "target", "stability"}
    assert set(absent) == expected
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert (md.parent / "r_files" / "forest-val_loss-d48.svg").is_file()
    assert f"report {results_csv} --out {html}" in html.read_text()  # the command, for provenance


def test_report_of_an_audit_goes_beside_its_results(cli, audit_dir: Path) -> None:
    code, out, _ = cli(f"report {audit_dir} --metric val_loss")
    assert code == 0
    assert out.strip() == f"report: {audit_dir / 'report.html'}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{dir}/missing.csv", "missing.csv does not exist"),
        ("{csv} --metric val_los", "did you mean 'val_loss'?"),
        ("{csv} --baseline base", "did you mean 'baseline'?"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(
    cli, results_csv: Path, tmp_path: Path, args: str, message: str
) -> None:
    code, _, err = cli("report " + args.format(dir=tmp_path, csv=results_csv))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_malformed_csv_stops_the_report(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("arm,scale,seed,metric,value\nbaseline,s,0,acc,oops\n")
    code, _, err = cli(f"report {bad} --out {tmp_path / 'r.html'}")
    assert code == 2 and "bad.csv:2" in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("args", "flag"),
    [("--out {d}/x --markdown {d}/x", "--markdown"),
     ("--out {d}/r.html --markdown {d}/sub/../r.html", "--markdown"),
     ("--out {d}/t_files --markdown {d}/t.md", "--out")],
)  # fmt: skip
def test_a_page_and_its_twin_at_one_path_are_refused_before_writing(
    cli, results_csv: Path, tmp_path: Path, args: str, flag: str
) -> None:
    """Issue 57: `report --out X --markdown X` wrote X, then exited 2 on the twin."""
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    code, _, err = cli(f"report {results_csv} " + args.format(d=out))
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"give {flag} another" in err
    assert sorted(p.name for p in out.iterdir()) == ["sub"], "something was written"


def test_status_report_writes_a_partial_report(cli, tmp_path: Path) -> None:
    audit = fake_audit(tmp_path, {"qk_norm": 0.0}, finished=0.5)
    code, out, _ = cli(f"status {audit} --report")
    assert code == 0
    assert f"report: {audit / 'report.html'}" in out
    assert "Partial report: 5 of 10 runs finished" in (audit / "report.html").read_text()


def test_report_bytes_do_not_depend_on_the_hash_seed(results_csv: Path, tmp_path: Path) -> None:
    pages = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"r{hash_seed}.html"
        env = os.environ | {"PYTHONHASHSEED": hash_seed}
        command = [sys.executable, "-m", "archaudit.cli", "report", str(results_csv)]
        subprocess.run([*command, "--out", str(out)], check=True, env=env, capture_output=True)
        pages.append(out.read_text().replace(str(out), "OUT"))
    assert pages[0] == pages[1]


TINY = """
name = "tiny"
arms = ["qk_norm"]
[seeds]
noise_floor = 2
arms = 1
[eval]
suite = ""
[recipe]
steps = 12
batch_tokens = 512
corpus_chars = 100000
eval_every = 6
eval_batches = 2
checkpoint_every = 6
[scales.xs]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
[executor]
workers = 2
threads = 1
"""


@pytest.mark.slow
def test_run_ends_by_writing_the_report(tmp_path: Path) -> None:
    audit = tmp_path / "tiny.toml"
    audit.write_text(TINY)
    command = [sys.executable, "-m", "archaudit.cli", "run", str(audit), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = tmp_path / "runs" / "tiny" / "report.html"
    assert done.stdout.strip().splitlines()[-1] == f"report: {report}"
    html = report.read_text()
    assert 'id="curves-xs-' in html  # drawn from the runs' real metrics.jsonl
    # qk_norm's answer names what it lacks: a downstream evaluation (the audit has no suite)
    assert re.search(r"qk_norm: [^<]*missing: [^<)]*downstream evaluation", html)
