"""Which parameters weight decay applies to, decided by each parameter's role, not its shape.

Every module that owns parameters declares them in a `decay` class attribute, {name: decayed}:
projection matrices and embeddings decay; norm gains, biases, mixing weights, gates' scalars and
λ's do not (nanoGPT and OLMo decay matrices only, but a residual-mixing matrix is not a matmul
weight). torch's own `nn.Linear` and `nn.Embedding` are declared here. A parameter whose module
declares nothing is an error, so a new component cannot be decayed by accident.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn

from archaudit.errors import ConfigError

TORCH_ROLES: dict[type[nn.Module], Mapping[str, bool]] = {
    nn.Linear: {"weight": True, "bias": False},
    nn.Embedding: {"weight": True},
}


def decay_flags(model: nn.Module) -> dict[str, bool]:
    """{parameter name as `named_parameters` spells it: decayed?} for every parameter of `model`,
    each shared tensor once."""
    flags: dict[str, bool] = {}
    seen: set[int] = set()
    for prefix, module in model.named_modules():
        roles = _roles(module)
        for name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            if name not in roles:
                kind = type(module).__name__
                raise ConfigError(
                    f"parameter {prefix + '.' if prefix else ''}{name} has no weight-decay role: "
                    f"declare it in {kind}.decay = {{{name!r}: True or False}}"
                )
            flags[f"{prefix}.{name}" if prefix else name] = roles[name]
    return flags


def _roles(module: nn.Module) -> Mapping[str, bool]:
    declared = getattr(module, "decay", None)
    if isinstance(declared, Mapping):
        return declared
    return next((roles for cls, roles in TORCH_ROLES.items() if isinstance(module, cls)), {})
