"""`archaudit import lm-eval`: real lm-eval output (SmolLM2-135M on ARC-Easy items, made by
tests/data/lmeval/make_smollm2.py) into results.csv and items.csv, then verdicts and a paired
item test on them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from archaudit.errors import ConfigError
from archaudit.evals.lmeval_results import import_lmeval
from archaudit.stats import VERDICTS, compare_items, judge, load_items, load_table
from archaudit.stats.choices.options import JudgeOptions

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "lmeval" / "smollm2"
RUNS = sorted(FIXTURES.glob("*/seed-*"))
TASK = "arc_easy_local"


def _samples(run: Path) -> dict[str, float]:
    (path,) = run.rglob(f"samples_{TASK}_*.jsonl")
    return {str(s["doc_id"]): s["acc"] for s in map(json.loads, path.read_text().splitlines())}


def test_import_reads_what_lmeval_wrote(tmp_path: Path) -> None:
    result = import_lmeval(RUNS, tmp_path, arm_from="parent")
    assert [(r.arm, r.scale, r.seed, r.items) for r in result.runs] == [
        ("baseline", "135M", 0, 24), ("baseline", "135M", 1, 24), ("baseline", "135M", 2, 24),
        ("zero_shot", "135M", 0, 32),
    ]  # fmt: skip
    table = load_table(tmp_path)
    for run in RUNS:
        (results,) = run.rglob("results_*.json")
        reported = json.loads(results.read_text())["results"][TASK]
        arm, seed = run.parent.name, int(run.name.removeprefix("seed-"))
        rows = {r.metric: r.value for r in table.rows if (r.arm, r.seed) == (arm, seed)}
        assert rows[f"{TASK}/acc"] == reported["acc,none"]
        assert rows[f"{TASK}/acc_norm"] == reported["acc_norm,none"]
        assert rows["downstream_avg"] == rows[f"{TASK}/score"] == reported["acc,none"]
        items = load_items(tmp_path).answers(arm, "135M", TASK)[seed]
        assert {item: float(ok) for (_, item), ok in items.items()} == _samples(run)


def test_verdicts_and_a_paired_item_test_on_imported_runs(tmp_path: Path) -> None:
    import_lmeval(RUNS, tmp_path, arm_from="parent")
    judgement = judge(tmp_path, f"{TASK}/acc", JudgeOptions(baseline="baseline"))
    (arm,) = judgement.arms
    assert arm.arm == "zero_shot" and arm.verdict in VERDICTS and judgement.baseline_n == 3
    paired = compare_items(tmp_path, "zero_shot", "baseline", "135M", task=TASK)
    # --limit 24 (baseline) against --limit 32: the paired test uses the 24 items both answered
    assert paired.n_items == 24
    base = [_samples(r) for r in RUNS if r.parent.name == "baseline"]
    zero = _samples(FIXTURES / "zero_shot" / "seed-0")
    common = sorted(base[0])
    expected = sum(zero[i] - sum(b[i] for b in base) / 3 for i in common) / len(common)
    assert paired.difference.difference == pytest.approx(expected)


def test_runs_that_land_on_one_arm_and_seed_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"both arm='seed-0'.*--arm-from"):
        import_lmeval(RUNS, tmp_path, arm_from="dir")
    with pytest.raises(ConfigError, match=r"--seed-from 'model' gives 'smollm2-135m-instruct-q4'"):
        import_lmeval(RUNS[:1], tmp_path, seed_from="model")
    with pytest.raises(ConfigError, match=r"did you mean 'parent'"):
        import_lmeval(RUNS[:1], tmp_path, arm_from="parnt")


def test_regex_labels_and_results_without_samples(tmp_path: Path) -> None:
    for run in RUNS[:2]:
        shutil.copytree(run, tmp_path / "in" / f"shots1-s{run.name[-1]}")
    for path in (tmp_path / "in").rglob("samples_*.jsonl"):
        path.unlink()
    result = import_lmeval(
        [tmp_path / "in"], tmp_path / "out", arm_from=r"regex:(shots\d)", seed_from=r"regex:-s(\d)"
    )
    assert [(r.arm, r.seed) for r in result.runs] == [("shots1", 0), ("shots1", 1)]
    assert result.items is None and not (tmp_path / "out" / "items.csv").exists()


def test_cli_import_then_stats(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands

    register_commands()
    runner = CliRunner()
    done = runner.invoke(
        app, ["import", "lm-eval", *map(str, RUNS), "--arm-from", "parent", "--out", str(tmp_path)]
    )
    assert done.exit_code == 0, done.output
    assert "zero_shot / 135M / seed 0: arc_easy_local (32 items)" in done.output
    stats = runner.invoke(
        app, ["stats", "items", str(tmp_path), "--scale", "135M", "--json", "--quiet"]
    )
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)[0]["n_items"] == 24


def _copy(tmp_path: Path, layout: dict[str, Path]) -> Path:
    """The fixture runs copied under `in/<name>` (name → run)."""
    for name, run in layout.items():
        shutil.copytree(run, tmp_path / "in" / name)
    return tmp_path / "in"


def _edit(folder: Path, edit) -> None:
    (path,) = folder.rglob("results_*.json")
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))


def test_auto_scale_keeps_arms_with_a_few_more_parameters_on_one_scale(tmp_path: Path) -> None:
    """Issue 36: `--scale-from params` labels 133K and 134K apart; `auto` (the default) puts
    counts within 1.5x on one scale, and says so."""
    root = _copy(tmp_path, {"baseline/seed-0": RUNS[0], "baseline/seed-1": RUNS[1],
                            "qk_norm/seed-0": RUNS[3]})  # fmt: skip
    for folder, n in (("baseline/seed-0", 133_000), ("baseline/seed-1", 133_000),
                      ("qk_norm/seed-0", 134_100)):  # fmt: skip
        _edit(root / folder, lambda d, n=n: d["config"].update(model_num_parameters=n))
    result = import_lmeval([root], tmp_path / "auto", arm_from="parent")
    assert {r.scale for r in result.runs} == {"133K"}
    assert any("within 1.5x share one scale" in c for c in result.choices)
    split = import_lmeval([root], tmp_path / "params", arm_from="parent", scale_from="params")
    assert {r.scale for r in split.runs} == {"133K", "134K"}


def test_auto_seeds_never_collide(tmp_path: Path) -> None:
    """lm-eval's few-shot seed is the same for every run here: `auto` numbers an arm's runs in
    path order when no seed-N folder names them, and says so."""
    root = _copy(tmp_path, {"a/first": RUNS[0], "a/second": RUNS[1]})
    for folder in ("a/first", "a/second"):
        _edit(root / folder, lambda d: d["config"].update(fewshot_seed=1234))
    result = import_lmeval([root], tmp_path / "out", arm_from="parent")
    assert [(r.arm, r.seed) for r in result.runs] == [("a", 0), ("a", 1)]
    assert any("numbered 0, 1" in c for c in result.choices)
    with pytest.raises(ConfigError, match="both arm='a'"):
        import_lmeval([root], tmp_path / "seed", arm_from="parent", seed_from="seed")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(results=[1, 2]), "'results' is list, not a table"),
        (lambda d: d["results"]["arc_easy_local"].update({"acc,none": 10**400}), "not a finite"),
        (lambda d: d["results"].update({"../x": d["results"].pop("arc_easy_local")}),
         "'../x' is not a plain task name"),
        (lambda d: d["results"]["arc_easy_local"].update({"acc,none": "0.5"}),
         "main metric 'acc' is not a number"),
        (lambda d: d["config"].update(model_num_parameters="lots"), "not a parameter count"),
    ],
)  # fmt: skip
def test_a_hostile_results_file_is_one_line(edit, message: str, tmp_path: Path) -> None:
    from archaudit.errors import DataError

    root = _copy(tmp_path, {"a/seed-0": RUNS[0]})
    _edit(root / "a/seed-0", edit)
    with pytest.raises(DataError, match=re.escape(message)):
        import_lmeval([root], tmp_path / "out", arm_from="parent")
    assert not (tmp_path / "out").exists()


def test_a_torn_samples_line_and_a_size_as_parameter_count(tmp_path: Path) -> None:
    from archaudit.errors import DataError

    root = _copy(tmp_path, {"a/seed-0": RUNS[0]})
    _edit(root / "a/seed-0", lambda d: d["config"].update(model_num_parameters="135M"))
    assert import_lmeval([root], tmp_path / "ok", arm_from="parent").runs[0].scale == "135M"
    (samples,) = root.rglob("samples_*.jsonl")
    samples.write_text(samples.read_text()[:-40])
    with pytest.raises(DataError, match=r"samples_.*\.jsonl:24: not a JSON line"):
        import_lmeval([root], tmp_path / "torn", arm_from="parent")


def test_a_formula_folder_name_is_quoted_in_the_csv_and_read_back(tmp_path: Path) -> None:
    name = "=cmd|'-C calc'!A0"
    root = _copy(tmp_path, {f"{name}/seed-0": RUNS[0]})
    import_lmeval([root], tmp_path / "out", arm_from="parent")
    text = (tmp_path / "out" / "results.csv").read_text()
    assert f"\n'{name}," in text and f"\n{name}," not in text
    assert load_table(tmp_path / "out").arms == (name,)


@pytest.mark.parametrize("name", ["'=x", "''+1", "'plain"])
def test_a_name_that_only_looks_escaped_comes_back_as_it_was(name: str, tmp_path: Path) -> None:
    """Issue 44: an arm named '=x came back as =x after import (the apostrophe was read as
    safe_cell's escape)."""
    root = _copy(tmp_path, {f"{name}/seed-0": RUNS[0], "baseline/seed-0": RUNS[1]})
    import_lmeval([root], tmp_path / "out", arm_from="parent")
    assert set(load_table(tmp_path / "out").arms) == {name, "baseline"}


def _one_output_path(
    tmp_path: Path,
    models: dict[str, Path],
    args: dict[str, str],
    folders: dict[str, str] | None = None,
) -> Path:
    """lm-eval's habit: one --output_path, a subfolder per model (model_name_sanitized, or the
    name `folders` gives)."""
    out = tmp_path / "in" / "evals"
    for name, run in models.items():
        (source,) = run.iterdir()
        sanitized = args[name].partition(",")[0].removeprefix("pretrained=").replace("/", "__")
        sanitized = (folders or {}).get(name, sanitized)
        shutil.copytree(source, out / sanitized)
        _edit(
            out / sanitized,
            lambda d, a=args[name], s=sanitized: (
                d["config"].update(model="hf", model_args=a),
                d.update(model_name_sanitized=s),
            ),
        )
    return out


def test_two_models_in_one_output_folder_import_as_two_arms(tmp_path: Path) -> None:
    """Issue 44: lm-eval runs of baseline and qk_norm written to one --output_path became one
    arm (qk_norm was baseline's seed 1). `auto` (the default) names them by model, says so."""
    args = {"baseline": "pretrained=ckpt/baseline,dtype=float32",
            "qk_norm": "pretrained=ckpt/qk_norm,dtype=float32"}  # fmt: skip
    root = _one_output_path(tmp_path, {"baseline": RUNS[0], "qk_norm": RUNS[3]}, args)
    result = import_lmeval([root], tmp_path / "out")
    assert sorted((r.arm, r.seed) for r in result.runs) == [("baseline", 0), ("qk_norm", 0)]
    (said,) = [c for c in result.choices if c.startswith("arm:")]
    assert str(root) in said and "2 models" in said and "baseline, qk_norm" in said
    assert set(load_table(tmp_path / "out").arms) == {"baseline", "qk_norm"}
    merged = import_lmeval([root], tmp_path / "dir", arm_from="dir")  # the old default
    assert {r.arm for r in merged.runs} == {"evals"}


def test_two_revisions_of_one_checkpoint_are_told_apart_by_their_args(tmp_path: Path) -> None:
    args = {"a": "pretrained=ckpt/m,revision=step1", "b": "pretrained=ckpt/m,revision=step2"}
    models = {"a": RUNS[0], "b": RUNS[1]}
    root = _one_output_path(tmp_path, models, args, folders={"a": "a", "b": "b"})
    result = import_lmeval([root], tmp_path / "out")
    assert sorted(r.arm for r in result.runs) == ["m,revision=step1", "m,revision=step2"]


def test_one_model_per_folder_keeps_the_folder_names(tmp_path: Path) -> None:
    root = _copy(tmp_path, {"baseline": RUNS[0], "qk_norm": RUNS[3]})
    result = import_lmeval([root], tmp_path / "out")
    assert sorted(r.arm for r in result.runs) == ["baseline", "qk_norm"]
    assert any(c.startswith("arm: the name of each run's output folder") for c in result.choices)


def test_one_models_seeds_stay_one_arm_beside_a_model_with_an_empty_pretrained(tmp_path):
    """Issue 57: a folder per seed, one of them also holding a run whose model_args say
    `pretrained=` (empty): model a was named by model in that folder and by folder in the other,
    so its two seeds became two one-seed arms ("a" and "seed-1")."""
    out = tmp_path / "in" / "evals"
    for seed in (0, 1):
        (source,) = RUNS[seed].iterdir()
        shutil.copytree(source, out / f"seed-{seed}" / "ckpt__a")
        _edit(
            out / f"seed-{seed}" / "ckpt__a",
            lambda d: (
                d["config"].update(model="hf", model_args="pretrained=ckpt/a,dtype=float32"),
                d.update(model_name_sanitized="ckpt__a"),
            ),
        )
    (source,) = RUNS[3].iterdir()
    for file in source.iterdir():
        shutil.copy(file, out / "seed-0" / file.name)
    (empty,) = (out / "seed-0").glob("results_*.json")
    document = json.loads(empty.read_text())
    document["config"].update(model="hf", model_args="pretrained=,dtype=float32")
    empty.write_text(json.dumps(document | {"model_name_sanitized": ""}))
    result = import_lmeval([out], tmp_path / "out")
    assert sorted((r.arm, r.seed) for r in result.runs) == [("a", 0), ("a", 1), ("hf", 0)]
    (said,) = [c for c in result.choices if c.startswith("arm:")]
    assert f"{empty} name no model (an empty pretrained=)" in said, said
