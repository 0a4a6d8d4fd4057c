"""`export_hf`: a run's newest checkpoint as a Hugging Face directory that
`AutoModelForCausalLM.from_pretrained(DIR)` loads with no custom code (the `hf` extra).

The stock class comes from `stock.pick`; transformers itself builds and saves the model, so
the config's field names and the weight layout are the installed version's own. Before it
returns, the export is read back from disk and its logits compared with ours on a probe
sequence (float32): the number lands in `export.json` and in the result.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from archaudit.config import ModelConfig
from archaudit.errors import ArchauditError, DataError
from archaudit.export.stock import StockClass, pick
from archaudit.export.tokenizer import save_tokenizer
from archaudit.model.load import load_model

EXPORT_RECORD = "export.json"
TOLERANCE = 1e-4
"""Largest |Δ logit| (float32) an export may differ from the run by."""


@dataclass(frozen=True)
class ExportResult:
    out: str
    run: str
    model_type: str
    architecture: str
    max_abs_logit_diff: float
    """Measured on a probe of `probe_tokens` tokens after reading the export back."""
    probe_tokens: int


def export_hf(run: str | Path, out: str | Path) -> ExportResult:
    """Export `run` (a run or checkpoint directory) to `out`; refuses a configuration no stock
    class computes, naming the slot that blocks it."""
    transformers = _transformers()
    transformers.utils.logging.disable_progress_bar()
    model, tokenizer = load_model(run)
    cfg = model.cfg
    stock = pick(cfg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    hf = _stock_model(transformers, stock, cfg, model.state_dict(), tokenizer.eos_id)
    hf.save_pretrained(out)
    save_tokenizer(tokenizer, out, cfg.context_length)
    diff, n = _logit_diff(model, out, transformers)
    result = ExportResult(str(out), str(run), stock.model_type, stock.architecture, diff, n)
    (out / EXPORT_RECORD).write_text(json.dumps(asdict(result), indent=2) + "\n")
    if not diff <= TOLERANCE:
        raise ArchauditError(
            f"{out}: the export's logits differ from the run's by {diff:.3g} > {TOLERANCE} "
            f"({stock.architecture}); please report this configuration"
        )
    return result


def _stock_model(
    transformers: Any, stock: StockClass, cfg: ModelConfig, state: dict, eos_id: int | None
) -> Any:
    """The stock model built by transformers from the class's config, holding our weights."""
    config = transformers.AutoConfig.for_model(
        stock.model_type,
        architectures=[stock.architecture],
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=None,
        **stock.fields(cfg),
    )
    hf = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    weights = stock.weights(cfg, state)
    missing, unexpected = hf.load_state_dict(weights, strict=False)
    tied = {"lm_head.weight"} if cfg.head.tie_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ArchauditError(
            f"{stock.architecture}: weights without a place {sorted(unexpected)[:3]}, places "
            f"without a weight {sorted(set(missing) - tied)[:3]}; please report this configuration"
        )
    hf.generation_config.bos_token_id, hf.generation_config.eos_token_id = None, eos_id
    return hf


@torch.no_grad()
def _logit_diff(model: Any, out: Path, transformers: Any) -> tuple[float, int]:
    """max |logits(ours) − logits(export)| on a seeded probe of the model's context length."""
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        out, dtype=torch.float32, local_files_only=True
    ).eval()
    cfg = model.cfg
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (2, cfg.context_length), generator=generator)
    ours = model.float().eval()(ids)
    theirs = loaded(input_ids=ids, use_cache=False).logits
    return float((ours - theirs).abs().max()), int(ids.numel())


def _transformers() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise DataError("export needs the `hf` extra: pip install 'archaudit[hf]'") from None
    return transformers
