"""Issue 57, item 10: `stats predict --target-tokens 0` was a ZeroDivisionError, while
`--target-tokens -1`, `nan` and `--target inf` were accepted and printed null intervals marked
estimable. Every numeric option is checked where it is parsed (`cli.base.options.in_range`: finite,
in its range), exit 2 with one line naming the option and the range."""

from __future__ import annotations

import pytest
import typer
from test_stats_predict_cli import runs_csv

from archaudit.cli import app, register_commands


@pytest.mark.parametrize(
    ("flags", "says"),
    [("--target 3.2e7 --target-tokens 0", "'0' for '--target-tokens': 0.0 is not a finite number"),
     ("--target 3.2e7 --target-tokens -1", "'-1' for '--target-tokens'"),
     ("--target 3.2e7 --target-tokens nan", "'nan' for '--target-tokens'"),
     ("--target inf", "'inf' for '--target': inf is not a finite number > 0"),
     ("--target -3e7", "'-3e7' for '--target'"),
     ("--target 3.2e7 --confidence 1", "'1' for '--confidence': 1.0 is not a number in (0, 1)")],
)  # fmt: skip
def test_predicts_numbers_are_finite_and_in_range(cli, tmp_path, flags: str, says: str):
    path = runs_csv(tmp_path)
    code, out, err = cli(f"stats predict {path} {flags} --n-boot 50")
    assert code == 2 and not out, err
    (line,) = err.strip().splitlines()
    assert says in line and "Traceback" not in line, line


def numeric_options() -> list[tuple[str, str, object]]:
    """(command, flag, its typer parameter info) for every option that takes numbers."""
    register_commands()
    found = []

    def walk(command, path: list[str]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])
        for param in getattr(command, "params", ()):
            descriptor = param.type_descriptor
            annotation, info = descriptor.annotation, descriptor.parameter_info
            numeric = any(kind in str(annotation) for kind in ("float", "int")) or str(
                info.metavar or ""
            ).startswith(("NUMBER", "N,"))
            if numeric and param.opts[0].startswith("--"):
                found.append((" ".join(path), param.opts[0], info))

    walk(typer.main.get_command(app), [])
    return found


def test_every_numeric_option_is_range_checked_where_it_is_parsed():
    options = numeric_options()
    assert len(options) > 30 and ("stats predict", "--target-tokens") in [o[:2] for o in options]
    unchecked = [f"{c} {f}" for c, f, info in options if not hasattr(info.callback, "range")]
    assert not unchecked, f"numeric options without cli.base.options.in_range: {unchecked}"


@pytest.mark.parametrize(
    "argv",
    [["plan", "a.toml", "--sigma", "nan"], ["run", "a.toml", "--stale-after", "inf"],
     ["run", "a.toml", "--budget-hours", "nan"], ["train", "--recipe.lr", "inf"],
     ["stats", "power", "--effect", "inf"], ["stats", "scaling", "r.csv", "--budget", "0"],
     ["tune-baseline", "a.toml", "--lr", "0"], ["simulate-null", "--effect", "nan"]],
)  # fmt: skip
def test_a_number_out_of_range_is_one_line_before_any_file_is_read(argv, monkeypatch, capsys):
    import sys

    from archaudit.cli import main

    monkeypatch.setattr(sys, "argv", ["archaudit", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and f"for '{argv[-2]}'" in line and "not a" in line, line


def test_every_integer_option_has_its_own_range():
    """Issue 57 item 8: an integer option is a count, a seed or a size: each names its range
    (`--seeds 0`, `--n-boot 0`, `--layers 0` were numbers that failed later, or not at all)."""
    integers = [(c, f, info) for c, f, info in numeric_options() if _is_integer(c, f)]
    unbounded = [
        f"{command} {flag}"
        for command, flag, info in integers
        if not hasattr(info.callback, "range") or info.callback.range.low == float("-inf")
    ]
    assert len(integers) > 40 and not unbounded, f"integer options without a range: {unbounded}"


def _is_integer(command: str, flag: str) -> bool:
    register_commands()
    found = typer.main.get_command(app)
    for name in command.split():
        found = found.commands[name]
    param = next(p for p in found.params if p.opts[0] == flag)
    annotation = str(param.type_descriptor.annotation)
    return "int" in annotation and "float" not in annotation
