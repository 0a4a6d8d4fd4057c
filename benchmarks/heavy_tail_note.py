"""Issue 53, item 6: how often the "heavy tail" note fires on tables of pure normal noise.

Each table draws a baseline of 3 seeds and the arms of one design from N(0, 1), and asks
`outlier_seeds` (with the family's robust σ, `family_scale`) whether any seed of an arm with
>= 3 seeds lies beyond `OUTLIER_MADS` robust σ from its arm's median: exactly the note
`judge` prints.

    PYTHONPATH=src nice -n 10 python benchmarks/heavy_tail_note.py [--tables 4000]

Writes benchmarks/heavy_tail_note.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from archaudit.stats.inference.outliers import family_scale, outlier_seeds

DESIGNS = {
    "2 × 2, baseline 3": (2, 2),
    "2 × 3, baseline 3": (3, 3),
    "19 × 3, baseline 3": (3,) * 19,
    "19 × 5, baseline 3": (5,) * 19,
    "10 × 1 + 5 × 2 + 4 × 3, baseline 3": (1,) * 10 + (2,) * 5 + (3,) * 4,
}


def note_rate(arm_seeds: tuple[int, ...], tables: int, seed: int = 0) -> float:
    """Share of normal-noise tables on which the heavy-tail note fires."""
    rng = np.random.default_rng(seed)
    fired = 0
    for _ in range(tables):
        groups = [rng.standard_normal(n) for n in (3, *arm_seeds)]
        scale = family_scale(groups)
        fired += any(outlier_seeds(g, range(len(g)), scale) for g in groups)
    return fired / tables


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=4000)
    args = parser.parse_args()
    result = {name: note_rate(seeds, args.tables) for name, seeds in DESIGNS.items()}
    print("| design | tables | note fires |\n|---|---|---|")
    for name, rate in result.items():
        print(f"| {name} | {args.tables:,} | {rate:.3f} |")
    out = Path(__file__).with_name("heavy_tail_note.json")
    out.write_text(json.dumps({"tables": args.tables, "rates": result}, indent=1))


if __name__ == "__main__":
    main()
