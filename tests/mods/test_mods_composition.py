"""Every pair of catalogue entries either composes into a model that trains (a forward and a
backward pass at a tiny size give finite values) or is refused when the arm is composed, with a
one-line message; no pair may build and then crash, or build while dropping a component."""

from __future__ import annotations

import itertools

import pytest
import torch

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model import build_model
from archaudit.mods import list_modifications, resolve_arm

TINY = ModelConfig(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)
T = 8
NAMES = [mod.name for mod in list_modifications() if mod.family != "baseline"]
PAIRS = list(itertools.combinations(NAMES, 2))


@pytest.fixture
def one_thread():
    """Thousands of tiny models: on a shared, loaded machine one thread is ~10× faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def compose_and_train(spec: str) -> str:
    """'refused' or 'trained'; raises on anything else."""
    try:
        cfg = resolve_arm(spec).apply(TINY)
    except ConfigError as err:
        message = str(err)
        assert "\n" not in message and message, f"{spec}: refusal must be one line"
        return "refused"
    torch.manual_seed(0)
    model = build_model(cfg)  # a ConfigError here means the catalogue let a bad pair through
    idx = torch.randint(0, TINY.vocab_size, (2, T))
    loss = model(idx, targets=torch.roll(idx, -1, dims=1))
    loss.backward()
    assert torch.isfinite(loss), spec
    for name, p in model.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), f"{spec}: {name}"
    return "trained"


def test_every_pair_of_catalogue_entries_composes_or_is_refused(one_thread):
    outcomes = [compose_and_train(f"{a}+{b}") for a, b in PAIRS]
    assert len(outcomes) == len(NAMES) * (len(NAMES) - 1) // 2
    assert outcomes.count("trained") > 4 * outcomes.count("refused") > 0


@pytest.mark.parametrize(
    ("spec", "keys"),
    [
        ("diff_attn+alibi", ("diff_attn", "alibi", "model.attention")),
        ("hyper_connections_4+post_ln", ("hyper_connections_4", "post_ln", "model.residual")),
        ("attn_res+hybrid_norm", ("attn_res", "hybrid_norm", "model.residual")),
    ],
)
def test_incompatible_pairs_are_refused_at_composition_naming_both(spec, keys):
    with pytest.raises(ConfigError) as err:
        resolve_arm(spec)
    assert all(key in str(err.value) for key in keys)
