"""Options that mean the same on every command: `--plugin` after the subcommand, `train --arm`,
the shared preset default, placeholders in help texts."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from archaudit.cli import app, register_commands
from archaudit.config import load_config, to_dict
from archaudit.mods import registry as mods_registry
from archaudit.mods import resolve_arm
from archaudit.rundir import SPEC

PLUGIN = """
from archaudit.mods import Citation, modification


@modification("house_softcap_20", family="attention-logits", citation=Citation("Doe", 2026, "x"),
              description="soft-cap at 20", formula="z ← 20·tanh(z/20)")
def house_softcap_20(cfg):
    return {"attention.logit_softcap": 20.0}
"""

AUDIT = """
name = "plug"
arms = ["house_softcap_20"]
[seeds]
noise_floor = 2
[eval]
suite = ""
[recipe]
steps = 4
batch_tokens = 512
[scales.xs]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
"""

TINY = [
    "--set",
    "recipe.steps=2",
    "--set",
    "recipe.batch_tokens=512",
    "--set",
    "recipe.corpus_chars=50000",
]


@pytest.fixture(autouse=True)
def _registries(monkeypatch):
    """Plugins register into copies, so no test leaves one behind for the next."""
    register_commands()
    monkeypatch.setattr(
        mods_registry.MODIFICATIONS, "_items", dict(mods_registry.MODIFICATIONS._items)
    )
    monkeypatch.setattr(mods_registry, "_ALIASES", dict(mods_registry._ALIASES))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch) -> str:
    (tmp_path / "house_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "house_plugin", raising=False)
    return "house_plugin"


def plain(config: object) -> dict:
    return json.loads(json.dumps(to_dict(config)))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_plugin_after_the_subcommand_as_before_it(tmp_path: Path, plugin: str) -> None:
    audit = tmp_path / "plug.toml"
    audit.write_text(AUDIT)
    without = invoke("plan", str(audit), "--no-probe", "--json")
    assert without.exit_code != 0 and "house_softcap_20" in str(without.exception)
    for args in (
        ("plan", str(audit), "--no-probe", "--json", "--plugin", plugin),
        ("--plugin", plugin, "plan", str(audit), "--no-probe", "--json"),
    ):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        arms = {run["arm"] for run in json.loads(result.stdout)["runs"]}
        assert arms == {"baseline", "house_softcap_20"}, args


@pytest.mark.parametrize("arm", ["qk_norm+geglu", "house_softcap_20", "no_warmup"])
def test_train_arm_applies_the_catalogue_entry(tmp_path: Path, plugin: str, arm: str) -> None:
    out = tmp_path / "run"
    result = invoke("train", "--out", str(out), "--arm", arm, *TINY, "--json", "--plugin", plugin)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["arm"] == arm
    model, recipe = load_config(None, overrides=TINY[1::2])
    chosen = resolve_arm(arm)
    expected_model, expected_recipe = chosen.apply(model), chosen.apply_recipe(recipe)
    stored = json.loads((out / SPEC).read_text())
    assert stored["model"] == plain(expected_model)
    assert stored["recipe"] == plain(expected_recipe)
    assert (stored["model"], stored["recipe"]) != (plain(model), plain(recipe)), "it changed"


def test_train_arm_unknown_name_suggests_the_closest(tmp_path: Path) -> None:
    result = invoke("train", "--out", str(tmp_path / "x"), "--arm", "qk_nrom", *TINY)
    assert "did you mean 'qk_norm'" in str(result.exception)
    assert not (tmp_path / "x").exists()


def test_mods_show_and_train_share_the_default_preset() -> None:
    shown = json.loads(invoke("mods", "show", "softpick", "--json").stdout)
    model, _ = load_config(None)  # what `train` builds without --preset
    assert shown["size"]["d_model"] == model.d_model and shown["size"]["n_layers"] == model.n_layers


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_placeholders_in_help_survive_rendering() -> None:
    """Markdown help drops `<audit>` as an HTML tag unless escaped: every `<name>` written in a
    help text must show on the rendered --help (the `runs//` the issue reported)."""
    root = typer.main.get_command(app)
    checked = 0
    for path, command in _commands(root):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        wanted = {m for t in texts for m in re.findall(r"<[^<>\s]+>", t.replace("\\", ""))}
        if not wanted:
            continue
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
        shown = " ".join(result.stdout.split())
        for placeholder in wanted:
            assert placeholder in shown, f"archaudit {' '.join(path)} --help drops {placeholder}"
            checked += 1
    assert checked >= 7  # runs/<audit>, <dir>, <run>, <csv>, ...


def test_flags_show_no_value_type_in_help() -> None:
    """Issue 22: every flag showed a `<bool>` metavar, as if it took a value."""
    root = typer.main.get_command(app)
    for path, command in _commands(root):
        flags = [p for p in command.params if getattr(p, "is_flag", False)]
        if not flags:
            continue
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
        assert "<bool>" not in result.stdout, f"archaudit {' '.join(path)} --help"


def test_init_suite_help_lists_the_suites_and_a_bad_name_lists_them_too() -> None:
    from archaudit.cli.audit_cmd import SUITE_NAMES
    from archaudit.mods.suites import list_suites

    assert list(SUITE_NAMES) == list_suites()  # --help spells them without the catalogue
    shown = " ".join(
        CliRunner().invoke(app, ["init", "--help"], env={"COLUMNS": "250"}).stdout.split()
    )
    assert all(name in shown for name in SUITE_NAMES)
    result = CliRunner().invoke(app, ["init", "x.toml", "--arms", "suite:audit2025"])
    assert result.exit_code != 0
    assert "suites: " + ", ".join(SUITE_NAMES) in str(result.exception)


def test_every_command_declares_its_options_in_one_style() -> None:
    """Issue 26: one typer option style. A parameter says `name: Annotated[T, typer.Option(
    "--flag", ...)] = default`, never `name: T = typer.Option(default, ...)` (audit_cmd and
    others did), and every option names its flag (eval's took them from the parameter) or
    takes it from its `JudgeOptions` field."""
    import ast

    cli = Path(__file__).parents[2] / "src" / "archaudit" / "cli"
    old_style = []
    for path in sorted(cli.rglob("*.py")):  # cli/stats/ too
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
                old_style += [
                    f"{path.name}:{d.lineno}"
                    for d in defaults
                    if isinstance(d, ast.Call) and ast.unparse(d.func).startswith("typer.")
                ]
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                shared = ast.unparse(node.value.func) in ("typer.Option", "typer.Argument")
                old_style += [f"{path.name}:{node.lineno}"] if shared else []
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "typer.Option":
                first = node.args[0] if node.args else None
                named = isinstance(first, ast.Constant) and str(first.value).startswith("-")
                # generated flags are named by their dataclass field (cli/base/options.py)
                named = named or ast.unparse(first or node) == "*names"
                old_style += [] if named else [f"{path.name}:{node.lineno} (no flag name)"]
    assert not old_style, f"options outside Annotated[...] or unnamed: {old_style}"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{audit}", "--workers", "nan"],
        ["run", "{audit}", "--workers", "1e9"],
        ["plan", "{audit}", "--max-seeds", "x"],
        ["train", "--seed", "nan"],
        ["run", "{audit}", "--no-such-flag"],
    ],
)
def test_a_bad_flag_value_is_one_line_not_the_usage_box(
    argv: list[str], tmp_path: Path, monkeypatch, capsys
) -> None:
    """Issue 44: `--workers nan`, `--seed nan` got typer's multi-line usage box; main() says
    it in one line naming the command and the value, exit 2."""
    from archaudit.cli import main

    audit = tmp_path / "audit.toml"
    audit.write_text(AUDIT)
    given = [a.replace("{audit}", str(audit)) for a in argv]
    monkeypatch.setattr(sys, "argv", ["archaudit", *given])
    with pytest.raises(SystemExit) as exit_:
        main()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and f"archaudit {given[0]}" in line, line
    assert given[-1] in line and "Usage:" not in line, line
