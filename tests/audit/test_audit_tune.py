"""`tune-baseline`: sweep the baseline's LR at the smallest scale and write it into the recipe."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from archaudit.audit.execute.tune import TUNE_FILE, set_recipe_values, tune_baseline
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import DONE
from archaudit.audit.setup.spec import load_audit
from archaudit.errors import ConfigError

COMMENTED = """# my audit
name = "x"  # keep me

[recipe]
steps = 10     # a comment
lr = 0.001     # the old value

[scales.a]
d_model = 32
"""


def test_set_recipe_values_keeps_everything_else(tmp_path: Path):
    path = tmp_path / "a.toml"
    path.write_text(COMMENTED)
    set_recipe_values(path, {"lr": 0.004, "warmup_frac": 0.1}, note="tuned")
    text = path.read_text()
    assert tomllib.loads(text)["recipe"] == {"steps": 10, "lr": 0.004, "warmup_frac": 0.1}
    assert "# my audit" in text and "# keep me" in text and "steps = 10     # a comment" in text
    assert "the old value" not in text
    assert tomllib.loads(text)["scales"] == {"a": {"d_model": 32}}


def test_set_recipe_values_adds_a_recipe_table(tmp_path: Path):
    path = tmp_path / "a.toml"
    path.write_text('name = "x"\n[scales.a]\nd_model = 32\n')
    set_recipe_values(path, {"lr": 0.002}, note="tuned")
    assert tomllib.loads(path.read_text())["recipe"] == {"lr": 0.002}
    path.write_text('name = "x"\nrecipe = { lr = 0.1 }\n')
    with pytest.raises(ConfigError, match=r"\[recipe\] table"):
        set_recipe_values(path, {"lr": 0.002}, note="tuned")


AUDIT = """name = "tiny"
arms = ["qk_norm"]
[eval]
suite = ""
[recipe]  # the shared recipe
steps = 12
batch_tokens = 512
corpus_chars = 100000
lr = 0.001  # before tuning
[scales.big]
d_model = 48
n_heads = 2
context_length = 32
[scales.xs]
d_model = 32
n_heads = 2
context_length = 32
[executor]
threads = 1
"""


def test_tune_baseline_picks_the_best_lr_at_the_smallest_scale(tmp_path: Path):
    path = tmp_path / "audit.toml"
    path.write_text(AUDIT)
    before = {r.path: r.run_id for r in make_plan(load_audit(path)).runs}
    outcome = tune_baseline(path, lrs=[1e-4, 1e-2], live=False)

    record = json.loads(outcome.record.read_text())
    assert outcome.record.name == TUNE_FILE and record["scale"] == outcome.scale == "xs"
    losses = {}
    for point in record["points"]:
        done_file = outcome.record.parent / f"lr-{point['lr']:g}_warmup-0.05" / "xs" / "seed-0"
        losses[point["lr"]] = json.loads((done_file / DONE).read_text())["metrics"]["val_loss"]
    chosen = min(losses, key=losses.get)
    assert record["chosen"] == {"lr": chosen} and outcome.best.lr == chosen

    spec = load_audit(path)
    assert spec.recipe.lr == chosen
    assert (
        "[recipe]  # the shared recipe" in path.read_text()
        and "before tuning" not in path.read_text()
    )
    after = make_plan(spec)
    assert {r.recipe.lr for r in after.runs} == {chosen}, "every arm inherits the tuned recipe"
    assert not set(before.values()) & {r.run_id for r in after.runs}
    assert not any(r.tuned for r in after.runs), "arms are never tuned"
