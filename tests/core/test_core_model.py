import pytest
import torch
from torch import nn

from archaudit.config import (
    AttentionConfig,
    BlockConfig,
    HeadConfig,
    ModelConfig,
    ResidualConfig,
    StreamConfig,
    build,
)
from archaudit.errors import ConfigError
from archaudit.model import ATTENTIONS, build_model, count_parameters, training_flops_per_token
from archaudit.model.attention import Attention

TINY = dict(vocab_size=97, d_model=64, n_layers=3, n_heads=4, context_length=32)


def test_baseline_parameter_count_matches_its_formula():
    cfg = ModelConfig(**TINY)
    d, L, V = cfg.d_model, cfg.n_layers, cfg.vocab_size
    hidden = 176  # 8/3·64 = 170.7, rounded up to a multiple of 16
    per_layer = 4 * d * d + 3 * d * hidden + 2 * d  # q,k,v,o + SwiGLU + two RMSNorm gains
    expected = V * d + L * per_layer + d + d * V  # embedding, layers, final norm, untied head
    assert count_parameters(build_model(cfg)) == expected
    tied = build_model(ModelConfig(**TINY, head=HeadConfig(tie_embeddings=True)))
    assert count_parameters(tied) == expected - d * V


def test_model_is_causal():
    torch.manual_seed(0)
    model = build_model(ModelConfig(**TINY)).eval()
    x = torch.randint(0, 97, (2, 32))
    y = x.clone()
    y[:, 20:] = torch.randint(0, 97, (2, 12))
    with torch.no_grad():
        a, b = model(x), model(y)
    assert a.shape == (2, 32, 97)
    torch.testing.assert_close(a[:, :20], b[:, :20])
    assert not torch.allclose(a[:, 20:], b[:, 20:])


def test_explicit_softmax_path_matches_fused_attention():
    # Soft-cap large enough to be the identity forces the explicit-logits path.
    torch.manual_seed(0)
    fused = build_model(ModelConfig(**TINY)).eval()
    torch.manual_seed(0)
    explicit = build_model(ModelConfig(**TINY, attention=AttentionConfig(logit_softcap=1e9))).eval()
    x = torch.randint(0, 97, (2, 32))
    with torch.no_grad():
        torch.testing.assert_close(fused(x), explicit(x), atol=1e-5, rtol=1e-5)


def test_residual_projections_start_smaller():
    cfg = ModelConfig(**{**TINY, "d_model": 256})
    model = build_model(cfg)
    o_std = model.blocks[0].attn.o_proj.weight.std().item()
    q_std = model.blocks[0].attn.q_proj.weight.std().item()
    assert o_std == pytest.approx(0.02 / (2 * cfg.n_layers) ** 0.5, rel=0.05)
    assert q_std == pytest.approx(0.02, rel=0.05)


@ATTENTIONS.register("test_forgetful")
class ForgetfulAttention(Attention):
    """Declares its init (the parent's) but leaves its own new projection out."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__(cfg, layer)
        self.extra = nn.Linear(cfg.d_model, cfg.d_model, bias=False)


@ATTENTIONS.register("test_undeclared")
class UndeclaredAttention(nn.Module):
    """Declares no init: its matrices are drawn as plain ones."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, ctx: object) -> torch.Tensor:
        return self.proj(x)


def test_a_weight_no_init_draws_is_an_error_and_an_undeclared_module_gets_the_plain_rule():
    with pytest.raises(ConfigError, match=r"blocks\.0\.attn\.extra\.weight is never init"):
        build_model(ModelConfig(**TINY, attention=AttentionConfig(name="test_forgetful")))
    torch.manual_seed(0)
    wide = {**TINY, "d_model": 256, "attention": AttentionConfig(name="test_undeclared")}
    plain = build_model(ModelConfig(**wide)).blocks[0].attn.proj.weight
    assert plain.std().item() == pytest.approx(0.02, rel=0.05)
    deep = build_model(ModelConfig(**wide, residual=ResidualConfig(name="deepnorm")))
    beta = (8 * TINY["n_layers"]) ** -0.25  # DeepNorm's gain reaches an undeclared matrix too
    assert deep.blocks[0].attn.proj.weight.std().item() == pytest.approx(0.02 * beta, rel=0.05)


def test_training_flops_follow_palm_formula():
    cfg = ModelConfig(**TINY)
    n = 1000
    assert training_flops_per_token(cfg, n) == 6 * n + 12 * 3 * 32 * 64


def test_unknown_slot_component_names_the_key():
    match = r"model\.attention\.score = 'sofmax'.*did you mean 'softmax'"
    with pytest.raises(ConfigError, match=match):
        build_model(ModelConfig(**TINY, attention=AttentionConfig(score="sofmax")))


def test_loss_is_cross_entropy_of_forward():
    torch.manual_seed(0)
    model = build_model(ModelConfig(**TINY)).eval()
    x = torch.randint(0, 97, (2, 32))
    y = torch.randint(0, 97, (2, 32))
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        torch.testing.assert_close(model(x, targets=y), expected)


def test_model_trains_after_an_inference_mode_forward():
    model = build_model(ModelConfig(**TINY))
    x = torch.randint(0, 97, (2, 32))
    with torch.inference_mode():
        model(x)
    model(x, targets=x).backward()  # the RoPE table is rebuilt outside inference mode
    assert model.embed.weight.grad is not None


@pytest.mark.parametrize("stream", ["hyper", "attn_res"])
@pytest.mark.parametrize("rule", ["post", "deepnorm", "residual_after_norm", "sandwich", "rezero"])
@pytest.mark.parametrize("key", ["name", "mlp"])
def test_streams_that_add_branches_themselves_refuse_every_rule_but_pre_norm(stream, rule, key):
    # The stream runs each block's pre-norm branches, so another rule would silently never run.
    cfg = ModelConfig(
        **TINY, stream=StreamConfig(name=stream), residual=ResidualConfig(**{key: rule})
    )
    with pytest.raises(ConfigError) as err:
        build_model(cfg)
    message = str(err.value)
    assert f"model.stream.name = {stream!r}" in message
    assert f"model.residual.{key} = {rule!r}" in message
    assert "\n" not in message
    build_model(ModelConfig(**TINY, stream=StreamConfig(name=stream), residual=ResidualConfig()))


def test_a_rule_pair_no_block_implements_is_refused_with_its_keys():
    tree = {**TINY, "residual": {"name": "post", "mlp": "pre"}}
    with pytest.raises(ConfigError) as err:
        build_model(build(ModelConfig, tree, section="model"))
    message = str(err.value)
    assert "model.residual.mlp = 'pre'" in message and "model.residual.name = 'post'" in message
    assert "unnormed+residual_after_norm" in message and "\n" not in message


@pytest.mark.parametrize(
    ("overrides", "keys"),
    [
        ({"position": {"name": "alibi"}}, ("model.attention.name", "model.position.name")),
        ({"attention": {"qk_norm": True}}, ("model.attention.name", "model.attention.qk_norm")),
        (
            {"attention": {"value_residual": True}},
            ("model.attention.name", "model.attention.value_residual"),
        ),
    ],
)
def test_differential_attention_refuses_what_it_does_not_implement(overrides, keys):
    tree = {**TINY, **overrides}
    tree["attention"] = {**tree.get("attention", {}), "name": "differential"}
    with pytest.raises(ConfigError) as err:
        build_model(build(ModelConfig, tree, section="model"))
    assert all(key in str(err.value) for key in keys)


@pytest.mark.parametrize("rule", ["post", "deepnorm", "residual_after_norm", "sandwich"])
def test_a_parallel_block_refuses_rules_but_pre_norm_and_streams_that_skip_blocks(rule):
    parallel = BlockConfig(name="parallel")
    with pytest.raises(
        ConfigError,
        match=rf"model\.block\.name = 'parallel' cannot use model\.residual\.name = '{rule}'",
    ):
        build_model(ModelConfig(**TINY, block=parallel, residual=ResidualConfig(name=rule)))
    for stream in ("hyper", "attn_res"):
        with pytest.raises(
            ConfigError, match=rf"model\.stream\.name = '{stream}' cannot use model\.block\.name"
        ):
            build_model(ModelConfig(**TINY, block=parallel, stream=StreamConfig(name=stream)))
    build_model(ModelConfig(**TINY, block=parallel, residual=ResidualConfig(name="pre")))


def test_a_checkpoint_with_other_weight_names_is_refused_naming_one(tmp_path):
    from safetensors.torch import save_file

    from archaudit.checkpoint_io import read_weights
    from archaudit.errors import DataError
    from archaudit.rundir import WEIGHTS

    model = build_model(ModelConfig(**TINY))
    state = {k.replace(".attn.", ".attn.sublayer."): v for k, v in model.state_dict().items()}
    save_file({k: v.contiguous() for k, v in state.items()}, tmp_path / WEIGHTS)
    with pytest.raises(DataError) as err:
        read_weights(model, tmp_path)
    message = str(err.value)
    assert "the file lacks 'blocks.0.attn.k_proj.weight' (and 11 more)" in message
    assert "the model has no 'blocks.0.attn.sublayer.k_proj.weight'" in message
    assert "\n" not in message


def test_a_shapes_only_model_on_the_meta_device_counts_the_same_without_torch_dynamo():
    """`plan` builds every arm on the meta device to count its parameters. torch's own draw
    of an embedding there imports torch._dynamo (1.5 s of every plan); the model skips it on
    meta only, so the count is the real model's and a real model's draws are unchanged."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from archaudit.config import ModelConfig, PositionConfig\n"
        "from archaudit.model import build_model, count_parameters\n"
        f"cfg = ModelConfig(**{TINY!r}, position=PositionConfig(name='learned'))\n"
        "with torch.device('meta'):\n"
        "    meta = count_parameters(build_model(cfg))\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "print(meta, count_parameters(build_model(cfg)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    meta, real = out.stdout.split()
    assert meta == real
