"""An audit whose evaluation cannot run is refused at plan time, before anything trains: every
task's longest continuation must fit every scale's context (a long context is only cut)."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import archaudit

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup.spec import load_audit
from archaudit.errors import ConfigError

SCALES = {
    "xs": {"d_model": 32, "n_layers": 1, "n_heads": 2, "context_length": 64},
    "short": {"d_model": 32, "n_layers": 1, "n_heads": 2, "context_length": 32},
}


def test_a_suite_too_long_for_a_scale_is_refused_naming_task_scale_and_lengths(write_audit):
    path = write_audit(eval={"suite": "demo", "limit": 20}, scales=SCALES)
    with pytest.raises(ConfigError) as err:
        make_plan(load_audit(path))
    message = str(err.value)
    assert "\n" not in message
    assert "task 'agreement'" in message and "scale 'short'" in message
    continuation = int(message.split("longest continuation is ")[1].split()[0])
    assert continuation > 32 and "context length 32" in message
    # the context the message asks for is enough
    fixed = {**SCALES, "short": {**SCALES["short"], "context_length": continuation}}
    assert make_plan(load_audit(write_audit(eval={"suite": "demo", "limit": 20}, scales=fixed)))


def test_a_long_context_with_a_short_answer_plans(write_audit, tmp_path: Path):
    """Prompts longer than the context are cut from the left at scoring time, as lm-eval does."""
    suite = tmp_path / "recall.toml"
    suite.write_text(
        'name = "recall"\n[[tasks]]\nname = "recall"\nformat = "probe"\nlimit = 10\n'
        'params = { generator = "associative_recall", seed = 0, n_pairs = 20 }\n'
    )
    plan = make_plan(load_audit(write_audit(eval={"suite": str(suite)}, scales=SCALES)))
    assert {r.scale for r in plan.runs} == {"xs", "short"}


def test_the_check_uses_the_runs_own_tokenizer(write_audit):
    """With a BPE trained on the corpus the agreement sentences are short enough at 32 tokens,
    though not in bytes."""
    path = write_audit(
        eval={"suite": "demo", "limit": 20}, scales=SCALES, recipe={"tokenizer": "bpe:512"}
    )
    assert make_plan(load_audit(path)).runs


def test_run_refuses_before_training(write_audit, tmp_path: Path):
    path = write_audit(eval={"suite": "demo", "limit": 20}, scales=SCALES)
    runs = tmp_path / "runs"
    done = archaudit("run", str(path), "--runs-dir", str(runs), "--quiet")
    assert done.returncode == 2, done.stderr
    assert "task 'agreement' cannot be scored at scale 'short'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not list(runs.glob("**/run.json")), "nothing was planned onto disk, nothing trained"
