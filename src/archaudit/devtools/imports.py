"""The import structure of `src/archaudit`: no cycles, each folder imports only below it, and no
cycle among the folders either.

    python -m archaudit.devtools.imports        # prints what is wrong; exit 1 if anything is

Every `import` statement counts, at any depth: an import inside a function still ties two
modules together, it only hides the tie from the interpreter until the function runs. The
check reads the source with `ast` and imports nothing, so it also works on broken code.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # src/archaudit

# The floors, lowest first. A module may import its own floor and the floors below it. An entry
# names a folder ("stats.records"; "" is src/archaudit itself, whose modules config, errors,
# registry, ... form floor 0) or the entry point `__main__`; a folder not named sits on its
# parent's floor (the most specific entry wins). A folder's front door (its `__init__`) may
# also import the folders inside it, which it re-exports.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"", "config"}),
    # stats, one folder per floor (docs/stats.md): records and tables; tests; the simulated
    # designs that calibrate them; the judge; the analyses and predictions built on
    # judgements; then the `stats` front door with model and data
    frozenset({"stats.records"}),
    frozenset({"stats.inference"}),
    frozenset({"stats.tests"}),  # the registered family tests (guides/statistical-test.md)
    frozenset({"stats.choices"}),  # JudgeOptions (it names a registered test), compare
    frozenset({"stats.simulation"}),
    frozenset({"stats.judging"}),
    frozenset({"stats.analyses", "stats.predictions"}),
    frozenset({"model", "data", "stats"}),
    frozenset({"mods", "evals", "export"}),
    # train: what the callbacks call (step, run, checkpoint, ...); the callbacks; the loop
    # that calls both (train/loop/trainer.py)
    frozenset({"train"}),
    frozenset({"train.callbacks"}),
    frozenset({"train.loop", "diagnose"}),
    # audit, one folder per floor (docs/audit.md): the audit file; how a run starts; the
    # grid and the run directories; the stress sweep; what was found; running; what a plan
    # costs; the literature's claims; then the `audit` front door
    frozenset({"audit.setup"}),
    frozenset({"audit.launcher"}),
    frozenset({"audit.grid"}),
    frozenset({"audit.stability"}),
    frozenset({"audit.results"}),
    frozenset({"audit.execute"}),
    frozenset({"audit.planning"}),
    frozenset({"audit.replicating"}),
    frozenset({"audit"}),
    frozenset({"report"}),
    frozenset({"cli.base"}),  # the app, the option rule, the tables: below every command
    frozenset({"cli", "devtools", "__main__"}),
)

# Packages that must not import these third-party libraries (stats runs without torch).
FORBIDDEN_LIBRARIES: dict[str, frozenset[str]] = {"stats": frozenset({"torch"})}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. "archaudit.audit.setup.spec"
    target: str  # the imported module, e.g. "archaudit.audit.launcher.executors", or "torch"
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module under `root`, by dotted name."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    """The imports in one file, each resolved to the deepest module that exists (`from
    archaudit.audit import runner` is `archaudit.audit.execute.runner`; `from archaudit.mods import
    resolve_arm` is the package `archaudit.mods`). Third-party imports keep their top name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, _resolve(alias.name, known), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield Import(name, full if full in known else _resolve(base, known), node.lineno)


def _resolve(dotted: str, known: set[str]) -> str:
    if not dotted.startswith("archaudit"):
        return dotted.split(".")[0]
    while dotted not in known and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def graph(root: Path = ROOT) -> list[Import]:
    """Every import in the package, internal and third-party, in file and line order."""
    found = modules(root)
    known = set(found)
    return [edge for name, path in found.items() for edge in imports_of(name, path, known)]


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-import), each
    sorted, in sorted order (Tarjan's algorithm)."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        if e.target.startswith("archaudit"):
            succ.setdefault(e.source, set()).add(e.target)
            succ.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in succ[v]:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(succ) + 100))
    for v in sorted(succ):
        if v not in index:
            visit(v)
    return sorted(found)


def package_of(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def floor_of(module: str) -> int | None:
    """The module's floor, or None for a folder that FLOORS does not place yet."""
    parts = module.split(".")[1:]
    for depth in range(len(parts), -1, -1):
        name = ".".join(parts[:depth])
        if depth == 0 and len(parts) > 1:
            return None  # in a folder of its own, which FLOORS does not name
        for level, members in enumerate(FLOORS):
            if name in members:
                return level
    return None


def upward(edges: list[Import]) -> list[Import]:
    """Imports into a floor above the importing module's, except a front door's into its own
    folders, and forbidden third-party imports."""
    bad = []
    for e in edges:
        if e.target.startswith(e.source + "."):
            continue  # a front door re-exports what lies inside it
        if e.target.startswith("archaudit"):
            source, target = floor_of(e.source), floor_of(e.target)
            if source is not None and target is not None and target > source:
                bad.append(e)
        elif e.target in FORBIDDEN_LIBRARIES.get(package_of(e.source), ()):
            bad.append(e)
    return bad


def folder_of(module: str, found: dict[str, Path]) -> str:
    """The node a module is at folder grain: its folder (`archaudit.stats.records` for
    `archaudit.stats.records.table`), except a front door (`__init__`), which stands for the
    names it re-exports from the folders inside it and is a node of its own, and `__main__`."""
    if module.endswith(".__main__"):
        return module
    path = found.get(module)
    front_door = path is not None and path.name == "__init__.py"
    return f"{module}.__init__" if front_door else module.rpartition(".")[0]


def folder_edges(edges: list[Import], found: dict[str, Path]) -> list[Import]:
    """The imports between folders: an edge per module import whose two folders differ."""
    return [
        Import(folder_of(e.source, found), folder_of(e.target, found), e.line)
        for e in edges
        if e.target.startswith("archaudit")
        and folder_of(e.source, found) != folder_of(e.target, found)
    ]


def folder_cycles(root: Path = ROOT) -> list[list[str]]:
    """The folders that import each other, each group sorted (none when every folder is a
    floor: a folder that imports a folder above it and is imported back is one of these)."""
    found = modules(root)
    return cycles(folder_edges(graph(root), found))


def folder_sizes(root: Path = ROOT) -> dict[str, int]:
    """Modules per folder (a front door counts in its own folder), largest first."""
    sizes: dict[str, int] = {}
    for path in modules(root).values():
        folder = module_name(path.parent / "__init__.py", root)
        sizes[folder] = sizes.get(folder, 0) + 1
    return dict(sorted(sizes.items(), key=lambda item: (-item[1], item[0])))


def largest_folder(root: Path = ROOT) -> str:
    """One line: the folder with the most modules and its share of all of them."""
    sizes = folder_sizes(root)
    folder, n = next(iter(sizes.items()))
    total = sum(sizes.values())
    return f"largest folder: {folder}, {n} of {total} modules ({100 * n / total:.1f}%)"


def problems(root: Path = ROOT) -> list[str]:
    """One line per cycle (of modules and of folders) and per upward import; empty when the
    structure holds."""
    edges = graph(root)
    unplaced = sorted({m.rpartition(".")[0] for m in modules(root) if floor_of(m) is None})
    lines = [f"no floor: {p} (add its folder to FLOORS in archaudit/devtools/imports.py)"
             for p in unplaced]  # fmt: skip
    lines += [f"cycle: {' ↔ '.join(c)}" for c in cycles(edges)]
    lines += [f"folder cycle: {' ↔ '.join(c)}" for c in folder_cycles(root)]
    for e in upward(edges):
        path = modules(root)[e.source].relative_to(root.parent)
        lines.append(f"upward: {path}:{e.line}: {e.source} imports {e.target}")
    return lines


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    n = len(modules())
    print(f"{n} modules in {len(folder_sizes())} folders; {largest_folder()}")
    print(f"{n} modules: " + ("structure holds" if not found else f"{len(found)} problem(s)"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
