"""`export_hf`: a run's newest checkpoint as a Hugging Face directory that
`AutoModelForCausalLM.from_pretrained(DIR)` loads with no custom code (the `hf` extra).

The stock class comes from `stock.pick`; transformers itself builds and saves the model, so
the config's field names and the weight layout are the installed version's own. The export is
written in a temporary sibling of the output folder, read back from disk and its logits compared
with ours on a probe sequence (float32); only then is it renamed into place, so a failed check,
a full disk or a kill leaves no folder `eval` would accept. The number lands in `export.json`,
which also lists the files written: it marks the folder as an export that a later `export hf
--out` may replace (`files.publish_folder`); any other non-empty folder is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from archaudit.config import ModelConfig
from archaudit.errors import ArchauditError, DataError
from archaudit.export.stock import StockClass, pick
from archaudit.export.tokenizer import save_tokenizer, special_token_id
from archaudit.files import atomic_write_text, check_output_folder, plain_modes, publish_folder
from archaudit.model.load import load_model
from archaudit.rundir import CHECKPOINTS, run_dir_of

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
    class computes, naming the slot that blocks it, and an `out` it does not own."""
    transformers = _transformers()
    transformers.utils.logging.disable_progress_bar()
    out = Path(out)
    _refuse_inside_checkpoints(Path(run), out)
    check_output_folder(out, "--out", EXPORT_RECORD)  # before the work; publishing checks again
    model, tokenizer = load_model(run)
    stock = pick(model.cfg)

    def build(tmp: Path) -> ExportResult:
        special = special_token_id(tokenizer)
        hf = _stock_model(transformers, stock, model.cfg, model.state_dict(), special)
        with _os_errors(out):
            hf.save_pretrained(tmp)
            save_tokenizer(tokenizer, tmp, model.cfg.context_length)
        diff, n = _logit_diff(model, tmp, transformers)
        result = ExportResult(str(out), str(run), stock.model_type, stock.architecture, diff, n)
        if not diff <= TOLERANCE:
            raise ArchauditError(
                f"{out}: the export's logits differ from the run's by {diff:.3g} > {TOLERANCE} "
                f"({stock.architecture}); nothing was written; please report this configuration"
            )
        plain_modes(tmp)  # safetensors writes model.safetensors 0600
        files = sorted([p.name for p in tmp.iterdir()] + [EXPORT_RECORD])
        atomic_write_text(
            tmp / EXPORT_RECORD, json.dumps(_record(result, out, files), indent=2) + "\n"
        )
        return result

    return publish_folder(out, build, flag="--out", marker=EXPORT_RECORD)


@contextlib.contextmanager
def _os_errors(out: Path) -> Iterator[None]:
    """safetensors reports a failed write (a full disk) as its own error type, "... (os error
    28)": raise it as the OSError it is, naming the output, so the CLI prints one line."""
    try:
        yield
    except Exception as err:
        code = re.search(r"\(os error (\d+)\)", str(err))
        if isinstance(err, OSError) or code is None:
            raise
        raise OSError(int(code[1]), os.strerror(int(code[1])), str(out)) from None


def _record(result: ExportResult, out: Path, files: list[str]) -> dict[str, Any]:
    """What `export.json` says: the run as a path relative to the export folder (no user's home
    or machine in it, and still right when both move together), the measured agreement and the
    files written."""
    run = os.path.relpath(Path(result.run).resolve(), out.resolve())
    kept = {k: v for k, v in asdict(result).items() if k != "out"}  # the folder it sits in
    return kept | {"run": run, "files": files}


def _refuse_inside_checkpoints(run: Path, out: Path) -> None:
    """An export inside the run's checkpoint folder would pass for a checkpoint (or be one)."""
    folder = run_dir_of(run).resolve() / CHECKPOINTS
    if out.resolve().is_relative_to(folder):
        raise DataError(
            f"{out} is inside the run's checkpoint folder {folder}; give --out a folder outside it"
        )


def _stock_model(
    transformers: Any, stock: StockClass, cfg: ModelConfig, state: dict, special: int
) -> Any:
    """The stock model built by transformers from the class's config, holding our weights;
    `special` is its BOS, EOS and pad token (lm-eval's `hf` model needs all three)."""
    config = transformers.AutoConfig.for_model(
        stock.model_type,
        architectures=[stock.architecture],
        bos_token_id=special,
        eos_token_id=special,
        pad_token_id=special,
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
    generation = hf.generation_config
    generation.bos_token_id = generation.eos_token_id = generation.pad_token_id = special
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
