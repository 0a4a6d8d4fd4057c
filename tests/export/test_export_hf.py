"""`archaudit export hf`: stock transformers classes load the export with no custom code and
compute the run's logits; what no stock class computes is refused by its slot."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.data.vocabulary import trained_model
from archaudit.files import FILE_MODE
from archaudit.mods import resolve_arm

transformers = pytest.importorskip("transformers")

TINY = ModelConfig(d_model=32, n_layers=4, n_heads=4, context_length=32)
STEPS = Recipe(
    steps=3,
    batch_tokens=256,
    lr=3e-2,
    corpus_chars=20_000,
    device="cpu",
    eval_every=3,
    checkpoint_every=3,
)
SLOW = pytest.mark.slow
EXPORTED = {
    "baseline": "LlamaForCausalLM",
    "gqa": "LlamaForCausalLM",
    "tied_embeddings": "LlamaForCausalLM",
    "geglu": "LlamaForCausalLM",
    "qk_norm": "Qwen3ForCausalLM",
    "nope": "SmolLM3ForCausalLM",
    "swa": "SmolLM3ForCausalLM",
    "irope": "SmolLM3ForCausalLM",
    "gelu_mlp": "ArceeForCausalLM",
    "relu2": "ArceeForCausalLM",
    "layernorm": "StableLmForCausalLM",
    "partial_rope": "Phi3ForCausalLM",
    "mixtral_moe": "MixtralForCausalLM",
    "albert_sharing": "LlamaForCausalLM",  # shared blocks copied to every layer (issue 44)
    "repeat_block": "LlamaForCausalLM",
    "depth_recurrence": "LlamaForCausalLM",
    "qwen_moe": "Qwen2MoeForCausalLM",  # a shared expert behind its gate (issue 44)
    "deepseek_moe": "Qwen2MoeForCausalLM",  # the gate at σ(0), the expert doubled
}


def _run(root: Path, arm: str, tokenizer: str = "byte", context: int = 32) -> Path:
    from archaudit.train import train

    run = root / arm
    recipe = Recipe(**{**STEPS.__dict__, "tokenizer": tokenizer})
    cfg = ModelConfig(**{**TINY.__dict__, "context_length": context})
    model = trained_model(resolve_arm(arm).apply(cfg), recipe)  # the tokenizer's vocabulary
    assert train(model, recipe, run, seed=0).status == "ok"
    return run


FAST = ("baseline", "qk_norm", "gelu_mlp", "layernorm", "albert_sharing")


@pytest.mark.parametrize(
    "arm", [a if a in FAST else pytest.param(a, marks=SLOW) for a in sorted(EXPORTED)]
)
def test_stock_class_computes_the_runs_logits(arm: str, tmp_path: Path) -> None:
    from archaudit.export import export_hf
    from archaudit.model.load import load_model

    run = _run(tmp_path, arm)
    result = export_hf(run, tmp_path / "hf")
    assert result.architecture == EXPORTED[arm]
    files = {p.name for p in (tmp_path / "hf").iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"} <= files
    # issue 46: model.safetensors was 0600 and export.json held the run's absolute path
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "hf").iterdir()}
    assert set(modes.values()) == {FILE_MODE}, modes
    record = json.loads((tmp_path / "hf" / "export.json").read_text())
    assert record["run"] == os.path.join("..", arm) and "out" not in record
    # Read back independently of the exporter's own check, on other tokens.
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "hf", dtype=torch.float32, local_files_only=True
    )
    assert type(loaded).__name__ == EXPORTED[arm]
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == [
        EXPORTED[arm]
    ]
    ours, _ = load_model(run)
    ids = torch.randint(0, 256, (3, 32), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        diff = (ours(ids) - loaded(input_ids=ids).logits).abs().max().item()
    assert diff <= 1e-4
    assert ours(ids).abs().max().item() > 1e-2  # logits that a wrong mapping would change


@pytest.mark.parametrize(
    ("arm", "slot"),
    [
        ("softpick", "model.attention.score = 'softpick'"),
        ("parallel_block", "model.block.name = 'parallel'"),
        ("mos", "model.head.name = 'mos'"),
        ("mla", "model.attention.name = 'latent'"),
        ("switch_moe", "model.moe.capacity_factor = 1.25"),  # unnormalised gates: Qwen2-MoE
        ("attn_res", "model.stream.name = 'attn_res'"),
    ],
)
def test_refusal_names_the_slot(arm: str, slot: str) -> None:
    from archaudit.errors import ConfigError
    from archaudit.export import pick

    with pytest.raises(ConfigError, match="no stock transformers class") as err:
        pick(resolve_arm(arm).apply(TINY))
    assert str(err.value).startswith(slot) and "\n" not in str(err.value)


def test_a_combination_no_single_class_holds_names_a_slot() -> None:
    from archaudit.errors import ConfigError
    from archaudit.export import pick

    both = resolve_arm("qk_norm").apply(resolve_arm("layernorm").apply(TINY))
    with pytest.raises(ConfigError, match="no single stock transformers class") as err:
        pick(both)
    assert str(err.value).startswith("model.")


@pytest.mark.parametrize("tokenizer", ["byte", "bpe:300"])
def test_exported_tokenizer_tokenizes_as_ours(tokenizer: str, tmp_path: Path) -> None:
    from archaudit.export import export_hf
    from archaudit.model.load import load_model

    run = _run(tmp_path, "baseline", tokenizer)
    export_hf(run, tmp_path / "hf")
    theirs = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf", local_files_only=True)
    _, ours = load_model(run)
    text = "Héllo, wörld!\n\tThe quick brown fox — 3.14 ≈ π 😀 <|endoftext|> Ā\x00"
    assert theirs.encode(text, add_special_tokens=False) == ours.encode(text)
    assert theirs.decode(ours.encode(text)) == ours.decode(ours.encode(text))
    # BOS, EOS and pad: the end-of-text token, or the NUL byte for the byte tokenizer
    special = 0 if ours.eos_id is None else ours.eos_id
    assert theirs.eos_token_id == theirs.bos_token_id == theirs.pad_token_id == special


def test_eval_and_diagnose_read_the_export(tmp_path: Path) -> None:
    from archaudit.diagnose import diagnose_bottleneck
    from archaudit.evals import evaluate
    from archaudit.evals.models import load_scoring_model
    from archaudit.export import export_hf

    run = _run(tmp_path, "baseline", context=128)
    export_hf(run, tmp_path / "hf")
    suite, data = "demo", tmp_path / "text.txt"
    data.write_text("the cat sat on the mat and the dog ran far away. " * 20)
    ran = evaluate(str(run), suite, limit=4, show_progress=False)
    # The byte tokenizer has no end-of-text token: the export's BOS is the NUL byte, which an
    # empty context is conditioned on (as the lm-eval adapter does); the native scorer
    # conditions on nothing. Compared here with the native choice, so weights and tokens are.
    hf_model = load_scoring_model(str(tmp_path / "hf"))
    assert hf_model.prefix_token_id == 0
    hf_model.prefix_token_id = None
    exported = evaluate(hf_model, suite, limit=4, show_progress=False)
    for task, result in ran.tasks.items():
        mine = [item.logprobs for item in result.items]
        theirs = [item.logprobs for item in exported.tasks[task].items]
        assert torch.tensor(theirs).sub(torch.tensor(mine)).abs().max() <= 1e-4, task
    common = dict(tokens=256, window=32, figure=False)
    a, _ = diagnose_bottleneck(str(run), data, out=tmp_path / "d1", **common)
    b, _ = diagnose_bottleneck(str(tmp_path / "hf"), data, out=tmp_path / "d2", **common)
    assert b.suppressed_fraction.mean == pytest.approx(a.suppressed_fraction.mean, abs=1e-4)


def test_cli_refusal_is_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands
    from archaudit.errors import ConfigError

    register_commands()
    run = _run(tmp_path, "softpick")
    done = CliRunner().invoke(app, ["export", "hf", str(run), "--out", str(tmp_path / "o")])
    assert isinstance(done.exception, ConfigError)  # main() prints it as one line, exit 2
    assert str(done.exception) == (
        "model.attention.score = 'softpick': no stock transformers class computes it, so "
        "this run cannot be exported to a Hugging Face directory without custom code"
    )
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_a_failed_logit_check_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """NaN weights give NaN logits: exit 2 and no folder `eval` could score (issue 36)."""
    from archaudit.errors import ArchauditError
    from archaudit.export import export_hf, hf

    run = _run(tmp_path, "baseline")
    monkeypatch.setattr(hf, "_logit_diff", lambda *a: (float("nan"), 64))
    with pytest.raises(ArchauditError, match="nothing was written"):
        export_hf(run, tmp_path / "hf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline"]


@pytest.mark.parametrize("arm", ["qwen_moe", "mixtral_moe"])
def test_experts_of_an_odd_width_export_and_compute_the_runs_logits(
    arm: str, tmp_path: Path
) -> None:
    """Issue 57: qwen_moe at d_model 64 has experts 59 units wide; transformers' CPU MoE path
    (`torch._grouped_mm`) refused the export ("strides should be multiple of 16 bytes"). The
    export pads the experts with zero units, which compute nothing."""
    from dataclasses import replace

    from archaudit.export import export_hf
    from archaudit.export.stock import EXPERT_ALIGN
    from archaudit.model.load import load_model
    from archaudit.train import train

    cfg = resolve_arm(arm).apply(replace(TINY, n_layers=2))
    cfg = replace(cfg, moe=replace(cfg.moe, expert_hidden=59))
    run = tmp_path / arm
    assert train(trained_model(cfg, STEPS), STEPS, run, seed=0).status == "ok"
    export_hf(run, tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    width = config.get("moe_intermediate_size", config.get("intermediate_size"))
    assert width % EXPERT_ALIGN == 0 and 59 < width < 59 + EXPERT_ALIGN
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "hf", dtype=torch.float32, local_files_only=True
    )
    ours, _ = load_model(run)
    ids = torch.randint(0, 256, (3, 32), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        diff = (ours(ids) - loaded(input_ids=ids).logits).abs().max().item()
    assert diff <= 1e-4
    assert ours(ids).abs().max().item() > 1e-2
