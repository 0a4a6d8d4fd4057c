"""Formula tests for what transformers has no counterpart of: capacity dropping, expert-choice
routing, the MoE terms in the training objective, routing diagnostics and collapse events,
active parameters, and the shared-layer entries (against the unshared model they equal)."""

from __future__ import annotations

import copy
import dataclasses
import math

import pytest
import torch
from test_mods_support import build_arm, formula

from archaudit.config import ModelConfig, MoEConfig, build
from archaudit.errors import ConfigError
from archaudit.model import build_model, count_parameters
from archaudit.model.context import ForwardContext
from archaudit.model.moe import (
    MoE,
    expert_choice_routing,
    moe_stats,
    routing_metrics,
    top_k_routing,
)
from archaudit.mods import get_modification, list_modifications, resolve_arm
from archaudit.train.monitor import StabilityMonitor

TINY = dict(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)


def test_capacity_drops_later_assignments_first_choices_first():
    """Re-typed GShard priority: all first choices queue before any second choice, earlier
    tokens before later ones; each expert keeps ⌈c·N·k/E⌉."""
    torch.manual_seed(0)
    probs = torch.randn(10, 4).softmax(-1)
    options = MoEConfig(experts=4, top_k=2, capacity_factor=0.6)
    got = top_k_routing(probs, options)
    cap = math.ceil(0.6 * 10 * 2 / 4)
    _, choice = probs.topk(2, dim=-1)
    kept, queue = [], [0] * 4
    for slot in range(2):
        for token in range(10):
            e = int(choice[token, slot])
            if queue[e] < cap:
                queue[e] += 1
                kept.append((token, e))
    assert sorted(zip(got.token.tolist(), got.expert.tolist(), strict=True)) == sorted(kept)
    assert float(got.dropped) == pytest.approx(1 - len(kept) / 20)
    assert got.chosen.tolist() == torch.bincount(choice.flatten(), minlength=4).tolist()


def test_a_dropped_token_gets_no_routed_output():
    cfg = build(ModelConfig, {**TINY, "mlp": {"name": "moe"}, "moe": {"experts": 2, "top_k": 1,
                "capacity_factor": 0.5, "normalize_top_k": False}}, section="model")  # fmt: skip
    torch.manual_seed(0)
    moe = MoE(cfg).double()
    x = torch.randn(1, 8, 32, dtype=torch.float64)
    flat = x.reshape(-1, 32)
    probs = moe.router(flat).softmax(-1)
    d = top_k_routing(probs, cfg.moe)
    y = moe(x).reshape(-1, 32)
    expected = torch.zeros_like(flat)
    for t, e, w in zip(d.token, d.expert, d.weight, strict=True):
        expected[t] += w * moe.experts[e](flat[t])
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-12)
    dropped = sorted(set(range(8)) - set(d.token.tolist()))
    assert dropped and y[dropped].abs().max() == 0


def test_expert_choice_gives_each_expert_its_top_tokens():
    probs = torch.randn(12, 3).softmax(-1)
    d = expert_choice_routing(probs, MoEConfig(experts=3, top_k=1, routing="expert_choice"))
    per = math.ceil(12 / 3)
    for e in range(3):
        mine = d.token[d.expert == e]
        assert sorted(mine.tolist()) == sorted(probs[:, e].topk(per).indices.tolist())
        torch.testing.assert_close(d.weight[d.expert == e], probs[mine, e])
    assert float(d.dropped) == pytest.approx(1 - len(set(d.token.tolist())) / 12)


def test_training_loss_adds_the_mean_router_terms_and_eval_adds_none():
    cfg = resolve_arm("st_moe").apply(ModelConfig(**TINY))
    torch.manual_seed(0)
    model = build_model(cfg).double()
    idx = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        h = model.hidden(idx)
        logits = model.head(h).float()  # the model takes its cross-entropy in float32
        ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), idx.flatten())
    x = model.drop(model.embed(idx))
    terms = []
    for block in model.layers():
        ctx = ForwardContext(T=8, device=idx.device, position=model.position)
        mlp_in = block.mlp_norm(x + block.attn(block.attn_norm(x), ctx))
        moe = block.mlp
        logits = moe.router(mlp_in.reshape(-1, 32))
        probs = logits.softmax(-1)
        f = torch.bincount(probs.topk(2).indices.flatten(), minlength=8) / probs.shape[0]
        balance = 8 * (f * probs.mean(0)).sum()
        z = torch.logsumexp(logits, -1).square().mean()
        terms.append(0.01 * balance + 1e-3 * z)
        x = block(x, ctx)
    loss = model(idx, targets=idx)
    torch.testing.assert_close(loss, ce + torch.stack(terms).mean(), rtol=0, atol=1e-12)
    model.eval()
    torch.testing.assert_close(model(idx, targets=idx).detach(), ce, rtol=0, atol=1e-12)


def test_routing_metrics_and_a_collapse_event():
    model = build_arm("switch_moe", **TINY)
    model(torch.randint(0, 64, (2, 16)), targets=torch.randint(0, 64, (2, 16)))
    row = routing_metrics(moe_stats(model))
    assert len(row["moe_load"]) == 2 and all(len(load) == 8 for load in row["moe_load"])
    assert all(abs(sum(load) - 1) < 1e-4 for load in row["moe_load"])
    assert 0 <= row["moe_dropped"] < 1 and 0 < row["moe_router_entropy"] <= math.log(8)
    assert routing_metrics(moe_stats(build_arm("baseline", **TINY))) == {}
    monitor = StabilityMonitor()
    assert monitor.observe_routing(1, [0.3, 0.95]) == [
        {"step": 1, "event": "router_collapse", "layer": 1, "top_expert_share": 0.95,
         "threshold": 0.9}
    ]  # fmt: skip
    assert monitor.observe_routing(2, [0.3, 0.97]) == []  # still collapsed: reported once
    restored = StabilityMonitor()
    restored.load_state_dict(monitor.state_dict())
    assert restored.observe_routing(3, [0.3, 0.99]) == []  # the state survives a resume
    assert monitor.observe_routing(3, [0.3, 0.2]) == []
    assert monitor.observe_routing(4, [0.3, 0.93])[0]["step"] == 4  # a new episode


SIZES = [TINY, dict(vocab_size=50, context_length=24, d_model=48, n_layers=3, n_heads=6)]
ACTIVE = [m.name for m in list_modifications() if m.active_params is not None]


@pytest.mark.parametrize("name", ACTIVE)
def test_active_parameter_delta_equals_its_formula(name):
    for sizes in SIZES:
        cfg = ModelConfig(**sizes)
        base = build_model(cfg)
        model = build_model(resolve_arm(name).apply(cfg))
        assert base.active_parameters() == count_parameters(base)
        delta = model.active_parameters() - base.active_parameters()
        assert get_modification(name).active_params_delta(cfg) == delta, (name, sizes)


@pytest.mark.parametrize("name", ["mixtral_moe", "deepseek_moe"])
def test_moe_entries_keep_active_parameters_within_the_router(name):
    cfg = ModelConfig(**TINY)
    extra = get_modification(name).active_params_delta(cfg)
    router = cfg.n_layers * cfg.d_model * resolve_arm(name).apply(cfg).moe.experts
    assert 0 <= extra <= router + cfg.n_layers * 3 * cfg.d_model * 16  # ⌈H/k⌉ rounding


def unshared_copy(model, order):
    """The same network with every layer's block a separate copy: what sharing must equal."""
    cfg = dataclasses.replace(
        model.cfg, sharing=dataclasses.replace(model.cfg.sharing, blocks=None)
    )
    flat = build_model(cfg)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("blocks.")}
    for layer, b in enumerate(order):
        for key, value in model.blocks[b].state_dict().items():
            state[f"blocks.{layer}.{key}"] = value
    flat.load_state_dict(state)
    return flat


@formula("albert_sharing", "repeat_block", "depth_recurrence")
@pytest.mark.parametrize(
    ("name", "order"),
    [("albert_sharing", [0, 0, 0, 0]), ("repeat_block", [0, 0, 1, 1]),
     ("depth_recurrence", [0, 1, 2, 3, 0, 1, 2, 3])],
)  # fmt: skip
def test_shared_model_equals_its_unshared_copy_and_sums_gradients(name, order):
    model = build_arm(name, **{**TINY, "n_layers": 4}).double()
    assert model.order == order
    flat = unshared_copy(model, order).double()
    idx = torch.randint(0, 64, (2, 12))
    a, b = model(idx, targets=idx), flat(idx, targets=idx)
    bound = get_modification(name).check.max_abs_diff
    torch.testing.assert_close(a, b, rtol=0, atol=bound)
    a.backward()
    b.backward()
    for u in set(order):  # a shared weight's gradient is the sum over the layers that use it
        for key, p in model.blocks[u].named_parameters():
            summed = sum(
                dict(flat.blocks[layer].named_parameters())[key].grad
                for layer, used in enumerate(order)
                if used == u
            )
            torch.testing.assert_close(p.grad, summed, rtol=0, atol=bound)
    assert copy.deepcopy(model).order == order


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"moe": {"top_k": 9}}, r"model.moe.top_k = 9 exceeds model.moe.experts = 8"),
        ({"moe": {"capacity_factor": 0.0}}, r"model.moe.capacity_factor = 0.0 must be > 0"),
        ({"sharing": {"blocks": 3}}, r"model.sharing.blocks = 3 exceeds model.n_layers = 2"),
        ({"sharing": {"order": "cycl"}}, r"model.sharing.order = 'cycl'.*did you mean 'cycle'"),
        ({"attention": {"latent_rope_dim": 3}}, r"latent_rope_dim = 3 must be even"),
    ],
)
def test_moe_and_sharing_options_are_checked_where_built(tree, message):
    with pytest.raises(ConfigError, match=message):
        build(ModelConfig, {**TINY, **tree}, section="model")


def test_unknown_routing_and_latent_options_fail_at_build_naming_the_key():
    cfg = build(ModelConfig, {**TINY, "mlp": {"name": "moe"}, "moe": {"routing": "topk"}},
                section="model")  # fmt: skip
    with pytest.raises(ConfigError, match=r"model.moe.routing = 'topk'.*did you mean 'top_k'"):
        build_model(cfg)
    latent = {**TINY, "attention": {"name": "latent", "gate": "headwise"}}
    with pytest.raises(ConfigError, match=r"'latent' does not implement model.attention.gate"):
        build_model(build(ModelConfig, latent, section="model"))
