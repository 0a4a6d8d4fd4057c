"""The design numbers README's worked audit and `archaudit init`'s starters state, from `plan`.

    python -m archaudit.devtools.readme_numbers           # check: exit 1 when they differ
    python -m archaudit.devtools.readme_numbers --write   # rewrite them

Issue 57: the README said 13.7 σ and a loop reaching 3.4 σ in about 52 runs where `plan` printed
5.68 σ and 4.25 σ in about 81, and the starter called `--until-settled` "cheaper for the same
power" for a file whose plan showed it needing more. Each number here is what `plan --no-probe
--until-settled` computes for the file (`plan_power`'s MDE lines, `sequential_estimate`'s loop
and the fixed design of the same power): README's block between `README_START` and `README_END`
for its worked audit (`archaudit init my_audit.toml --arms suite:audit2026`), and the advice
under `[seeds]` of each starter `init` writes with known arms (`ADVICE_FILE`; other arms get
`starter.GENERIC_ADVICE`). Rerun with `--write` after a change of the starters, the power
formula, the calibration or the loop: `tests/audit/test_readme_numbers.py` fails until then.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from archaudit.audit.setup.starter import ADVICE_FILE, DEFAULT_ARMS, advice_key

README = Path(__file__).resolve().parents[3] / "README.md"
README_START = "<!-- plan-numbers: python -m archaudit.devtools.readme_numbers --write -->"
README_END = "<!-- /plan-numbers -->"
README_ARMS = ("suite:audit2026",)
"""The arms of the README's worked audit."""
STARTERS = (DEFAULT_ARMS, README_ARMS)
"""The arm lists whose starter states `plan`'s numbers (`ADVICE_FILE`)."""


@dataclass(frozen=True)
class DesignNumbers:
    """What `plan --no-probe --until-settled` says of one file's design."""

    arms: int
    scales: int
    seeds: int
    """Seeds per arm of the fixed design the file asks for."""
    alpha: str
    """The level each primary metric is judged at, in words ("α/2 per primary metric")."""
    fixed_mde: float
    """The fixed design's MDE in σ (the largest over its families)."""
    loop_seeds: int
    loop_mde: float
    loop_runs_per_scale: float
    loop_runs: float
    """The loop's expected runs in all (`sequential_estimate`, its families summed)."""
    same_power_runs: float
    """The runs of the fixed design with the loop's power."""
    same_power_seeds: int

    @property
    def loop_is_cheaper(self) -> bool:
        return round(self.loop_runs) < round(self.same_power_runs)


def design_numbers(arms: tuple[str, ...]) -> DesignNumbers:
    """`plan --no-probe --until-settled`'s numbers for `archaudit init`'s starter with `arms`."""
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.planning.estimate import SEQUENTIAL, sequential_estimate
    from archaudit.audit.planning.power_plan import plan_power
    from archaudit.audit.setup.spec import load_audit
    from archaudit.audit.setup.starter import write_starter

    with tempfile.TemporaryDirectory(prefix="archaudit-readme-") as tmp:
        path = write_starter(Path(tmp) / "my_audit.toml", arms=arms, force=True)
        plan = make_plan(load_audit(path, [SEQUENTIAL], runs_dir=Path(tmp) / "runs"))
    families = plan_power(plan)
    estimate = sequential_estimate(plan)
    first = families[0]
    primaries = first.primaries
    return DesignNumbers(
        arms=first.design.m,
        scales=len(families),
        seeds=max(seeds for seeds, _ in first.mdes),
        alpha=f"α/{primaries} per primary metric" if primaries > 1 else "α",
        fixed_mde=max(mde for family in families for _, mde in family.mdes),
        loop_seeds=first.loop_seeds,
        loop_mde=max(family.loop_mde for family in families),
        loop_runs_per_scale=max(family.loop_runs for family in families),
        loop_runs=estimate.sequential.expected_runs,
        same_power_runs=estimate.fixed.runs,
        same_power_seeds=estimate.fixed.seeds_per_arm,
    )


def readme_block(n: DesignNumbers) -> str:
    """README's lines between its markers for the worked audit."""
    verdict = "fewer" if n.loop_is_cheaper else "more"
    return (
        f"`plan --no-probe --until-settled` on this file: {n.arms} arms × {n.seeds} fixed seeds "
        f"detect {n.fixed_mde:.2f} σ at {n.alpha}; the loop (≤ {n.loop_seeds} seeds) "
        f"{n.loop_mde:.2f} σ in about {n.loop_runs_per_scale:.0f} runs per scale, "
        f"{n.loop_runs:.0f} in all, {verdict} than the {n.same_power_runs:.0f} the fixed design "
        f"of the same power ({n.same_power_seeds} seeds per arm) needs. Plain `run` runs the "
        "fixed design; both are resumable: kill, rerun, nothing is lost."
    )


def starter_advice(n: DesignNumbers) -> str:
    """The starter's advice under `[seeds]`: the fixed design's MDE and whether the loop is
    cheaper in runs for the same power, as `plan` computes them for that file."""
    if n.loop_is_cheaper:
        loop = (
            f"--until-settled (≤ {n.loop_seeds} seeds) reaches {n.loop_mde:.2f} σ in about "
            f"{n.loop_runs:.0f} runs where the fixed design of the same power needs "
            f"{n.same_power_runs:.0f}"
        )
    else:
        loop = (
            f"--until-settled needs about {n.loop_runs:.0f} runs where the fixed design of "
            f"the same power needs {n.same_power_runs:.0f}: plain `run` is the cheaper here"
        )
    return f"{n.seeds} seeds detect {n.fixed_mde:.2f} σ with {n.arms} arms; {loop}"


def rendered_readme(text: str, block: str) -> str:
    """README's `text` with the lines between its markers replaced by `block`."""
    head, found, rest = text.partition(README_START)
    _, found_end, tail = rest.partition(README_END)
    if not found or not found_end:
        raise SystemExit(f"README.md has no {README_START} ... {README_END} block")
    return f"{head}{README_START}\n{block}\n{README_END}{tail}"


def advice() -> dict[str, str]:
    """Each known starter's advice, by `advice_key` of its arms."""
    return {advice_key(arms): starter_advice(design_numbers(arms)) for arms in STARTERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite README's block and advice")
    args = parser.parse_args(argv)
    readme = rendered_readme(README.read_text(), readme_block(design_numbers(README_ARMS)))
    advice_text = json.dumps(advice(), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    changed = [
        path.name
        for path, text in ((README, readme), (ADVICE_FILE, advice_text))
        if not path.is_file() or path.read_text() != text
    ]
    if args.write:
        README.write_text(readme)
        ADVICE_FILE.write_text(advice_text)
        print(f"wrote {README} and {ADVICE_FILE}")
        return 0
    for name in changed:
        print(f"differs from plan's numbers: {name}")
    if changed:
        print("run `python -m archaudit.devtools.readme_numbers --write`")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
