"""The instability signals: what SignalCapture reads, and that capture leaves no trace."""

from __future__ import annotations

import json
import math

import pytest
import torch

from archaudit.config import ModelConfig, build
from archaudit.model import build_model
from archaudit.model.signals import SignalCapture
from archaudit.train.callbacks.signals import SIGNALS, log_slope


def tiny(**extra) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=2, context_length=16) | extra
    return build_model(build(ModelConfig, cfg, section="model"))


def test_signals_match_explicit_values():
    model = tiny()
    x = torch.randint(0, 64, (2, 16))
    seen = {}
    block = model.blocks[0]
    hook = block.attn.o_proj.register_forward_pre_hook(lambda m, a: seen.setdefault("y", a[0]))
    with SignalCapture(model) as capture:
        logits = model(x)
    hook.remove()
    signals = capture.signals()
    expected_z = torch.logsumexp(logits.float(), -1)
    assert math.isclose(signals.log_z_mean, float(expected_z.mean()), rel_tol=1e-5)
    assert math.isclose(signals.log_z_max, float(expected_z.abs().max()), rel_tol=1e-5)
    # layer 0's largest logit, recomputed from its queries and keys
    h = block.attn_norm(model.position.embed(model.embed(x)))
    a = block.attn
    q = a.q_proj(h).view(2, 16, 2, -1).transpose(1, 2)
    k = a.k_proj(h).view(2, 16, 2, -1).transpose(1, 2)
    from archaudit.model.context import ForwardContext

    ctx = ForwardContext(T=16, device=x.device, position=model.position)
    q, k, _ = a._transform(q, k, k, ctx)
    z = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    z = z.masked_fill(~ctx.mask(None).allowed, float("-inf"))
    assert math.isclose(signals.attn_logit_max[0], float(z.amax()), rel_tol=1e-4)
    rms = float(block.attn.o_proj(seen["y"].reshape(2, 16, -1)).square().mean().sqrt())
    assert math.isclose(signals.rms_attn[0], rms, rel_tol=1e-4)
    assert len(signals.rms_mlp) == 2 and all(v > 0 for v in signals.rms_mlp)


def test_capture_leaves_the_model_as_it_was():
    model = tiny()
    x = torch.randint(0, 64, (1, 16))
    before = model(x)
    with SignalCapture(model):
        model(x)
    hooks = [m for m in model.modules() if m._forward_hooks or m._forward_pre_hooks]
    assert hooks == [] and torch.equal(before, model(x))


def test_softpick_and_qk_norm_logits_are_captured():
    for extra in ({"attention": {"score": "softpick"}}, {"attention": {"qk_norm": True}}):
        model = tiny(**extra)
        with SignalCapture(model) as capture:
            model(torch.randint(0, 64, (1, 16)))
        assert all(math.isfinite(v) for v in capture.signals().attn_logit_max)


@pytest.mark.slow
def test_signals_in_metrics_at_the_eval_cadence(tmp_path):
    from archaudit.config import Recipe
    from archaudit.train import train

    cfg = build(
        ModelConfig, dict(d_model=16, n_layers=1, n_heads=2, context_length=16), section="m"
    )
    recipe = dict(steps=4, batch_tokens=128, eval_every=2, checkpoint_every=4, corpus_chars=20000)
    train(cfg, build(Recipe, recipe, section="r"), tmp_path / "on")
    train(cfg, build(Recipe, recipe | {"log_signals": False}, section="r"), tmp_path / "off")
    rows = [json.loads(line) for line in (tmp_path / "on" / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if SIGNALS in r] == [2, 4]
    signals = rows[1][SIGNALS]
    assert len(signals["attn_logit_max"]) == 1 and signals["log_z_mean"] > 0
    assert math.isfinite(signals["grad_norm_slope"])
    off = [json.loads(line) for line in (tmp_path / "off" / "metrics.jsonl").open()]
    assert all(SIGNALS not in r for r in off)
    # the signals only read the model: training is the same with them on or off
    assert [r["loss"] for r in off] == [r["loss"] for r in rows]


def test_log_slope():
    assert log_slope([1.0, math.e, math.e**2]) == pytest.approx(1.0)
    assert math.isnan(log_slope([1.0]))
