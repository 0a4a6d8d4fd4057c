"""Must-show 5: generated malformed audit files and overrides each give a named error and
leave no run directory behind."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from audit_helpers import TINY, merged, to_toml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup.spec import SECTIONS, TOP_KEYS, load_audit
from archaudit.errors import ArchauditError
from archaudit.evals import builtin_suites
from archaudit.mods import list_modifications

KNOWN = {*TOP_KEYS, *SECTIONS}
MODS = {mod.name for mod in list_modifications()} | {"baseline"}
identifier = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
unknown_key = identifier.filter(lambda k: k not in KNOWN and k not in TINY["recipe"])

# (section, field) → values that field must refuse
BAD_VALUES: dict[tuple[str, str], list[Any]] = {
    ("recipe", "steps"): [0, -3, "ten", 2.5, True],
    ("recipe", "lr"): [0, -1e-3, "fast", False],
    ("recipe", "warmup_frac"): [1.5, -0.1],
    ("recipe", "batch_tokens"): [0, 16],  # 16 is less than one 32-token sequence per step
    ("seeds", "noise_floor"): [1, 0, -2, 2.5, "three"],
    ("seeds", "arms"): [0, -1],
    ("seeds", "anchors"): ["qk_norm", [1], ["geglu"]],  # geglu is not an arm of the audit
    ("eval", "limit"): [0, -5, "all"],
    ("executor", "workers"): [-1, "many"],
    ("executor", "kind"): ["locall", "k8s", 3],
    ("executor", "heartbeat_s"): [0, 10.0],  # must be > 0 and below stale_after_s (5)
    ("executor", "max_attempts"): [0],
}


@st.composite
def malformed(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    """(audit file text, overrides): a valid tiny audit with exactly one thing broken."""
    kind = draw(st.sampled_from(MUTATIONS))
    return kind(draw)


def _tree(changes: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    return to_toml(merged(TINY, changes)), ()


def unknown_top_key(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    return _tree({draw(unknown_key): draw(st.integers())})


def unknown_field(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    section = draw(st.sampled_from(["recipe", "seeds", "eval", "executor"]))
    return _tree({section: {draw(unknown_key): 1}})


def bad_value(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    section, field = draw(st.sampled_from(sorted(BAD_VALUES)))
    return _tree({section: {field: draw(st.sampled_from(BAD_VALUES[(section, field)]))}})


def unknown_arm(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    name = draw(identifier.filter(lambda n: n not in MODS))
    form = draw(st.sampled_from([name, f"qk_norm+{name}", f"suite:{name}"]))
    return _tree({"arms": [form]})


def bad_arm_entry(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    entry = draw(
        st.sampled_from(
            [
                3,
                {"seeds": 2},
                {"arm": "qk_norm", "scales": [draw(identifier.filter(lambda n: n != "xs"))]},
                {"arm": "qk_norm", "seeds": 0},
                {"arm": "qk_norm", draw(unknown_key): 1},
                {"arm": "qk_norm", "recipe": {"lr": 0.5}},  # R1 without tuned = true
                {"arm": "qk_norm", "recipe": {draw(unknown_key): 1}, "tuned": True},
                "",
            ]
        )
    )
    return _tree({"arms": [entry]})


def unknown_eval_suite(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    return _tree({"eval": {"suite": draw(identifier.filter(lambda n: n not in builtin_suites()))}})


def bad_scale(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    scale = draw(
        st.sampled_from(
            [
                {"d_model": 30, "n_heads": 4},  # not divisible
                {"preset": draw(identifier.filter(lambda n: n not in ("tiny", "small")))},
                {"tokens": 10},  # less than one step
                {"tokens": -5},
                {draw(unknown_key): 1},
                {"context_length": 0},
                {"norm": {"name": "rmsnrom"}},  # an unknown slot component
            ]
        )
    )
    return _tree({"scales": {"xs": {**TINY["scales"]["xs"], **scale}}})


def bad_name(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    return _tree({"name": draw(st.sampled_from(["", "a/b", "../up", " ", 7, "-x"]))})


def broken_toml(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    lines = to_toml(TINY).splitlines()
    garbage = draw(st.sampled_from(["= =", "arms = [", '"name" = "again"', "[[", "x = 'open"]))
    lines.insert(draw(st.integers(0, len(lines))), garbage)
    return "\n".join(lines) + "\n", ()


def bad_override(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    override = draw(
        st.sampled_from(
            [
                "recipe.steps",  # no value
                f"{draw(unknown_key)}.x=1",  # unknown section
                "recipe.steps=0",
                "seeds.noise_floor=1",
                f"recipe.{draw(unknown_key)}=1",
                'arms=["qk_nrom"]',
                "executor.kind=sslurm",
                "=3",
                'name="a/b"',
            ]
        )
    )
    return to_toml(TINY), ("recipe.lr=1e-3", override)


MUTATIONS = [
    unknown_top_key,
    unknown_field,
    bad_value,
    unknown_arm,
    bad_arm_entry,
    unknown_eval_suite,
    bad_scale,
    bad_name,
    broken_toml,
    bad_override,
]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(malformed())
def test_every_malformed_audit_is_a_named_error_and_writes_nothing(case):
    text, overrides = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "audit.toml"
        path.write_text(text)
        try:
            run_audit(make_plan(load_audit(path, overrides)), live=False)
        except ArchauditError as err:
            assert str(err).strip()
        else:
            raise AssertionError(f"no error for:\n{text}\noverrides {overrides}")
        assert sorted(p.name for p in Path(folder).iterdir()) == ["audit.toml"]
