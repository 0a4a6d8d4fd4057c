"""The default stress audit: train it, judge it, store the result as test data, and write the
published-directions table of docs/stability.md from it.

    python benchmarks/stress.py [--full | --small] [--runs-dir DIR] [--workers N]
    python benchmarks/stress.py --docs        # only rewrite the docs tables from the stored results

Default: benchmarks/stress/stress.toml (six arms below the tiny preset's width, six rates over
2.5 decades, three seeds, a depth stress of the R7 arms at 2× and 4× the layers): about 25
minutes of CPU on 2 cores. `--small` runs stress-small.toml (the same at 40 steps), `--full`
stress-full.toml (the audit2026 suite's residual, norm and attention-logit arms at the tiny
preset, three seeds, eight rates). The result goes to tests/data/stress/<audit name>.json,
which the default tests read (they never train); the default's and the small one's directions
tables go to docs/stability.md.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from archaudit.audit.spec import load_audit
from archaudit.audit.stress_checks import check_directions, directions_table
from archaudit.audit.stress_result import analyse, read_result, write_result
from archaudit.audit.stress_run import run_stress

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "stress"
DOCS = ROOT / "docs" / "stability.md"
TABLES = {"stress-tiny": "directions", "stress-small": "directions-small"}
"""The stored results whose directions tables docs/stability.md shows, and their markers."""


def write_docs_table(result_path: Path, marker: str) -> None:
    """Replace the table between the markers `marker`:start / :end of docs/stability.md."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    table = directions_table(check_directions(read_result(result_path)))
    text = DOCS.read_text()
    block = f"{start}\n{table}{end}"
    DOCS.write_text(re.sub(f"{re.escape(start)}.*?{re.escape(end)}", block, text, flags=re.S))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full stress audit")
    parser.add_argument("--small", action="store_true", help="the default at 40 steps")
    parser.add_argument("--docs", action="store_true", help="only rewrite the docs table")
    parser.add_argument("--runs-dir", default=None, help="where the runs go [beside the file]")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    name = "stress-full" if args.full else "stress-small" if args.small else "stress"
    audit = HERE / "stress" / f"{name}.toml"
    spec = load_audit(audit, runs_dir=args.runs_dir)
    stored = DATA / f"{spec.name}.json"
    if not args.docs:
        t0, c0 = time.perf_counter(), time.process_time()
        plan = run_stress(spec, workers=args.workers, live=False)
        result = analyse(plan)
        DATA.mkdir(parents=True, exist_ok=True)
        write_result(result, stored)
        print(f"{result.cost}; wall {time.perf_counter() - t0:.0f} s; stored in {stored}")
        print(f"this process's CPU {time.process_time() - c0:.0f} s (the runs' own is in DONE)")
    for audit_name, marker in TABLES.items():
        if (DATA / f"{audit_name}.json").is_file():
            write_docs_table(DATA / f"{audit_name}.json", marker)
    print(f"wrote the directions tables of {DOCS}")


if __name__ == "__main__":
    main()
