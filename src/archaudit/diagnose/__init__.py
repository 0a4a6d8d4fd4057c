"""Diagnostics on any checkpoint or local Hugging Face / GGUF model: the LM-head gradient
bottleneck, attention sinks and focus, layer and head pruning, test-time scaling curves.

    from archaudit.diagnose import diagnose_bottleneck
    result, written = diagnose_bottleneck("runs/a/baseline/d6/seed-0", "input.txt")
    print(result.suppressed_fraction.mean, written.json)

Nothing here trains a model except the optional recovery fine-tune of a pruned one.
"""

from archaudit.diagnose.access import ModelView, view_of
from archaudit.diagnose.attention import AttentionResult, attention_focus
from archaudit.diagnose.bottleneck import BottleneckResult, column_basis, gradient_bottleneck
from archaudit.diagnose.focus import FocusResult, RunFocus, focus_across_arms
from archaudit.diagnose.heads import HeadsResult, head_importance
from archaudit.diagnose.pruning import PRUNE_METHODS, choose_layers, layer_scores, pruned_view
from archaudit.diagnose.reasoning import reasoning_corpus, reasoning_items
from archaudit.diagnose.run import (
    PruneResult,
    TTSOptions,
    diagnose_attention,
    diagnose_bottleneck,
    diagnose_focus,
    diagnose_heads,
    diagnose_prune,
)
from archaudit.diagnose.tts import TTSCurves, tts_curves

__all__ = [
    "PRUNE_METHODS",
    "AttentionResult",
    "BottleneckResult",
    "FocusResult",
    "HeadsResult",
    "ModelView",
    "PruneResult",
    "RunFocus",
    "TTSCurves",
    "TTSOptions",
    "attention_focus",
    "choose_layers",
    "column_basis",
    "diagnose_attention",
    "diagnose_bottleneck",
    "diagnose_focus",
    "diagnose_heads",
    "diagnose_prune",
    "focus_across_arms",
    "gradient_bottleneck",
    "head_importance",
    "layer_scores",
    "pruned_view",
    "reasoning_corpus",
    "reasoning_items",
    "tts_curves",
    "view_of",
]
