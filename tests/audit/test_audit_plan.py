"""Planning: the grid, seeds, content-hash ids, the recipe lock (R1) and protocol notes (R5–R7)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import TINY
from typer.testing import CliRunner

from archaudit.audit.grid import plan as plan_module
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup import spec as spec_module
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app
from archaudit.config import ModelConfig, build
from archaudit.errors import ConfigError
from archaudit.mods import get_suite


def plan_of(path: Path, *overrides: str, strict: bool = False):
    return make_plan(load_audit(path, overrides), strict=strict)


def test_grid_is_baselines_arms_scales_seeds(write_audit):
    scales = {"xs": {"d_model": 32, "n_heads": 2}, "s": {"d_model": 48, "n_heads": 2}}
    arms = ["qk_norm", {"arm": "geglu", "seeds": 2}, {"arm": "softpick", "anchor": True}]
    plan = plan_of(write_audit(arms=arms, scales=scales, seeds={"noise_floor": 3}))
    seeds = {(r.arm, r.scale): 0 for r in plan.runs}
    for run in plan.runs:
        seeds[(run.arm, run.scale)] += 1
    for scale in scales:
        assert seeds[("baseline", scale)] == 3
        assert seeds[("softpick", scale)] == 3  # an anchor gets the noise-floor seeds
        assert seeds[("geglu", scale)] == 2
        assert seeds[("qk_norm", scale)] == 1
    assert len(plan.runs) == 2 * (3 + 3 + 2 + 1)
    assert len({r.path for r in plan.runs}) == len(plan.runs)
    assert {r.path for r in plan.runs if r.arm == "baseline"} >= {"baseline/xs/seed-2"}


def test_a_suite_expands_to_its_arms_once(write_audit):
    plan = plan_of(write_audit(arms=["suite:audit2026", "qk_norm"]))
    assert {r.mods for r in plan.runs} == set(get_suite("audit2026"))


def test_run_ids_follow_content_not_names(write_audit):
    base = plan_of(write_audit())
    ids = {r.path: r.run_id for r in base.runs}
    assert len(set(ids.values())) == len(ids), "seeds and arms give distinct ids"
    operational = plan_of(write_audit(), "recipe.checkpoint_every=1", "recipe.threads=3")
    assert {r.path: r.run_id for r in operational.runs} == ids
    trained = plan_of(write_audit(), "recipe.lr=1e-3")
    assert not set(ids.values()) & {r.run_id for r in trained.runs}
    edited = plan_of(write_audit(), "scales.xs.d_model=64")
    assert not set(ids.values()) & {r.run_id for r in edited.runs}


def test_r1_a_tuned_arm_is_allowed_and_flagged(write_audit):
    arms = [{"arm": "qk_norm", "recipe": {"lr": 0.01}, "tuned": True}, "geglu"]
    plan = plan_of(write_audit(arms=arms))
    tuned = {r.arm for r in plan.runs if r.tuned}
    assert tuned == {"qk_norm"}
    assert {r.recipe.lr for r in plan.runs if r.arm == "qk_norm"} == {0.01}


def test_r1_refuses_an_untuned_recipe_change(write_audit):
    path = write_audit(arms=[{"arm": "qk_norm", "recipe": {"warmup_frac": 0.5}}])
    with pytest.raises(ConfigError, match=r"recipe.warmup_frac 0.05 → 0.5"):
        plan_of(path)


def test_r6_and_r7_warn_and_strict_refuses(write_audit, probe_suite: Path):
    path = write_audit(arms=["softpick", "post_ln", "qk_norm"], seeds={"noise_floor": 3})
    notes = {(n.rule, n.arm) for n in plan_of(path).notes}
    # qk_norm's family has no duty, but the entry declares R7 (it is claimed as a stability fix).
    assert notes == {("R6", "softpick"), ("R7", "post_ln"), ("R7", "qk_norm")}
    with pytest.raises(ConfigError, match=r"--strict.*R6.*softpick.*R7.*post_ln"):
        plan_of(path, strict=True)
    two_scales = {"xs": {"d_model": 32}, "s": {"d_model": 48}}
    fixed = plan_of(path, f'eval.suite="{probe_suite}"')
    assert {n.rule for n in fixed.notes} == {"R7"}
    assert not make_plan(
        load_audit(write_audit(arms=["post_ln"], scales=two_scales, seeds={"noise_floor": 3}))
    ).notes


def test_r5_warns_below_three_noise_floor_seeds(write_audit):
    notes = plan_of(write_audit(arms=[], seeds={"noise_floor": 2})).notes
    assert [(n.rule, n.arm) for n in notes] == [("R5", "baseline")]


def test_several_baselines_apply_every_arm_to_each(write_audit):
    baselines = {
        "llama": {},
        "olmo": {"attention": {"qk_norm": True}, "residual": {"name": "post"}},
    }
    plan = plan_of(write_audit(arms=["geglu", "qk_norm"], baselines=baselines))
    arms = {r.arm for r in plan.runs}
    assert arms == {f"{a}@{b}" for a in ("baseline", "geglu", "qk_norm") for b in baselines}
    olmo = {r.arm: r.model for r in plan.runs if r.baseline == "olmo"}
    geglu = olmo["geglu@olmo"]
    assert geglu.residual.name == "post" and geglu.mlp.name == "geglu" and geglu.attention.qk_norm
    # qk_norm is already part of the OLMo-style baseline: the plan says so
    assert [(n.rule, n.arm) for n in plan.notes if n.rule == "identity"] == [
        ("identity", "qk_norm@olmo")
    ]


def test_each_baseline_model_is_built_once_at_load(write_audit, monkeypatch):
    """The spec builds every (baseline, scale) model once; the plan applies the arms to those
    and never rebuilds them from the file's tables."""
    built: Counter[str] = Counter()

    def counting(cls: type, values: Any, *, section: str) -> Any:
        built[section] += cls is ModelConfig
        return build(cls, values, section=section)

    for module in (spec_module, plan_module):
        monkeypatch.setattr(module, "build", counting)
    scales = {"xs": {"d_model": 32, "n_heads": 2}, "s": {"d_model": 48, "n_heads": 2}}
    baselines = {"llama": {}, "olmo": {"attention": {"qk_norm": True}}}
    spec = load_audit(write_audit(arms=["geglu"], scales=scales, baselines=baselines))
    at_load = +built
    assert at_load == {"scales.xs": 1, "scales.s": 1, "baselines.olmo": 2}
    plan = make_plan(spec)
    assert +built - Counter(model=built["model"]) == at_load  # "model": meta-device sizes
    baseline_runs = [r for r in plan.runs if r.mods == "baseline"]
    assert all(r.model == spec.models[(r.baseline, r.scale)] for r in baseline_runs)


def test_scale_token_budget_sets_steps(write_audit):
    plan = plan_of(write_audit(scales={"xs": {"d_model": 32, "n_heads": 2, "tokens": 5120}}))
    assert {r.recipe.steps for r in plan.runs} == {5120 // 512}


def test_plan_json_lists_runs_and_writes_nothing(
    write_audit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from archaudit.audit.planning import estimate
    from archaudit.audit.planning.probe import LoopCost, Timed

    loop = LoopCost(Timed(0.5, 0.25), Timed(2.0, 1.0), Timed(6.0, 3.0))  # its probe runs an audit
    monkeypatch.setattr(estimate, "loop_cost", lambda *args, **kwargs: loop)
    path = write_audit(arms=["qk_norm", "geglu"], executor={"workers": 1})  # no neighbour
    result = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["total_runs"] == len(summary["runs"]) == 2 + 1 + 1
    assert all(r["train_seconds"] > 0 and r["params"] > 0 for r in summary["runs"])
    assert summary["estimated_wall_s"] > 0
    assert (summary["run_overhead_s"], summary["round_overhead_s"]) == (0.5, 2.0)
    assert summary["finish_s"] == 6.0
    assert not (tmp_path / "runs").exists()


def test_plan_table_shows_the_grid(write_audit):
    result = CliRunner().invoke(app, ["plan", str(write_audit()), "--no-probe"])
    assert result.exit_code == 0, result.output
    # the baseline is not counted as an arm (it was: "2 arms × 1 scales")
    assert "baseline + 1 arm × 1 scale × seeds (2 for baseline; 1 for qk_norm) = 3 runs" in (
        result.output
    )


def test_catalogue_recipe_arms_declare_themselves_tuned(write_audit):
    wide = {"xs": {"d_model": 128, "n_heads": 2}}  # head_width_64 needs d_model % 64 == 0
    plan = plan_of(write_audit(arms=["suite:foundations"], scales=wide))
    tuned = {r.arm for r in plan.runs if r.tuned}
    assert tuned == {"long_warmup", "no_warmup"}
    marked = plan_of(write_audit(arms=[{"arm": "suite:foundations", "tuned": True}], scales=wide))
    assert {r.arm for r in marked.runs if r.tuned} == tuned, (
        "a suite entry flags only its recipe arms"
    )


def test_match_params_notes_arms_off_the_matched_count(write_audit):
    """MoE entries keep active parameters (each expert H/k wide) and grow the total; depth
    recurrence keeps the total and doubles the active. recipe.match_params says which count the
    audit holds fixed; --strict refuses an arm off it."""
    arms = ["mixtral_moe", "depth_recurrence"]
    path = write_audit(arms=arms, seeds={"noise_floor": 3}, scales={"xs": {"n_layers": 2}})
    assert not {n.rule for n in plan_of(path).notes} & {"params"}  # unset: not matched
    active = {
        n.arm for n in plan_of(path, 'recipe.match_params="active"').notes if n.rule == "params"
    }
    total = {
        n.arm for n in plan_of(path, 'recipe.match_params="total"').notes if n.rule == "params"
    }
    assert (active, total) == ({"depth_recurrence"}, {"mixtral_moe"})
    with pytest.raises(ConfigError, match=r"params: mixtral_moe has .*× the baseline's total"):
        plan_of(path, 'recipe.match_params="total"', strict=True)
    with pytest.raises(ConfigError, match=r"recipe.match_params = 'activ'.*did you mean 'active'"):
        plan_of(path, 'recipe.match_params="activ"')


def test_a_relative_corpus_is_read_from_the_audit_files_folder(write_audit, tmp_path, monkeypatch):
    """Issue 22: a relative recipe.corpus resolved against the current directory, unlike
    runs_dir and suites. It is read from the audit file's folder, and the recipe hash keeps the
    name as written, so planning from two working directories gives the same runs."""
    from archaudit.data.corpus import corpus_text
    from archaudit.data.identity import recipe_hash
    from archaudit.errors import DataError

    corpus = tmp_path / "data" / "c.txt"
    corpus.parent.mkdir()
    corpus.write_text("the audit's own corpus\n" * 20)
    path = write_audit(recipe={"corpus": "data/c.txt"})
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    planned = []
    for cwd, name in ((tmp_path, "audit.toml"), (elsewhere, str(path))):
        monkeypatch.chdir(cwd)
        plan = make_plan(load_audit(name))
        planned.append(plan)
        assert corpus_text(plan.runs[0].recipe)[0]() == corpus.read_text()
    hashes = [{recipe_hash(run.recipe) for run in plan.runs} for plan in planned]
    assert hashes[0] == hashes[1] and len(hashes[0]) == 1
    assert [r.run_id for r in planned[0].runs] == [r.run_id for r in planned[1].runs]
    assert planned[1].runs[0].recipe.corpus == "data/c.txt"  # the name as written is hashed
    corpus.unlink()
    with pytest.raises(DataError, match=f"'{corpus}' does not exist"):
        corpus_text(planned[1].runs[0].recipe)


def test_a_suite_file_enters_the_run_id_by_its_contents_not_its_path(write_audit, tmp_path):
    """An audit copied elsewhere with its suite file (or a claim file in another checkout)
    plans the same run ids, so its finished runs are found; a suite that asks something else
    is another run. Before, the id hashed the suite's absolute path."""
    text = (
        'name = "recall"\n[[tasks]]\nname = "recall"\nformat = "probe"\nlimit = 10\n'
        'params = { generator = "associative_recall", seed = 0, n_pairs = 20 }\n'
    )
    other = text.replace("seed = 0", "seed = 1")
    ids = []
    for folder, body in (("one", text), ("two", "# a comment\n" + text), ("three", other)):
        where = tmp_path / folder
        where.mkdir()
        (where / "recall.toml").write_text(body)
        (where / "audit.toml").write_text(write_audit(eval={"suite": "recall.toml"}).read_text())
        plan = make_plan(load_audit(where / "audit.toml"))
        assert plan.runs[0].suite == str(where / "recall.toml")
        ids.append([run.run_id for run in plan.runs])
    assert ids[0] == ids[1]  # moved, and only a comment added
    assert set(ids[0]).isdisjoint(ids[2])  # another generator seed: other runs


def test_the_planned_model_carries_its_tokenizers_vocabulary(write_audit):
    """Issue 40 item 6: the model is final where the plan builds it, so the parameter counts (and
    the parameter match) measure the shape that trains, not the default vocabulary of 256; run
    ids do not depend on it (the recipe's hash holds the tokenizer), so older audits keep theirs."""
    import dataclasses

    from archaudit.audit.grid.plan import model_sizes
    from archaudit.data.corpus import recipe_tokenizer

    path = write_audit(recipe={**TINY["recipe"], "tokenizer": "bpe:300"})
    plan = make_plan(load_audit(path))
    vocab = recipe_tokenizer(plan.spec.recipe).vocab_size
    assert vocab != ModelConfig().vocab_size
    assert {run.model.vocab_size for run in plan.runs} == {vocab}
    run = plan.runs[0]
    placeholder = dataclasses.replace(run.model, vocab_size=ModelConfig().vocab_size)
    assert model_sizes(run.model) != model_sizes(placeholder)
    assert dataclasses.replace(run, model=placeholder).run_id == run.run_id


def test_a_vocabulary_written_by_hand_must_be_the_tokenizers(write_audit):
    scales = {"xs": {**TINY["scales"]["xs"], "vocab_size": 1000}}
    with pytest.raises(ConfigError, match=r"scales\.xs\.vocab_size = 1000, but recipe\.tokenizer"):
        load_audit(write_audit(scales=scales))


def test_every_modification_counts_the_parameters_of_its_meta_device_build() -> None:
    """Issue 57: `plan` counts a small model on the CPU (a meta-device build imports
    torch._dynamo and sympy at the differential attention's first op: 0.8 CPU-seconds of a
    first plan); the count is the meta-device build's, for every registered modification."""
    import torch

    from archaudit.audit.grid.plan import _SIZES, model_sizes
    from archaudit.config import ModelConfig, build
    from archaudit.model import build_model, count_parameters
    from archaudit.mods import list_modifications, resolve_arm
    from archaudit.presets import preset

    base = build(ModelConfig, preset("tiny")["model"], section="model")
    mods, checked = list_modifications(), 0
    for mod in mods:
        try:
            cfg = resolve_arm(mod.name).apply(base)
        except ConfigError:
            continue  # needs another base (e.g. an MoE option on a dense preset)
        checked += 1
        _SIZES.clear()
        with torch.device("meta"):
            model = build_model(cfg)
        assert model_sizes(cfg) == (count_parameters(model), model.active_parameters()), mod.name
    assert checked > len(mods) // 2
