"""Formula tests for the residual and norm families: block variants against their written-out
update, hyper-connections and attention residuals against naive loops, and the init rules."""

from __future__ import annotations

import math

import pytest
import torch
from test_mods_support import build_arm, formula, rms

from archaudit.config import ModelConfig, replace_paths
from archaudit.model import build_model
from archaudit.model.context import ForwardContext
from archaudit.mods import resolve_arm

TINY = dict(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)
T = 6


def config(spec: str, **sizes) -> ModelConfig:
    return resolve_arm(spec).apply(ModelConfig(**{**TINY, **sizes}))


def build(spec: str, **sizes):
    return build_arm(spec, **{**TINY, **sizes})


def context(model) -> ForwardContext:
    return ForwardContext(T=T, device=torch.device("cpu"), position=model.position)


def randomize(*params: torch.nn.Parameter) -> None:
    with torch.no_grad():
        for p in params:
            p.copy_(torch.randn_like(p))


# ---------------------------------------------------------------------------------------------
# block variants: each sublayer F joined to the stream by the variant's rule


def norm(block, sublayer: str, which: str = "norm") -> torch.Tensor:
    return getattr(block, f"{sublayer}_{which}").weight


UPDATES = {  # (block, x, F, "attn" or "mlp") → the stream after that sublayer
    "baseline": lambda b, x, F, s: x + F(rms(x, norm(b, s))),  # pre-norm
    "post_ln": lambda b, x, F, s: rms(x + F(x), norm(b, s)),
    "peri_ln": lambda b, x, F, s: x + rms(F(rms(x, norm(b, s))), norm(b, s, "out_norm")),
    "layerscale": lambda b, x, F, s: x + norm(b, s, "scale") * F(rms(x, norm(b, s))),
    "rezero": lambda b, x, F, s: x + norm(b, s, "scale") * F(x),
}


def written_out(spec: str, block, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
    for sublayer in ("attn", "mlp"):
        x = UPDATES[spec](block, x, lambda h, s=sublayer: getattr(block, s)(h, ctx), sublayer)
    return x


@formula(*UPDATES)
@pytest.mark.parametrize("spec", sorted(UPDATES))
def test_block_variant_matches_its_update(spec):
    model = build(spec)
    ctx = context(model)
    block = model.blocks[0]
    own = [p for name, p in block.named_parameters() if not name.startswith(("attn.", "mlp."))]
    randomize(*own)  # norms and scales
    x = torch.randn(1, T, 32)
    torch.testing.assert_close(block(x, ctx), written_out(spec, block, x, ctx))


@formula("parallel_block")
def test_parallel_block_adds_both_sublayers_of_the_same_input():
    model, baseline = build("parallel_block"), build("baseline")
    model.load_state_dict(baseline.state_dict())  # the same parameters, strictly
    block, ctx = model.blocks[0], context(model)
    randomize(block.attn_norm.weight, block.mlp_norm.weight)
    x = torch.randn(1, T, 32)
    expected = (
        x
        + block.attn(rms(x, block.attn_norm.weight), ctx)
        + block.mlp(rms(x, block.mlp_norm.weight), ctx)
    )
    torch.testing.assert_close(block(x, ctx), expected)
    sequential = baseline.blocks[0]
    sequential.load_state_dict(block.state_dict())
    assert not torch.allclose(sequential(x, context(baseline)), expected)  # not the same layer


def test_rezero_starts_as_the_identity_and_layerscale_small_by_depth():
    model = build("rezero")
    x = torch.randn(1, T, 32)
    torch.testing.assert_close(model.blocks[0](x, context(model)), x)
    for depth, gamma in ((2, 0.1), (18, 0.1), (20, 1e-5), (30, 1e-6)):  # CaiT, section 2.1
        assert config("layerscale", n_layers=depth).residual.layerscale_init == gamma
    assert (build("layerscale").blocks[1].attn_scale.weight == 0.1).all()


@formula("deepnorm")
def test_deepnorm_upweights_the_residual_and_scales_the_init_by_beta():
    n_layers = 3
    model = build("deepnorm", n_layers=n_layers, d_model=128)
    block = model.blocks[0]
    randomize(block.attn_norm.weight, block.mlp_norm.weight)
    x = torch.randn(1, T, 128)
    ctx = context(model)
    alpha = (2 * n_layers) ** 0.25
    y = rms(alpha * x + block.attn(x, ctx), block.attn_norm.weight)
    expected = rms(alpha * y + block.mlp(y, ctx), block.mlp_norm.weight)
    torch.testing.assert_close(block(x, ctx), expected)
    beta = (8 * n_layers) ** -0.25
    attn = block.attn
    for weight, scale in (
        (attn.q_proj.weight, 1.0),
        (attn.v_proj.weight, beta),
        (attn.o_proj.weight, beta),
        (block.mlp.w1.weight, beta),
    ):
        assert weight.std().item() == pytest.approx(0.02 * scale, rel=0.1)


@formula("no_residual_scaling")
def test_no_residual_scaling_inits_output_projections_at_the_plain_std():
    sizes = dict(d_model=128, n_layers=4)
    for spec, out_std in (("baseline", 0.02 / math.sqrt(2 * 4)), ("no_residual_scaling", 0.02)):
        block = build(spec, **sizes).blocks[0]
        assert block.attn.o_proj.weight.std().item() == pytest.approx(out_std, rel=0.1)
        assert block.mlp.w2.weight.std().item() == pytest.approx(out_std, rel=0.1)
        assert block.attn.q_proj.weight.std().item() == pytest.approx(0.02, rel=0.1)


@formula("layernorm")
def test_layernorm_centres_and_adds_a_bias_in_every_norm():
    model = build("layernorm")
    norms = [model.norm, model.blocks[0].attn_norm, model.blocks[1].mlp_norm]
    x = torch.randn(1, T, 32)
    for norm in norms:
        randomize(norm.weight, norm.bias)
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        torch.testing.assert_close(
            norm(x), (x - mean) / torch.sqrt(var + 1e-5) * norm.weight + norm.bias
        )


# ---------------------------------------------------------------------------------------------
# streams


def layer_norm(x: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5) * gain + bias


class Sublayer:
    """A stand-in sublayer whose branch is tanh(h·W): streams only call branches."""

    def __init__(self, d: int) -> None:
        self.weight = torch.randn(d, d) / math.sqrt(d)

    def branch(self, h: torch.Tensor, ctx: object) -> torch.Tensor:
        return torch.tanh(h @ self.weight)


class Blocks(list):
    """Stand-in blocks of two sublayers each, as a stream receives them."""

    def __init__(self, subs: list[Sublayer]) -> None:
        super().__init__(_Block(subs[i : i + 2]) for i in range(0, len(subs), 2))


class _Block:
    def __init__(self, subs: list[Sublayer]) -> None:
        self.subs = subs

    def branches(self) -> list:
        return [sub.branch for sub in self.subs]


@formula("hyper_connections_2", "hyper_connections_4")
@pytest.mark.parametrize("spec", ["hyper_connections_2", "hyper_connections_4"])
def test_hyper_connections_with_one_stream_and_identity_mixing_are_the_baseline(spec):
    one_stream = replace_paths(config(spec), {"stream.n_streams": 1}, section="model")
    torch.manual_seed(0)
    hyper = build_model(one_stream)
    baseline = build("baseline")
    missing, unexpected = hyper.load_state_dict(baseline.state_dict(), strict=False)
    assert not unexpected and all(key.startswith("stream.") for key in missing)
    idx = torch.randint(0, 64, (2, T))
    torch.testing.assert_close(hyper(idx), baseline(idx))


@pytest.mark.parametrize("spec", ["hyper_connections_2", "hyper_connections_4"])
def test_hyper_connections_one_sublayer_update(spec):
    stream = build(spec).stream
    n = stream.n
    assert n == int(spec.rsplit("_", 1)[1])
    randomize(*stream.parameters())
    f = Sublayer(32)
    x = torch.randn(1, T, 32)
    out = stream(x, Blocks([f]), None)
    H = [x[0].clone() for _ in range(n)]  # every stream starts as the embedding
    expected = torch.zeros(T, 32)
    for t in range(T):
        norm = stream.norms[0]  # a LayerNorm, as the paper's pseudo-code, whatever model.norm
        normed = [layer_norm(H[m][t], norm.weight, norm.bias) for m in range(n)]
        alpha = [
            stream.static_alpha[0, m]
            + stream.scale_alpha[0] * torch.tanh(normed[m] @ stream.dynamic_alpha[0])
            for m in range(n)
        ]
        beta = [
            stream.static_beta[0, m]
            + stream.scale_beta[0] * torch.tanh(normed[m] @ stream.dynamic_beta[0])
            for m in range(n)
        ]
        h = sum(alpha[m][0] * H[m][t] for m in range(n))  # α_mᵀH
        branch = f.branch(h, None)
        for j in range(n):  # stream j ← Σ_m A_r[m, j]·H_m + β_j·F(h); the output sums streams
            expected[t] += sum(alpha[m][1 + j] * H[m][t] for m in range(n)) + beta[j] * branch
    torch.testing.assert_close(out[0], expected, rtol=1e-4, atol=1e-5)


@formula("attn_res")
def test_attention_residuals_are_softmax_weighted_sums_of_earlier_outputs():
    stream = build("attn_res").stream
    randomize(stream.queries)
    subs = [Sublayer(32) for _ in range(4)]  # 2 layers = 4 sublayers
    x = torch.randn(1, T, 32)
    out = stream(x, Blocks(subs), None)

    def mix(values, w):
        expected = torch.zeros(T, 32)
        for t in range(T):
            e = [math.exp((w @ rms(v[t])).item()) for v in values]
            expected[t] = sum(a / sum(e) * v[t] for a, v in zip(e, values, strict=True))
        return expected

    values = [x[0]]
    for l, sub in enumerate(subs):
        values.append(sub.branch(mix(values, stream.queries[l]), None))
    torch.testing.assert_close(out[0], mix(values, stream.queries[-1]), rtol=1e-4, atol=1e-5)
