"""Issue 41, must-show 4 and item 6: the MDE table before and after the moderated Welch t, and
the candidates it was chosen from, generated into docs/verdicts.md from the stored JSONs.

- before: `design_grid-mde-welch.json` (`design_grid.py --sections mde` with plain Welch),
- after: `design_grid-mde.json` (the same section with the moderated Welch t, the loop's level
  with the audit's profile),
- candidates: `power_candidates.json` (`power_candidates.py`).

    PYTHONPATH=src python benchmarks/mde_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

from doc_blocks import replace_block

HERE = Path(__file__).parent
DOC = HERE.parent / "docs" / "verdicts.md"
MDE_BLOCK = ("<!-- mde_table.py: mde begin -->", "<!-- mde_table.py: mde end -->")
CANDIDATE_BLOCK = (
    "<!-- mde_table.py: candidates begin -->",
    "<!-- mde_table.py: candidates end -->",
)


def mde_table(before: dict, after: dict) -> str:
    lines = [
        "| design | before: printed MDE (power simulated there) | after: printed MDE (power "
        "simulated there) |",
        "|---|---|---|",
    ]
    for name, was in before.items():
        now = after[name]
        lines.append(
            f"| {name} | {was['mde']:.2f} σ ({was['power']:.3f} ± {was['se']:.3f}) | "
            f"{now['mde']:.2f} σ ({now['power']:.3f} ± {now['se']:.3f}) |"
        )
    return "\n".join(lines)


def candidate_table(result: dict) -> str:
    lines = [
        "| design | test | level | panel's worst, fresh draws | simulated MDE (power there, "
        "fresh) | two arms 20× wide: rate at that level; level and MDE covering them |",
        "|---|---|---|---|---|---|",
    ]
    for name, design in result.items():
        if not isinstance(design, dict):
            continue
        for test, r in design["candidates"].items():
            flag = "" if r["ok"] else " **ABOVE**"
            lines.append(
                f"| {name} | {test} | {r['level']:.2g} | {r['worst']:.3f} ± {r['se']:.3f} "
                f"({r['worst_model']}){flag} | {r['mde']:.2f} σ ({r['power_at_mde_fresh']:.3f}) "
                f"| {r['wide_rate_at_panel_level']:.3f}; {r['wide_level']:.2g}, "
                f"{r['wide_mde']:.2f} σ |"
            )
    lines.append(f"\n{result['audits']:,} audits per model and step; CPU {result['cpu_s']:.0f} s.")
    return "\n".join(lines)


def main() -> None:
    before = json.loads((HERE / "design_grid-mde-welch.json").read_text())["mde"]
    after = json.loads((HERE / "design_grid-mde.json").read_text())["mde"]
    replace_block(DOC, *MDE_BLOCK, mde_table(before, after))
    candidates = json.loads((HERE / "power_candidates.json").read_text())
    replace_block(DOC, *CANDIDATE_BLOCK, candidate_table(candidates))


if __name__ == "__main__":
    main()
