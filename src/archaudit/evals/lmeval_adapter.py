"""An lm-evaluation-harness model `archaudit` backed by this package's scorer (the `lmeval` extra).

lm-eval builds the prompts and tokenises the (context, continuation) pairs itself
(`TemplateLM._encode_pair`); this adapter only scores token ids, so running a task both ways
checks our prompt building and metrics against lm-eval's. The harness finds the model once this
module is imported; the module's command line does that and then hands over to lm-eval's:

    python -m archaudit.evals.lmeval_adapter --model archaudit \\
        --model_args path=runs/a/baseline/tiny/seed-0 --tasks arc_easy --limit 100

A task file written by `write_task_yaml` also works with lm-eval's stock command: its
`process_docs: !function archaudit_hook.process_docs` line makes lm-eval import the hook module
written beside it, which imports this one, and lm-eval reads task files before it looks the
model up:

    lm_eval --model archaudit --model_args path=RUN --tasks tasks/toy_mc.yaml
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import lm_eval.models  # noqa: F401  (lm-eval's own models register lazily on this import)
import torch
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model

from archaudit.evals.models import load_scoring_model
from archaudit.evals.scoring import ScoringModel, rolling_pairs, score_tokens
from archaudit.files import atomic_write_text


@register_model("archaudit")
class ArchauditHarnessLM(TemplateLM):
    """model_args: `path` (any model `archaudit eval` accepts, or `pretrained`), `device`,
    `batch_size`. A ready `ScoringModel` may be passed as `model` from Python."""

    def __init__(
        self,
        path: str | None = None,
        pretrained: str | None = None,
        device: str | None = None,
        batch_size: int | str = 32,
        model: ScoringModel | None = None,
        **_: Any,
    ) -> None:
        super().__init__()
        if not device or (device.startswith("cuda") and not torch.cuda.is_available()):
            # lm-eval's own default is cuda:0, also on a machine without CUDA.
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.scorer = model or load_scoring_model(path or pretrained or "", device=device)
        self._batch_size = int(batch_size) if str(batch_size).isdigit() else 32

    @classmethod
    def create_from_arg_obj(
        cls, arg_dict: dict[str, Any], additional_config: dict | None = None
    ) -> ArchauditHarnessLM:
        """lm-eval passes its own `--batch_size` (default 1) and `--device` beside
        `--model_args`; a key given in `--model_args` wins instead of colliding."""
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None}
        return cls(**{**extra, **arg_dict})

    @classmethod
    def create_from_arg_string(
        cls, arg_string: str, additional_config: dict | None = None
    ) -> ArchauditHarnessLM:
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    @property
    def eot_token_id(self) -> int:
        prefix = self.scorer.prefix_token_id
        return 0 if prefix is None else prefix

    @property
    def max_length(self) -> int:
        return self.scorer.max_length

    def tok_encode(
        self, string: str, add_special_tokens: bool | None = None, **_: Any
    ) -> list[int]:
        return self.scorer.encode(string)

    def tok_decode(self, tokens: list[int], **_: Any) -> str:
        return self.scorer.decode(tokens)

    def _loglikelihood_tokens(
        self, requests: list, disable_tqdm: bool = False, **_: Any
    ) -> list[tuple[float, bool]]:
        """Every loglikelihood request of a task arrives here at once (lm-eval's
        `TemplateLM.loglikelihood`), so the choices of a question share one cached pass over
        their context (`score_tokens`), where `hf` runs each (context, choice) in full and
        reuses logits only for one-token choices (its `group_by="contexts"`)."""
        pairs = [(list(context), list(continuation)) for _, context, continuation in requests]
        scores = score_tokens(
            self.scorer, pairs, batch_size=self._batch_size, show_progress=not disable_tqdm
        )
        return [(s.logprob, s.greedy) for s in scores]

    def loglikelihood_rolling(self, requests: list, disable_tqdm: bool = False) -> list[float]:
        totals = []
        for (text,) in (r.args for r in requests):
            pairs = rolling_pairs(
                self.scorer.encode(text), self.scorer.prefix_token_id, self.max_length
            )
            scores = score_tokens(
                self.scorer, pairs, batch_size=self._batch_size, show_progress=False
            )
            totals.append(sum(s.logprob for s in scores))
        return totals

    def generate_until(self, requests: list, disable_tqdm: bool = False) -> list[str]:
        """Greedy decoding until a stop string or `max_gen_toks` tokens (no sampling)."""
        outputs = []
        for context, gen_kwargs in (r.args for r in requests):
            until = gen_kwargs.get("until", [])
            until = [until] if isinstance(until, str) else list(until)
            budget = int(gen_kwargs.get("max_gen_toks", 256))
            ids = self.scorer.encode(context)[-(self.max_length - budget) :]
            generated: list[int] = []
            text = ""
            for _ in range(budget):
                window = torch.tensor(
                    [(ids + generated)[-self.max_length :]], device=self.scorer.device
                )
                last = torch.tensor([[window.shape[1] - 1]], device=self.scorer.device)
                with torch.no_grad():
                    generated.append(int(self.scorer.logits_at(window, last)[0, 0].argmax()))
                text = self.scorer.decode(generated)
                if any(stop in text for stop in until):
                    break
            for stop in until:
                text = text.split(stop)[0]
            outputs.append(text)
        return outputs


TASK_YAML = """\
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{query}}}}{suffix}"
doc_to_choice: choices
doc_to_target: gold
process_docs: !function {hook}.process_docs
metric_list:
  - metric: acc
  - metric: acc_norm
"""


HOOK = "archaudit_hook"
HOOK_SOURCE = """\
# Written by archaudit. lm-eval imports this module for the task files beside it (their
# `!function` line); importing the adapter registers the `archaudit` model for
# `lm_eval --model archaudit`.
from archaudit.evals.lmeval_adapter import process_docs

__all__ = ["process_docs"]
"""


def process_docs(dataset: Any) -> Any:
    """The task's documents unchanged: the hook exists for the import it causes."""
    return dataset


def write_task_yaml(
    folder: str | Path, name: str, data: str | Path, prompt_suffix: str = ""
) -> Path:
    """Write an lm-eval task over a local `multiple_choice` JSONL file ({query, choices, gold}),
    prompted as `archaudit` prompts it, and its hook module; pass the YAML to lm-eval's
    `--tasks`, or the folder as its `--include_path`."""
    suffix = json.dumps(prompt_suffix)[1:-1]  # escaped for a double-quoted YAML string
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    text = TASK_YAML.format(name=name, data=Path(data).resolve(), suffix=suffix, hook=HOOK)
    atomic_write_text(folder / f"{HOOK}.py", HOOK_SOURCE)
    atomic_write_text(path, text)
    return path


def run_local_task(
    model: Any, task: str, folder: str | Path, *, limit: int | None = None, **kwargs: Any
) -> dict:
    """lm-eval's `simple_evaluate` on a task defined in `folder` only, offline, samples logged.
    `model` is an `LM` instance or a registered name (then pass `model_args`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    return simple_evaluate(
        model=model,
        tasks=[task],
        task_manager=TaskManager(include_path=str(folder), include_defaults=False),
        limit=limit,
        log_samples=True,
        **kwargs,
    )


def main() -> None:
    """lm-eval's command line, with the `archaudit` model registered."""
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


if __name__ == "__main__":
    main()
