"""Recipe: modifications of the training recipe, not the model.

An arm with one of these is trained under another recipe hash; R1 then requires it to be
marked `tuned`, and every report labels it so.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods.registry import Citation, modification


def _model_unchanged(cfg: ModelConfig) -> dict[str, Any]:
    return {}


modification(
    "long_warmup",
    family="recipe",
    recipe={"warmup_frac": 0.2},
    citation=Citation("Liu et al.", 2020, "ICLR, arXiv 1908.03265"),
    description="linear warmup over 20% of the steps",
    formula="lr_t = lr·t/(0.2·S) for t < 0.2·S, then the shared cosine decay",
)(_model_unchanged)

modification(
    "no_warmup",
    family="recipe",
    recipe={"warmup_frac": 0.0},
    citation=Citation("Xiong et al.", 2020, "ICML, arXiv 2002.04745"),
    description="no warmup: the peak learning rate from step 0 (Pre-LN tolerates it)",
    formula="lr_t = peak·cosine(t) from t = 0",
)(_model_unchanged)
