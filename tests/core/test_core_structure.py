"""The import structure: no cycles in src/archaudit, and evals, stats and model import nothing
above them (stats not torch either). `python -m archaudit.devtools.imports` prints the same."""

from __future__ import annotations

from pathlib import Path

from archaudit.devtools import imports, lengths


def test_the_package_has_no_import_cycle() -> None:
    assert imports.cycles(imports.graph()) == []


def test_no_package_imports_a_floor_above_it() -> None:
    assert [f"{e.source}:{e.line} → {e.target}" for e in imports.upward(imports.graph())] == []


def test_every_package_has_a_floor() -> None:
    assert all(imports.floor_of(m) is not None for m in imports.modules())


def test_evals_stats_and_model_stay_low() -> None:
    # Pinned separately from FLOORS so that moving a package up there cannot hide a breach:
    # besides the floor-0 modules (config, errors, ...), stats imports nothing of archaudit,
    # model only data (tokenizers, to load a checkpoint), evals only data, model and stats.
    packages = {"stats": set(), "model": {"data"}, "evals": {"data", "model", "stats"}}
    for e in imports.graph():
        package = imports.package_of(e.source)
        if package in packages and e.target.startswith("archaudit."):
            target = imports.package_of(e.target)
            assert target in packages[package] | {package} or imports.floor_of(e.target) == 0, e
        if package == "stats":
            assert e.target != "torch", e


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "archaudit" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "archaudit"


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "audit/__init__.py": "",
            "audit/spec.py": "def f():\n    from archaudit.audit.store import x\n",
            "audit/store.py": "from archaudit.audit import spec\n",
            "stats/__init__.py": "def g():\n    import torch\n    from archaudit.train import t\n",
            "train/__init__.py": "",
        },
    )
    assert imports.cycles(imports.graph(root)) == [
        ["archaudit.audit.spec", "archaudit.audit.store"]
    ]
    assert imports.problems(root) == [
        "cycle: archaudit.audit.spec ↔ archaudit.audit.store",
        "upward: archaudit/stats/__init__.py:2: archaudit.stats imports torch",
        "upward: archaudit/stats/__init__.py:3: archaudit.stats imports archaudit.train",
    ]


def test_relative_imports_resolve(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "model/__init__.py": "from . import a\n",
            "model/a.py": "from .. import model\n",
        },
    )
    assert imports.cycles(imports.graph(root)) == [["archaudit.model", "archaudit.model.a"]]


def test_no_function_outside_the_cli_is_longer_than_the_limit() -> None:
    assert [f"{f.path}:{f.line} {f.name} ({f.lines} lines)" for f in lengths.too_long()] == []


def test_the_length_check_counts_decorators_and_docstrings(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(57))
    source = f'@decorator\ndef f():\n    """Doc."""\n{body}\n'
    root = _write(tmp_path, {"a.py": source, "cli/b.py": source.replace("def f", "def g")})
    assert [(f.name, f.lines) for f in lengths.functions(root)] == [("f", 60)]
    _write(tmp_path, {"a.py": source + "    x = 0\n"})
    assert [f.name for f in lengths.too_long(root)] == ["f"]


def test_stats_keeps_its_layers(tmp_path: Path) -> None:
    """Issue 40: inside stats, tests → simulation → judge → analyses, nothing back up (a test that
    imports the simulation, or the judge that imports an analysis, is refused)."""
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "stats/__init__.py": "from archaudit.stats.analyses import transfer\n",
            "stats/inference/__init__.py": "",
            "stats/choices/compare.py": "from archaudit.stats.simulation import design\n",
            "stats/simulation/__init__.py": "",
            "stats/simulation/design.py": "from archaudit.stats.inference import compare\n",
            "stats/judging/__init__.py": "",
            "stats/judging/judgement.py": "from archaudit.stats.analyses.transfer import t\n",
            "stats/analyses/__init__.py": "",
            "stats/analyses/transfer.py": "from archaudit.stats.judging import judgement\n",
        },
    )
    upward = [line for line in imports.problems(root) if line.startswith("upward")]
    assert upward == [
        "upward: archaudit/stats/choices/compare.py:1: archaudit.stats.choices.compare "
        "imports archaudit.stats.simulation.design",
        "upward: archaudit/stats/judging/judgement.py:1: archaudit.stats.judging.judgement "
        "imports archaudit.stats.analyses.transfer",
    ]


def test_no_folder_imports_a_folder_that_imports_it_back() -> None:
    """Issue 56: the folders are the layers. On the layout before it, `stats/` held floors 1, 2
    and 4 (stats ↔ inference ↔ simulation ↔ predictions) and `train/` both what the callbacks
    call and the trainer that calls them."""
    assert imports.folder_cycles() == []


def test_every_floor_names_a_folder() -> None:
    """A floor is a set of folders (`""` is src/archaudit itself), never one module of one."""
    for floor in imports.FLOORS:
        for entry in sorted(floor):
            folder = imports.ROOT.joinpath(*entry.split(".")) if entry else imports.ROOT
            assert entry == "__main__" or (folder / "__init__.py").is_file(), entry


def test_a_front_door_is_above_its_folders_but_a_member_is_not(tmp_path: Path) -> None:
    """A package's `__init__` that re-exports its subfolder (the plugin catalogue's pattern)
    is no folder cycle; a module beside it that the subfolder imports, and that imports the
    subfolder back, is one."""
    files = {
        "__init__.py": "",
        "mods/__init__.py": "from archaudit.mods import catalogue\n",
        "mods/registry.py": "",
        "mods/catalogue/__init__.py": "",
        "mods/catalogue/mlp.py": "from archaudit.mods.registry import modification\n",
    }
    root = _write(tmp_path, files)
    assert imports.folder_cycles(root) == []
    _write(tmp_path, {"mods/arms.py": "from archaudit.mods.catalogue import mlp\n"})
    assert imports.folder_cycles(root) == [["archaudit.mods", "archaudit.mods.catalogue"]]
    assert "folder cycle: archaudit.mods ↔ archaudit.mods.catalogue" in imports.problems(root)


def test_the_largest_folder_and_its_share(tmp_path: Path) -> None:
    files = {"__init__.py": "", "a.py": "", "audit/__init__.py": ""}
    files |= {f"audit/m{i}.py": "" for i in range(5)}
    root = _write(tmp_path, files)
    assert imports.folder_sizes(root) == {"archaudit.audit": 6, "archaudit": 2}
    assert imports.largest_folder(root) == "largest folder: archaudit.audit, 6 of 8 modules (75.0%)"
