"""README's worked audit and `init`'s starters state `plan`'s own numbers (issue 57: the README
said 13.7 σ and 3.4 σ in about 52 runs where `plan` printed 5.68 σ and 4.25 σ in about 81, and
the starter called `--until-settled` cheaper where `plan` showed it needing more). Fails until
`python -m archaudit.devtools.readme_numbers --write` after a change that moves them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archaudit.audit.setup.starter import ADVICE_FILE, GENERIC_ADVICE, advice_key, starter_text
from archaudit.cli import app, register_commands
from archaudit.devtools import readme_numbers
from archaudit.devtools.readme_numbers import (
    README,
    README_ARMS,
    README_END,
    README_START,
    STARTERS,
    design_numbers,
    readme_block,
    starter_advice,
)

pytestmark = pytest.mark.skipif(not README.is_file(), reason="a source checkout's README")


def _block() -> str:
    text = README.read_text()
    return text.split(README_START, 1)[1].split(README_END, 1)[0].strip()


def _comments(text: str) -> str:
    """The starter's comments as one line (each line's text after its `#`)."""
    return " ".join(
        " ".join(line.split("#", 1)[1].split()) for line in text.splitlines() if "#" in line
    )


def test_the_readme_states_what_plan_prints_for_its_worked_audit(tmp_path: Path) -> None:
    """`plan --no-probe --until-settled` on the README's starter prints every number of the
    README's block: the fixed design's MDE, the loop's MDE and runs per scale, and its runs in
    all against the fixed design's of the same power."""
    block = " ".join(_block().split())
    stated = re.search(
        r"(\d+) arms × (\d+) fixed seeds detect ([\d.]+) σ .*≤ (\d+) seeds\) ([\d.]+) σ in "
        r"about (\d+) runs per scale, (\d+) in all, \w+ than the (\d+) the fixed design",
        block,
    )
    assert stated, block
    arms, seeds, fixed, loop_seeds, loop, per_scale, total, same = stated.groups()
    path = tmp_path / "my_audit.toml"
    register_commands()
    runner = CliRunner()
    made = runner.invoke(app, ["init", str(path), "--arms", *README_ARMS])
    assert made.exit_code == 0, made.output
    command = ["plan", str(path), "--no-probe", "--until-settled", "--runs-dir", str(tmp_path)]
    printed = runner.invoke(app, command, env={"COLUMNS": "400"})
    assert printed.exit_code == 0, printed.output
    out = " ".join(printed.output.split())
    assert f"{arms} arms × 2 scales" in out
    assert f"{fixed} σ ({seeds} seeds)" in out
    assert f"≤ {loop_seeds} seeds: MDE {loop} σ, about {per_scale} runs expected" in out
    assert re.search(rf"about {total} \(\d+–\d+ in 80% of simulated loops\)", out), out
    assert f"{loop_seeds} seeds per arm: {same} runs" in out or f"arm: {same} runs" in out


def test_the_readme_block_is_the_generators(tmp_path: Path) -> None:
    assert _block() == readme_block(design_numbers(README_ARMS))


def test_each_known_starter_advises_what_plan_computes_for_it(tmp_path: Path) -> None:
    """The advice under `[seeds]` of `init`'s default starter and the README's: the loop is
    called cheaper only where `plan` finds it needs fewer runs than the fixed design of the
    same power."""
    stored = json.loads(ADVICE_FILE.read_text())
    for arms in STARTERS:
        numbers = design_numbers(arms)
        advice = starter_advice(numbers)
        assert stored[advice_key(arms)] == advice
        assert f"{advice}." in _comments(starter_text(tmp_path / "my_audit.toml", arms=arms))
        assert ("reaches" in advice) == (round(numbers.loop_runs) < round(numbers.same_power_runs))


def test_other_arms_get_the_generic_advice_naming_their_file(tmp_path: Path) -> None:
    text = _comments(starter_text(tmp_path / "mine.toml", arms=("qk_norm",)))
    assert GENERIC_ADVICE.replace("FILE", "mine.toml") in text


def test_the_check_fails_when_the_readme_differs(tmp_path: Path, monkeypatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text().replace(_block(), "13.7 σ in about 52 runs"))
    monkeypatch.setattr(readme_numbers, "README", readme)
    assert readme_numbers.main([]) == 1
