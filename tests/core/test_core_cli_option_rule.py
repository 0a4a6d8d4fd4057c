"""Issue 56 item 5, one rule for the command line: every field of an option class is a flag on
every command that takes the class unless the field says otherwise; `--json`/`--quiet` declared
once; integer options with per-option ranges. And the guide docs/guides/command-line-option.md,
whose example runs here.

Defects this pins: the judging flags reached a command only when its hand list named them
(`--anchor` existed on `stats verdicts` alone); `stats power --seeds 0`, `simulate-null --audits
0` and `diagnose prune --layers 0` were read as numbers and failed later, or not at all."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from archaudit.cli import CLICK_ERRORS, app, main, register_commands, usage_line
from archaudit.cli.base.options import Flags, flag_names
from archaudit.stats.choices.options import JudgeOptions

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "command-line-option.md"
JUDGING = (
    ("stats", "verdicts"), ("stats", "transfer"), ("stats", "interactions"), ("stats", "power"),
    ("stats", "decoupling"), ("simulate-null",),
)  # fmt: skip
"""The commands that judge a family of arms: each takes every `JudgeOptions` flag."""


def command(*path: str) -> Any:
    register_commands()
    found = typer.main.get_command(app)
    for name in path:
        found = found.commands[name]
    return found


def leaves() -> list[tuple[tuple[str, ...], Any]]:
    register_commands()
    out = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if not subs:
            out.append((path, cmd))
        for name, sub in sorted((subs or {}).items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return out


def flags_of(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}


def judge_flag_names() -> set[str]:
    """Every flag `JudgeOptions` gives (its fields that are flags)."""
    marker = Flags(JudgeOptions)
    names = {flag_names(marker, f)[0] for f in marker.fields()}
    return {part for name in names for part in name.split("/")}


def test_every_judging_command_takes_every_judging_flag():
    wanted = judge_flag_names()
    assert {"--anchor", "--reference", "--equal-variance", "--target"} <= wanted
    missing = {
        " ".join(path): sorted(wanted - flags_of(command(*path)))
        for path in JUDGING
        if wanted - flags_of(command(*path))
    }
    assert not missing, f"judging flags missing: {missing}"


def test_a_field_that_says_so_is_no_flag():
    field = next(f for f in dataclasses.fields(JudgeOptions) if f.name == "downstream_metrics")
    assert field.metadata["flag"] is False
    assert "--downstream-metrics" not in flags_of(command("stats", "verdicts"))


def test_json_and_quiet_are_declared_once():
    """Every command's --json and --quiet come from `output_flags`: the one help text, and the
    one place in the source that spells them."""
    helps = {
        (p.opts[0], p.help)
        for _, cmd in leaves()
        for p in cmd.params
        if p.opts[0] in ("--json", "--quiet")
    }
    assert len(helps) == 2, helps
    assert all("-q" in p.opts for _, cmd in leaves() for p in cmd.params if "--quiet" in p.opts)
    source = Path(__file__).parents[2] / "src" / "archaudit" / "cli"
    spelled = [
        f"{path.relative_to(source)}:{n}"
        for path in sorted(source.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\"--(json|quiet)\"", line)
    ]
    assert len(spelled) == 2 and all(s.startswith("base/options.py:") for s in spelled), spelled
    with_json = [" ".join(path) for path, cmd in leaves() if "--json" in flags_of(cmd)]
    assert len(with_json) >= 30


@pytest.mark.parametrize(
    ("argv", "flag", "says"),
    [(["stats", "power", "--seeds", "0"], "--seeds", "not a finite number >= 1"),
     (["stats", "power", "--n-arms", "-3"], "--n-arms", ">= 1"),
     (["stats", "power", "--baseline-seeds", "1"], "--baseline-seeds", ">= 2"),
     (["simulate-null", "--audits", "0"], "--audits", ">= 1"),
     (["simulate-null", "--effect-arms", "-1"], "--effect-arms", ">= 0"),
     (["stats", "scaling", "r.csv", "--n-boot", "0"], "--n-boot", "[1, 100000]"),
     (["stats", "items", "i.csv", "--seed", "-1"], "--seed", ">= 0"),
     (["stats", "aggregate", "r.csv", "--n-boot", "1000000"], "--n-boot", "[1, 100000]"),
     (["diagnose", "prune", "m", "--data", "d", "--layers", "0"], "--layers", ">= 1"),
     (["diagnose", "task", "out.txt", "--terms", "0"], "--terms", ">= 1"),
     (["data", "prepare", "x", "--workers", "0"], "--workers", "[1, 100000]"),
     (["run", "a.toml", "--max-seeds", "0"], "--max-seeds", "[1, 10000]"),
     (["run", "a.toml", "--workers", "-1"], "--workers", "[0, 100000]"),
     (["tune-baseline", "a.toml", "--seeds", "0"], "--seeds", ">= 1"),
     (["train", "--seed", "-2"], "--seed", ">= 0")],
)  # fmt: skip
def test_an_integer_out_of_its_range_is_one_line_naming_it(argv, flag, says, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["archaudit", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and f"for '{flag}'" in line and says in line, line


# --- the guide's example -------------------------------------------------------------------


def guide_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> Any:
    """The guide's example module (with `extra` appended to its class), imported from a file:
    field docstrings are read from the source."""
    code = re.search(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S).group(1)
    if extra:
        anchor = '    """Keep the k likeliest tokens (0: all)."""\n'
        assert anchor in code
        code = code.replace(anchor, anchor + extra)
    name = f"my_options_{len(extra)}"
    (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return __import__(name)


def one_line(module: Any, argv: list[str]) -> tuple[int, str]:
    """Run the example app as `archaudit` runs its own: a usage error as one line."""
    try:
        typer.main.get_command(module.app).main(argv, standalone_mode=False)
    except CLICK_ERRORS.ClickException as err:
        return err.exit_code, usage_line(err, argv)
    return 0, ""


def test_the_guides_example_gives_every_command_the_classes_flags(tmp_path, monkeypatch):
    module = guide_example(tmp_path, monkeypatch)
    runner = CliRunner()
    generate = runner.invoke(module.app, ["generate", "--top-k", "5", "--json"])
    assert generate.exit_code == 0, generate.output
    assert json.loads(generate.stdout) == {"temperature": 1.0, "top_k": 5}
    score = runner.invoke(module.app, ["score", "--top-k", "7", "--temperature", "0.5", "-q"])
    assert score.exit_code == 0 and score.stdout.strip() == "k = 7", score.output
    help_text = runner.invoke(module.app, ["score", "--help"]).stdout
    assert "Keep the k likeliest tokens" in help_text and "--quiet" in help_text
    code, line = one_line(module, ["generate", "--top-k", "-1"])
    assert code == 2 and "'-1' for '--top-k'" in line and "[0, 50000]" in line, line


def test_a_field_added_to_the_guides_class_reaches_both_commands(tmp_path, monkeypatch):
    """The guide's claim: one field, with its docstring and range, and both commands take it."""
    extra = (
        '    min_p: float = field(default=0.0, metadata={"range": Range(0, 1)})\n'
        '    """Drop tokens below this share of the likeliest."""\n'
    )
    module = guide_example(tmp_path, monkeypatch, extra)
    for name in ("generate", "score"):
        cmd = typer.main.get_command(module.app).commands[name]
        assert "--min-p" in flags_of(cmd), name
    code, line = one_line(module, ["score", "--min-p", "2"])
    assert code == 2 and "'2' for '--min-p'" in line and "[0, 1]" in line, line


def test_building_the_flags_imports_no_analysis():
    """The option records the command line reads to build its flags sit in light modules:
    registering every command imports neither scipy nor matplotlib nor torch (a replicate
    command that imported the report put 3.3 s on every `archaudit` start; 0.4 s before)."""
    probe = (
        "import sys; from archaudit.cli import register_commands; register_commands(); "
        "print(sorted(m for m in ('scipy', 'matplotlib', 'torch') if m in sys.modules))"
    )
    src = Path(__file__).parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
