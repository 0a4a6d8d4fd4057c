"""Downstream evaluation: held-out loss and bits per byte, benchmark scoring with lm-eval
conventions, minimal pairs, in-context and long-context probes, suites with a macro average.

The audit runner calls `evaluate(model_or_path, suite)` after training; everything else here is
reachable from a notebook too.
"""

from archaudit.evals import lmeval_tasks  # noqa: F401  (registers the `lm_eval` task format)
from archaudit.evals.heldout import HeldoutLoss, heldout_loss
from archaudit.evals.metrics import Accuracy, wilson
from archaudit.evals.models import ArchauditLM, HFCausalLM, load_scoring_model
from archaudit.evals.scoring import Score, ScoringModel, encode_pair, score_tokens
from archaudit.evals.suites import Suite, SuiteResult, builtin_suites, evaluate, load_suite
from archaudit.evals.tasks import FORMATS, Item, TaskResult, TaskSpec, score_task, task_format

__all__ = [
    "FORMATS",
    "Accuracy",
    "ArchauditLM",
    "HFCausalLM",
    "HeldoutLoss",
    "Item",
    "Score",
    "ScoringModel",
    "Suite",
    "SuiteResult",
    "TaskResult",
    "TaskSpec",
    "builtin_suites",
    "encode_pair",
    "evaluate",
    "heldout_loss",
    "load_scoring_model",
    "load_suite",
    "score_task",
    "score_tokens",
    "task_format",
    "wilson",
]
