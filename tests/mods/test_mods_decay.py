"""Weight decay by role: every parameter of every catalogue entry, with its decay flag.

The roles come from the design (MODIFICATIONS.md: AdamW, weight decay on matrices only) read as
roles, not shapes: projection matrices and embeddings decay; norm gains and biases, mixing
weights (hyper-connections' α, β and W, attention residuals' queries, talking-heads maps),
per-head scalars and λ's do not. The table below is written from that rule, one row per kind
of parameter; the test lists what each entry's model holds and checks it row by row.
"""

from __future__ import annotations

import pytest
import torch
from test_mods_support import build_arm
from torch import nn

from archaudit.config import Recipe
from archaudit.errors import ConfigError
from archaudit.model.decay import decay_flags
from archaudit.mods import list_modifications
from archaudit.train.optim import make_optimizer

TINY = dict(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4)

ROLES = {  # (owning module's class, parameter name) → decayed
    ("Linear", "weight"): True,  # every projection: q, k, v, o, MLP, gate, heads, MTP
    ("Embedding", "weight"): True,  # token embedding, learned positions
    ("RMSNorm", "weight"): False,
    ("LayerNorm", "weight"): False,
    ("LayerNorm", "bias"): False,
    ("Attention", "value_lambdas"): False,
    ("DifferentialAttention", "lambdas"): False,
    ("ScalableSoftmax", "s"): False,
    ("QKL2Softmax", "g"): False,
    ("LearnedSinkSoftmax", "sink_logit"): False,
    ("TalkingHeads", "pre"): False,
    ("TalkingHeads", "post"): False,
    ("Scale", "weight"): False,  # ReZero's α, LayerScale's γ
    ("HyperConnections", "static_alpha"): False,
    ("HyperConnections", "static_beta"): False,
    ("HyperConnections", "dynamic_alpha"): False,
    ("HyperConnections", "dynamic_beta"): False,
    ("HyperConnections", "scale_alpha"): False,
    ("HyperConnections", "scale_beta"): False,
    ("AttentionResiduals", "queries"): False,
}


def listing(model: nn.Module) -> list[tuple[str, str, bool]]:
    """(parameter name, its role in ROLES, decayed?) for every parameter of the model."""
    flags = decay_flags(model)
    modules = dict(model.named_modules())
    rows = []
    for name, _ in model.named_parameters():
        owner, _, local = name.rpartition(".")
        rows.append((name, f"{type(modules[owner]).__name__}.{local}", flags[name]))
    return rows


@pytest.mark.parametrize("name", [mod.name for mod in list_modifications()])
def test_every_parameter_of_every_entry_is_decayed_by_its_role(name):
    model = build_arm(name, **TINY)
    rows = listing(model)
    assert [row[0] for row in rows] == list(decay_flags(model))  # nothing left out or added
    for param, role, decayed in rows:
        key = tuple(role.split("."))
        assert key in ROLES, f"{name}: {param} has a role the table does not know ({role})"
        assert decayed == ROLES[key], f"{name}: {param} ({role}) decayed={decayed}"


@pytest.mark.parametrize("name", ["hyper_connections_4", "attn_res", "talking_heads"])
def test_the_optimizer_leaves_mixing_weights_undecayed_whatever_their_shape(name):
    model = build_arm(name, **TINY)
    decayed, undecayed = make_optimizer(model, Recipe()).param_groups
    assert decayed["weight_decay"] == Recipe().weight_decay and undecayed["weight_decay"] == 0
    flags = decay_flags(model)
    params = dict(model.named_parameters())
    assert {id(p) for p in decayed["params"]} == {id(params[n]) for n, f in flags.items() if f}
    mixing = [n for n, p in params.items() if p.dim() >= 2 and not flags[n]]
    assert mixing, "the entry holds matrices that are not matmul weights"
    assert not {id(params[n]) for n in mixing} & {id(p) for p in decayed["params"]}


def test_a_parameter_without_a_declared_role_is_an_error():
    class Plugin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mix = nn.Parameter(torch.eye(2))

    with pytest.raises(ConfigError, match=r"parameter inner\.mix has no weight-decay role"):
        decay_flags(nn.ModuleDict({"inner": Plugin()}))
