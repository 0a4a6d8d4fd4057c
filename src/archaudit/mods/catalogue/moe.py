"""Mixture of experts: the dense MLP becomes E routed SwiGLU experts (`model.mlp.name = "moe"`).

Every entry keeps a token's *active* MLP parameters equal to the dense MLP's (each expert is
H/(k + shared) wide), so an arm differs from the baseline in total parameters, not in compute;
an audit says which of the two it matches arms on (`recipe.match_params`). Each claims the whole
`model.moe` table, so two MoE entries conflict on the first option they set differently.

Duties: MoE gains in perplexity shrink downstream and in fine-tuning (Artetxe et al. 2021,
arXiv 2112.10684; ST-MoE), so R6 applies; router instabilities grow with scale (ST-MoE), so R7.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from archaudit.config import ModelConfig, MoEConfig, replace_paths
from archaudit.mods import params
from archaudit.mods.registry import Citation, DeltaFunction, ReferenceCheck, modification

DUTIES = ("downstream", "cross_scale")
TEST = "tests/mods/test_mods_formulas_hf.py"


def _claims(options: MoEConfig) -> DeltaFunction:
    def delta(cfg: ModelConfig) -> dict[str, Any]:
        table = {f"moe.{k}": v for k, v in dataclasses.asdict(options).items()}
        return {"mlp.name": "moe", **table}

    return delta


def _register(name: str, options: MoEConfig, **entry: Any) -> None:
    delta = _claims(options)

    def arm(cfg: ModelConfig) -> ModelConfig:
        return replace_paths(cfg, delta(cfg), section="model")

    modification(
        name,
        family="moe",
        duties=DUTIES,
        params=params.moe(arm, active=False),
        active_params=params.moe(arm, active=True),
        **entry,
    )(delta)


_register(
    "switch_moe",
    MoEConfig(experts=8, top_k=1, normalize_top_k=False, capacity_factor=1.25, balance_loss=0.01),
    citation=Citation(
        "Fedus, Zoph & Shazeer", 2021, "Switch Transformers, JMLR 2022, arXiv 2101.03961"
    ),
    description="Switch MoE: 8 experts, top-1 routing, capacity factor 1.25, balance loss 0.01",
    formula=(
        "y = p_e(x)·E_e(x), e = argmax p, p = softmax(x·W_r); over capacity ⌈1.25·N/E⌉ a "
        "token is dropped (keeps its residual); loss += 0.01·E·Σ_e f_e·P_e"
    ),
    check=ReferenceCheck(
        variant="top-1, gate = the unnormalised router probability; dropping off (capacity 64)",
        reference="transformers' OlmoeSparseMoeBlock (norm_topk_prob=False, k=1) and "
        "SwitchTransformers' load_balancing_loss_func / router_z_loss_func",
        max_abs_diff=1e-12,
        test=TEST,
    ),
)

_register(
    "mixtral_moe",
    MoEConfig(experts=8, top_k=2, normalize_top_k=True, balance_loss=0.01),
    citation=Citation("Jiang et al.", 2024, "Mixtral of Experts, arXiv 2401.04088"),
    description="Mixtral-style MoE: 8 experts of half width, top-2, renormalised gates, dropless",
    formula="y = Σ_{e ∈ top2} (p_e/Σ_top2 p)·E_e(x); loss += 0.01·E·Σ_e f_e·P_e, Σ_e f_e = 2",
    check=ReferenceCheck(
        variant="Mixtral's routing (softmax, top-2, renormalised), dropless",
        reference="transformers' MixtralSparseMoeBlock and Mixtral's load_balancing_loss_func",
        max_abs_diff=1e-12,
        test=TEST,
    ),
)

_register(
    "st_moe",
    MoEConfig(
        experts=8,
        top_k=2,
        normalize_top_k=True,
        capacity_factor=1.25,
        balance_loss=0.01,
        router_z_loss=1e-3,
    ),
    citation=Citation("Zoph et al.", 2022, "ST-MoE, arXiv 2202.08906"),
    description="ST-MoE: top-2 with capacity 1.25 and the router z-loss (1e-3) for stability",
    formula=(
        "top-2 as Mixtral, capacity ⌈1.25·2N/E⌉ (first choices first); loss += "
        "0.01·E·Σ_e f_e·P_e + 1e-3·mean_x (log Σ_e e^{z_e})²"
    ),
    check=ReferenceCheck(
        variant="top-2, renormalised; dropping off (capacity 64) for the comparison",
        reference="transformers' MixtralSparseMoeBlock; z-loss: SwitchTransformers' "
        "router_z_loss_func",
        max_abs_diff=1e-12,
        test=TEST,
    ),
)

_register(
    "deepseek_moe",
    MoEConfig(experts=16, top_k=3, shared_experts=1, normalize_top_k=False, balance_loss=0.01),
    citation=Citation("Dai et al.", 2024, "DeepSeekMoE, ACL, arXiv 2401.06066"),
    description="DeepSeekMoE: 16 fine-grained experts (H/4 wide), top-3, plus 1 shared expert",
    formula="y = S(x) + Σ_{e ∈ top3} p_e·E_e(x), p = softmax(x·W_r) (not renormalised)",
    check=ReferenceCheck(
        variant="greedy top-k, routed scaling factor 1, one shared expert",
        reference="transformers' DeepseekV2Moe (topk_method='greedy')",
        max_abs_diff=1e-12,
        test=TEST,
    ),
)

_register(
    "qwen_moe",
    MoEConfig(
        experts=8,
        top_k=2,
        shared_experts=1,
        shared_gate=True,
        normalize_top_k=False,
        balance_loss=0.01,
    ),
    citation=Citation("Yang et al. (Qwen Team)", 2024, "Qwen2 Technical Report, arXiv 2407.10671"),
    description="Qwen2-MoE: 8 experts, top-2, plus a shared expert scaled by a sigmoid gate",
    formula="y = σ(x·w_s)·S(x) + Σ_{e ∈ top2} p_e·E_e(x)",
    check=ReferenceCheck(
        variant="norm_topk_prob=False, one shared expert with its gate",
        reference="transformers' Qwen2MoeSparseMoeBlock",
        max_abs_diff=1e-12,
        test=TEST,
    ),
)
