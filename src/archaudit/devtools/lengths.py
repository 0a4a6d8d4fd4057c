"""Function lengths in `src/archaudit`: none outside `cli/` may exceed `LIMIT` lines.

    python -m archaudit.devtools.lengths        # the longest functions; exit 1 if any is too long

A function's length runs from its first decorator to its last line, docstring included. The CLI's
command functions are exempt: their signatures list every option, one per line.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # src/archaudit
LIMIT = 60
EXEMPT = ("cli",)


@dataclass(frozen=True)
class Function:
    path: str
    """Relative to src/, e.g. "archaudit/train/loop/trainer.py"."""
    name: str
    line: int
    lines: int


def functions(root: Path = ROOT) -> list[Function]:
    """Every function and method under `root`, longest first (ties by path and line)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in EXEMPT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                assert node.end_lineno is not None  # always set by ast.parse
                name = str(path.relative_to(root.parent))
                found.append(Function(name, node.name, node.lineno, node.end_lineno - first + 1))
    return sorted(found, key=lambda f: (-f.lines, f.path, f.line))


def too_long(root: Path = ROOT, limit: int = LIMIT) -> list[Function]:
    return [f for f in functions(root) if f.lines > limit]


def main() -> int:
    every = functions()
    for f in every[:5]:
        print(f"{f.lines:4d}  {f.path}:{f.line}  {f.name}")
    bad = too_long()
    print(
        f"{len(every)} functions outside cli/: "
        + (f"all at most {LIMIT} lines" if not bad else f"{len(bad)} longer than {LIMIT} lines")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
