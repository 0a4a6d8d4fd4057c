"""Plan: an `AuditSpec` → the grid of `RunSpec`s (baselines × arms × scales × seeds).

Every run is fully resolved here (model config after the arm, recipe after the scale's token
budget) and gets a content-hash id over what determines its numbers, so an edited arm is a new
run, never a silent reuse of an old directory. All checks happen before anything is written:
names, conflicts, the recipe lock (R1), batch shapes, the model's slot names, the protocol
notes (R5–R7), and that every evaluation task fits every scale's context.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.launcher.executors import EXECUTORS
from archaudit.audit.setup import protocol
from archaudit.audit.setup.protocol import ProtocolNote
from archaudit.audit.setup.spec import ArmEntry, AuditSpec, ScaleSpec
from archaudit.config import (
    ModelConfig,
    Recipe,
    build,
    canonical_json,
    load_toml,
    to_dict,
)
from archaudit.config.recipe import MATCH_PARAMS
from archaudit.data.identity import recipe_hash
from archaudit.data.vocabulary import trained_model
from archaudit.errors import ConfigError, did_you_mean
from archaudit.names import BASELINE

VOCAB_PLACEHOLDER = ModelConfig().vocab_size
"""What run ids hash for the vocabulary (see `RunSpec.run_id`)."""

if TYPE_CHECKING:
    from archaudit.mods import Arm


MAX_RUNS = 10_000
"""Grids past these bounds are refused at plan time, in one line, instead of being listed,
probed or simulated for minutes: no real audit comes near them, a typo's extra zeros do."""
MAX_SHAPE = {"n_layers": 1_024, "d_model": 65_536, "n_heads": 4_096, "context_length": 1 << 20}
MAX_PARAMS = 10**12
MAX_ARM_ENTRIES = 1_000
MAX_NAME_BYTES = 200  # of NAME_MAX = 255: room for "-<run id>" and ".tmp" names made from it
MAX_PATH_BYTES = 3_800  # of PATH_MAX = 4096: room for checkpoint/step-.../model.safetensors


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One training run of an audit: everything `archaudit run-one` needs, stored as run.json."""

    audit: str
    arm: str
    """The name in results: the arm (`qk_norm+geglu`), `@baseline` appended when the audit has
    several baselines."""
    mods: str
    """The resolved arm (`baseline` for a baseline run)."""
    baseline: str
    family: str
    scale: str
    seed: int
    tuned: bool = False
    anchor: bool = False
    duties: tuple[str, ...] = ()
    """The arm's protocol duties as the modification registry decides them (R6, R7)."""
    model: ModelConfig
    recipe: Recipe
    suite: str = ""
    suite_digest: str = ""
    """sha256 of a suite file's parsed contents ("" for a built-in suite or none): the run's
    identity holds the suite by what it asks, not by where the file lies."""
    eval_limit: int | None = None
    path: str
    """The run directory, relative to the audit directory: <arm>/<scale>/seed-<k>."""

    @functools.cached_property
    def run_id(self) -> str:
        """sha256 over what determines the run's numbers (operational recipe fields excluded).
        The vocabulary is the recipe's tokenizer's (`recipe_hash` holds it), so the model enters
        with the field's default there: the ids of runs planned before the model carried its
        vocabulary stay the same, and their directories are not superseded. A suite file enters
        by its digest, so a copied or moved audit (or another checkout's claim files) keeps its
        run ids."""
        model = {**to_dict(self.model), "vocab_size": VOCAB_PLACEHOLDER}
        key = {
            "model": model,
            "recipe_hash": recipe_hash(self.recipe),
            "seed": self.seed,
            "suite": self.suite_digest or self.suite,
            "eval_limit": self.eval_limit,
        }
        return hashlib.sha256(canonical_json(key).encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out |= {"model": to_dict(self.model), "recipe": to_dict(self.recipe)}
        return {"id": self.run_id, "recipe_hash": recipe_hash(self.recipe), **out}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["model"] = _stored(ModelConfig, "model", canonical_json(data["model"]))
        values["recipe"] = _stored(Recipe, "recipe", canonical_json(data["recipe"]))
        duties = data.get("duties", [])
        if not isinstance(duties, list) or not all(isinstance(d, str) for d in duties):
            raise ConfigError(f"duties = {duties!r:.60} is not a list of duty names")
        values["duties"] = tuple(duties)
        return cls(**values)


@functools.lru_cache(maxsize=1024)
def _stored(cls: type, section: str, table: str) -> Any:
    """A stored model or recipe table, built once per distinct table: the runs of an audit
    share a few (one model per arm and scale), and building one checks every key anew."""
    return build(cls, json.loads(table), section=section)


@dataclass(frozen=True)
class Plan:
    spec: AuditSpec
    runs: tuple[RunSpec, ...]
    notes: tuple[ProtocolNote, ...]

    @property
    def audit_dir(self) -> Path:
        return self.spec.audit_dir

    def run_dir(self, run: RunSpec) -> Path:
        return self.audit_dir / run.path


@dataclass(frozen=True)
class PlannedArm:
    """An arm entry after suites are expanded and names resolved."""

    arm: Arm
    entry: ArmEntry
    from_suite: bool = False


def make_plan(spec: AuditSpec, *, strict: bool = False) -> Plan:
    """Resolve and check the whole grid; raises ConfigError (naming the file) on any mistake."""
    try:
        return _make_plan(spec, strict=strict)
    except ConfigError as err:
        raise ConfigError(f"{spec.source}: {err}") from None


def _make_plan(spec: AuditSpec, *, strict: bool) -> Plan:
    from archaudit.mods import load_plugins

    load_plugins(spec.plugins)
    EXECUTORS.get(spec.executor.kind)  # an unknown name fails here, with did-you-mean
    suite = resolve_eval_suite(spec)
    arms = expand_arms(spec)
    scale_names = [s.name for s in spec.scales]
    runs: list[RunSpec] = []
    notes = protocol.noise_floor_note(spec.seeds.noise_floor)
    several = len(spec.baselines) > 1
    for planned in arms:
        arm, entry = planned.arm, planned.entry
        for wanted in entry.scales or ():
            if wanted not in scale_names:
                raise ConfigError(
                    f"arm {arm.name!r}: unknown scale {wanted!r}{did_you_mean(wanted, scale_names)}"
                )
        scales = [s for s in spec.scales if entry.scales is None or s.name in entry.scales]
        notes += protocol.downstream_note(arm.name, arm.requires_downstream, suite)
        notes += protocol.cross_scale_note(
            arm.name, arm.requires_cross_scale, [s.name for s in scales]
        )
        for baseline in spec.baselines:
            name = f"{arm.name}@{baseline}" if several else arm.name
            for scale in scales:
                base = spec.models[(baseline, scale.name)]
                grid = _runs_of(spec, planned, name, baseline, base, scale, suite)
                runs += grid
                check_grid_size(len(runs))
                notes += _identity_note(spec, grid[0], base, scale)
    notes += params_match_notes(runs)
    protocol.enforce(notes, strict=strict)
    check_suite_fits(runs)
    check_launchable(spec, suite)
    check_path_lengths(spec, runs)
    return Plan(spec, tuple(runs), tuple(notes))


def check_path_lengths(spec: AuditSpec, runs: list[RunSpec]) -> None:
    """Every run directory is a path the file system takes (a name of at most 255 bytes, minus
    room for the temporary and `_superseded` names made from it), so that a long audit, arm or
    scale name fails here and not as ENAMETOOLONG once `run` has started."""
    for run in runs:
        for part in (spec.name, *Path(run.path).parts):
            if len(part.encode()) > MAX_NAME_BYTES:
                raise ConfigError(
                    f"the name {part[:40]!r}... is {len(part.encode())} bytes; names that become "
                    f"folders (audit, arm, scale) may have at most {MAX_NAME_BYTES}"
                )
        full = len(str((spec.audit_dir / run.path).absolute()).encode())
        if full > MAX_PATH_BYTES:
            raise ConfigError(
                f"the run folder {run.path!r} makes a path of {full} bytes under "
                f"{spec.runs_dir}; at most {MAX_PATH_BYTES} (shorten a name or the runs_dir)"
            )


def check_launchable(spec: AuditSpec, suite: str) -> None:
    """What `run` would otherwise find only after the first run trained: the device (the
    local executor trains on this machine) and the suite's held-out text. With the tracker,
    which `plan_summary` checks, a clean plan means the run will start."""
    from archaudit.evals import load_suite
    from archaudit.evals.suites import resolve_data_root

    if spec.executor.kind == "local":
        from archaudit.train.loop.trainer import resolve_device

        resolve_device(spec.recipe.device)
    heldout = load_suite(suite).heldout if suite else None
    if heldout is not None and not (resolve_data_root() / heldout.path).is_file():
        raise ConfigError(
            f"eval suite {suite!r}: [heldout] path {heldout.path!r} is not a file under the data "
            f"root {resolve_data_root()}; set ARCHAUDIT_DATA or fix the path"
        )


def _runs_of(
    spec: AuditSpec,
    planned: PlannedArm,
    name: str,
    baseline: str,
    base: ModelConfig,
    scale: ScaleSpec,
    suite: str,
) -> list[RunSpec]:
    arm, entry = planned.arm, planned.entry
    where = f"arm {name!r} at scale {scale.name!r}"
    try:
        shared = scale_recipe(spec.recipe, scale)
        recipe = arm.apply_recipe(shared)
        if entry.recipe:
            recipe = build(Recipe, {**to_dict(recipe), **entry.recipe}, section=f"{name}.recipe")
        # final here: the arm's change, and the vocabulary of its recipe's tokenizer (the
        # base's already, unless a tuned arm trains another tokenizer)
        model = trained_model(arm.apply(base), recipe)
        # a catalogue recipe arm (long_warmup, ...) declares itself tuned; anything else must say so
        declared = entry.tuned or arm.changes_recipe
        differs = protocol.recipe_lock(name, recipe, shared, tuned=declared)
        recipe.sequences_per_step(model.context_length)
        check_model(model)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    # the flag follows a real recipe difference; a single arm marked tuned keeps it regardless
    tuned = differs or (entry.tuned and not planned.from_suite)
    anchor = arm.name == BASELINE or entry.anchor or arm.name in spec.seeds.anchors
    seeds = spec.seeds.noise_floor if anchor else entry.seeds or spec.seeds.arms
    check_grid_size(seeds)
    return [
        RunSpec(
            audit=spec.name,
            arm=name,
            mods=arm.name,
            baseline=baseline,
            family=arm.family,
            scale=scale.name,
            seed=seed,
            tuned=tuned,
            anchor=anchor and arm.name != BASELINE,
            duties=arm.duties,
            model=model,
            recipe=recipe,
            suite=suite,
            suite_digest=suite_file_digest(suite),
            eval_limit=spec.eval.limit,
            path=f"{name}/{scale.name}/seed-{seed}",
        )
        for seed in spec.seeds.numbers(seeds)
    ]


def expand_arms(spec: AuditSpec) -> list[PlannedArm]:
    """The baseline first, then every entry with suites expanded; the first mention of an arm
    wins. Anchors must name arms of the audit."""
    from archaudit.mods import get_suite, resolve_arm

    baseline = PlannedArm(resolve_arm(BASELINE), ArmEntry(arm=BASELINE))
    planned: dict[str, PlannedArm] = {BASELINE: baseline}
    if len(spec.arms) > MAX_ARM_ENTRIES:
        raise ConfigError(f"arms has {len(spec.arms):,} entries; at most {MAX_ARM_ENTRIES:,}")
    seen: set[str] = set()
    for i, entry in enumerate(spec.arms):
        if entry.arm in seen:  # a repeated spelling: the first mention won already
            continue
        seen.add(entry.arm)
        try:
            names = get_suite(entry.suite) if entry.suite is not None else [entry.arm]
            for name in names:
                arm = resolve_arm(name)
                planned.setdefault(arm.name, PlannedArm(arm, entry, entry.suite is not None))
        except ConfigError as err:
            raise ConfigError(f"arms[{i}] ({entry.arm!r}): {err}") from None
    for anchor in spec.seeds.anchors:
        canonical = resolve_arm(anchor).name
        if canonical not in planned:
            raise ConfigError(
                f"seeds.anchors: {anchor!r} is not an arm of this audit"
                f"{did_you_mean(anchor, planned)}"
            )
    return list(planned.values())


def scale_recipe(recipe: Recipe, scale: ScaleSpec) -> Recipe:
    """The shared recipe at one scale: its token budget sets the steps."""
    if scale.tokens is None:
        return recipe
    steps = scale.tokens // recipe.batch_tokens
    if steps < 1:
        raise ConfigError(
            f"scales.{scale.name}.tokens = {scale.tokens} is less than one step of "
            f"recipe.batch_tokens = {recipe.batch_tokens}"
        )
    return dataclasses.replace(recipe, steps=steps)


def _identity_note(
    spec: AuditSpec, run: RunSpec, base: ModelConfig, scale: ScaleSpec
) -> list[ProtocolNote]:
    """An arm that trains exactly its baseline (the change is already part of it) is noted."""
    same_recipe = recipe_hash(run.recipe) == recipe_hash(scale_recipe(spec.recipe, scale))
    if run.mods == BASELINE or not same_recipe or run.model != base:
        return []
    message = f"{run.arm} at scale {scale.name} is the baseline {run.baseline!r} itself"
    return [ProtocolNote("identity", run.arm, message + " (its change is already part of it)")]


def resolve_eval_suite(spec: AuditSpec) -> str:
    """The suite as stored in every run: a built-in name, an absolute path to a suite file
    (relative paths are taken from the audit file's folder), or "" for loss only."""
    from archaudit.evals import builtin_suites, load_suite

    name = spec.eval.suite
    if not name or name in builtin_suites():
        return name
    beside = Path(spec.source).parent / name
    path = beside if beside.is_file() else Path(name)
    load_suite(path)  # unknown names fail here with did-you-mean
    return str(path.resolve())


def suite_file_digest(suite: str) -> str:
    """sha256 of a suite file's parsed tree in canonical JSON (comments and layout do not
    count); "" for a built-in name or no suite, which enter a run's identity by name."""
    from archaudit.evals import builtin_suites

    if not suite or suite in builtin_suites():
        return ""
    return hashlib.sha256(canonical_json(load_toml(Path(suite))).encode()).hexdigest()


def check_suite_fits(runs: list[RunSpec]) -> None:
    """Every task of the evaluation suite can be scored at every scale: its longest continuation
    fits the model's context (a long context is cut from the left, a continuation cannot be).
    Evaluation comes after training, so without this check every run would train first and
    then fail. Runs with the same context and tokenizer are checked once."""
    from archaudit.data.corpus import recipe_tokenizer
    from archaudit.errors import DataError
    from archaudit.evals import load_suite
    from archaudit.evals.suites import TokenizerOnly, longest_continuations

    checked = set()
    for run in runs:
        r = run.recipe
        key = (run.model.context_length, r.tokenizer, r.corpus, r.data_seed, r.corpus_chars)
        if not run.suite or key in checked:
            continue
        checked.add(key)
        length = run.model.context_length
        model = TokenizerOnly(recipe_tokenizer(run.recipe), length)
        try:
            longest = longest_continuations(load_suite(run.suite), model, limit=run.eval_limit)
        except DataError as err:
            raise ConfigError(f"eval suite {run.suite!r} at scale {run.scale!r}: {err}") from None
        for task, tokens in longest.items():
            if tokens > length:
                raise ConfigError(
                    f"eval suite {run.suite!r}: task {task!r} cannot be scored at scale "
                    f"{run.scale!r}: its longest continuation is {tokens} tokens, longer than the "
                    f"context length {length}; set scales.{run.scale}.context_length >= {tokens} "
                    "or use another suite"
                )


_SIZES: dict[str, tuple[int, int]] = {}
"""(total, active) parameters by model (its canonical JSON: a config holds dicts, so it is not
hashable): the arms of a plan share a few shapes, and building one takes a while."""


BUILD_ON_CPU_BELOW = 20_000_000
"""A model of fewer parameters (roughly: attention, MLPs or all experts, embeddings and head)
is built on the CPU to be counted, a larger one on the meta device (shapes only). On the meta
device every tensor operation passes through a Python dispatch, and the first one without a C++
meta kernel (the differential attention's `randn(...) * 0.1`) imports torch._dynamo and sympy:
0.8 of the 3.5 CPU-seconds of `make_plan` for the README's 20-arm starter, 42 models of under a
million parameters, which a CPU build allocates and initialises in 0.3 (issue 57)."""


def model_sizes(cfg: ModelConfig) -> tuple[int, int]:
    """(total, active) parameters of the model built (every slot checked; on the meta device
    from `BUILD_ON_CPU_BELOW` parameters up). A model past the size bounds is refused first:
    building it would take minutes."""
    check_size(cfg)
    key = canonical_json(to_dict(cfg))
    if key not in _SIZES:
        import torch

        from archaudit.model import build_model, count_parameters

        experts = cfg.moe.experts + cfg.moe.shared_experts if cfg.mlp.name == "moe" else 1
        rough = cfg.n_layers * cfg.d_model**2 * (4 + 8 * experts) + 2 * cfg.vocab_size * cfg.d_model
        small = rough < BUILD_ON_CPU_BELOW
        with torch.device("cpu" if small else "meta"), torch.random.fork_rng(devices=[]):
            model = build_model(cfg)  # the caller's random state untouched
            _SIZES[key] = (count_parameters(model), model.active_parameters())
    return _SIZES[key]


def run_flops(run: RunSpec) -> float:
    """The run's training FLOPs: its tokens times `training_flops_per_token`."""
    from archaudit.model import training_flops_per_token

    tokens = run.recipe.steps * run.recipe.batch_tokens
    return tokens * training_flops_per_token(run.model, model_sizes(run.model)[1])


def check_model(cfg: ModelConfig) -> int:
    """Build the model on the meta device (every slot name checked); its parameter count."""
    return model_sizes(cfg)[0]


def params_match_notes(runs: Sequence[RunSpec]) -> list[ProtocolNote]:
    """`recipe.match_params`: an arm whose total or active parameters differ from its
    baseline's at the same scale by more than `recipe.match_tolerance`, once per arm."""
    sizes = {(r.baseline, r.scale): model_sizes(r.model) for r in runs if r.mods == BASELINE}
    notes: dict[str, ProtocolNote] = {}
    for run in runs:
        match, reference = run.recipe.match_params, sizes.get((run.baseline, run.scale))
        if match is None or reference is None or run.arm in notes:
            continue
        which = MATCH_PARAMS.index(match)
        ours, theirs = model_sizes(run.model)[which], reference[which]
        if abs(ours / theirs - 1.0) > run.recipe.match_tolerance:
            notes[run.arm] = ProtocolNote(
                "params",
                run.arm,
                f"{run.arm} has {ours / theirs:.2f}× the baseline's {match} parameters at scale "
                f"{run.scale!r} ({ours:,} vs {theirs:,}); recipe.match_params = {match!r} "
                f"allows ±{run.recipe.match_tolerance:.0%}",
            )
    return list(notes.values())


def check_size(cfg: ModelConfig) -> None:
    """Refuse absurd shapes (a typo's extra zeros) before anything is built or probed."""
    for name, bound in MAX_SHAPE.items():
        if getattr(cfg, name) > bound:
            raise ConfigError(
                f"model.{name} = {getattr(cfg, name):,} is past archaudit's bound of {bound:,}"
            )
    rough = 12 * cfg.n_layers * cfg.d_model**2  # the blocks' weights, to the first digit
    if rough > MAX_PARAMS:
        raise ConfigError(
            f"model.n_layers = {cfg.n_layers} × model.d_model = {cfg.d_model} makes about "
            f"{rough:.1e} parameters, past archaudit's bound of {MAX_PARAMS:.0e}"
        )


def check_grid_size(count: int) -> None:
    if count > MAX_RUNS:
        raise ConfigError(
            f"the grid has more than {MAX_RUNS:,} runs (arms × baselines × scales × seeds); "
            "lower seeds.arms / seeds.noise_floor or split the audit"
        )
