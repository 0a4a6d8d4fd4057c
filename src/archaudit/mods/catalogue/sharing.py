"""Shared layers: fewer distinct blocks than layers (`model.sharing`).

"Fewer parameters, same compute": cross-layer sharing keeps every layer's computation and
stores one block for many; depth recurrence keeps the parameters and runs them twice. Total and
active parameters part ways here in the other direction from MoE. Narang et al. 2021
(arXiv 2102.11972) found sharing hurt; whether that holds across scales is what R7 asks.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, ReferenceCheck, modification

CHECK = ReferenceCheck(
    variant="one module per distinct block, run once per layer that uses it",
    reference="the unshared model with every layer's block a copy of the shared weights "
    "(outputs equal; a shared gradient equals the sum of the copies')",
    max_abs_diff=1e-12,
    test="tests/mods/test_mods_formulas_moe.py",
)


@modification(
    "albert_sharing",
    family="sharing",
    duties=("cross_scale",),
    params=params.shared_blocks(lambda cfg: 1),
    active_params=params.none,
    check=CHECK,
    citation=Citation("Lan et al.", 2020, "ALBERT, ICLR, arXiv 1909.11942"),
    description="cross-layer sharing: all L layers run one block (ALBERT's all-shared)",
    formula="x_l = Block_θ(x_{l−1}) for every l: one θ, L applications",
)
def albert_sharing(cfg: ModelConfig) -> dict[str, Any]:
    return {"sharing.blocks": 1, "sharing.order": "cycle"}


@modification(
    "repeat_block",
    family="sharing",
    duties=("cross_scale",),
    params=params.shared_blocks(lambda cfg: -(-cfg.n_layers // 2)),
    active_params=params.none,
    check=CHECK,
    citation=Citation("Liu et al.", 2024, "MobileLLM, ICML, arXiv 2402.14905"),
    description="block-wise repeat: ⌈L/2⌉ distinct blocks, each run twice in a row",
    formula="x ← Block_i(Block_i(x)) for i = 1..L/2, layer l runs block ⌊l·U/L⌋, U = ⌈L/2⌉ "
    "(MobileLLM's immediate block-wise sharing)",
)
def repeat_block(cfg: ModelConfig) -> dict[str, Any]:
    return {"sharing.blocks": -(-cfg.n_layers // 2), "sharing.order": "immediate"}


@modification(
    "depth_recurrence",
    family="sharing",
    duties=("cross_scale",),
    active_params=params.recurrent_depth_active,
    check=CHECK,
    citation=Citation("Dehghani et al.", 2019, "Universal Transformers, ICLR, arXiv 1807.03819"),
    description="depth recurrence: the L blocks run as a loop twice (2L layers, same parameters)",
    formula="x ← Block_L(…Block_1(x)…) applied twice: 2L layers over L distinct blocks",
)
def depth_recurrence(cfg: ModelConfig) -> dict[str, Any]:
    return {"n_layers": 2 * cfg.n_layers, "sharing.blocks": cfg.n_layers, "sharing.order": "cycle"}
