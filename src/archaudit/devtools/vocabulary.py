"""No verdict is compared by its spelling: `python -m archaudit.devtools.vocabulary`.

Every verdict (`stats.records.verdicts.Verdict`), loop state
(`stats.simulation.sequential.LoopState`) and stability outcome
(`stats.analyses.stability.StabilityOutcome`) is an enum member, and code compares members
(`v.verdict in SIGNIFICANT`, `state is LoopState.OPEN`), never their text (`state == "open"`,
`paper_verdict in ("improver", "regressor")`): a renamed verdict then fails where it is used instead
of silently matching nothing. This check reads every module's syntax tree and reports

- a comparison (`==`, `!=`, `in`, `not in`) with a string literal, or a tuple, list or set of
  them, that spells one of those words;
- a `Verdict(...)` built from a run's status (`Verdict(sample.status)`): a run status is
  another vocabulary (`names.ResultStatus`), and an arm that was not tested has its own
  verdict (`ArmSample.unjudged`).

`diverged` is left out of the spellings: it is also a run status and an event's name, which
are compared by their own words.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from archaudit.devtools.imports import ROOT, modules
from archaudit.stats.analyses.stability import StabilityOutcome
from archaudit.stats.records.verdicts import Verdict
from archaudit.stats.simulation.sequential import LoopState

SHARED = frozenset({Verdict.DIVERGED.value})
"""Spellings another vocabulary shares (a run status, an event): not reported."""
SPELLINGS = (
    frozenset(v.value for v in Verdict)
    | frozenset(s.label for s in LoopState)
    | frozenset(s.value for s in StabilityOutcome)
) - SHARED
"""Every verdict's, loop state's and stability outcome's text."""
COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def spelled(node: ast.expr) -> str | None:
    """The vocabulary word `node` spells: a string literal, or the first in a literal tuple,
    list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value in SPELLINGS else None
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return next((w for w in map(spelled, node.elts) if w), None)
    return None


def findings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each comparison by spelling and each verdict built from a status."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(o, COMPARISONS) for o in node.ops):
            word = next((w for w in map(spelled, [node.left, *node.comparators]) if w), None)
            if word:
                yield node.lineno, f"compares with the spelling {word!r}: compare enum members"
        elif isinstance(node, ast.Call) and _from_status(node):
            yield node.lineno, "builds a Verdict from a run status: use the arm's own verdict"


def _from_status(call: ast.Call) -> bool:
    """`Verdict(...)` with a `.status` anywhere in its arguments."""
    arguments = (part for a in call.args for part in ast.walk(a))
    return _named(call.func, "Verdict") and any(_named(part, "status") for part in arguments)


def _named(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name
    )


def problems(root: Path = ROOT) -> list[str]:
    """One line per finding under `root`; empty when every verdict is compared as a member."""
    lines = []
    for path in modules(root).values():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, what in findings(tree):
            lines.append(f"{path.relative_to(root.parent)}:{line}: {what}")
    return sorted(lines)


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    print("verdicts compared as members" if not found else f"{len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
