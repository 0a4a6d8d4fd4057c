"""What counting a JSON file's nesting before parsing it costs (`files.json_depth`, the check in
front of every JSON file archaudit reads): seconds for a large file of shallow records, beside
`json.loads` of the same text, and for a 100,000-deep array (refused without parsing). Medians
of `--rounds` runs.

    .venv/bin/python benchmarks/json_depth.py [--records 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from archaudit.files import json_depth


def seconds(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    records = [{"x": [i, i + 1], "s": 'ab"c[' * 3} for i in range(args.records)]
    text = json.dumps({"items": records})
    deep = "[" * 100_000 + "]" * 100_000
    print(f"{len(text) / 1e6:.1f} MB of records, depth {json_depth(text)}:")
    print(f"  json_depth {seconds(lambda: json_depth(text), args.rounds):.3f} s")
    print(f"  json.loads {seconds(lambda: json.loads(text), args.rounds):.3f} s")
    print(f"100,000-deep array: json_depth {seconds(lambda: json_depth(deep), args.rounds):.3f} s")


if __name__ == "__main__":
    main()
