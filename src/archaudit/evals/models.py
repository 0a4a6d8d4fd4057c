"""Model adapters: anything that can be scored becomes a `ScoringModel`.

Adapters register by name with a test for the paths they recognise (the tests exclude each
other); `load_scoring_model` takes `kind:path` or detects the kind: a `.gguf` file, a Hugging
Face directory with `config.json`, else an archaudit run or checkpoint directory. Loaded models
are cached per (kind, path, modification time, device): a suite, a benchmark or a test loads the
same model many times.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from archaudit.errors import ArchauditError, DataError, did_you_mean_path
from archaudit.evals.hf_config import check_hf_config
from archaudit.evals.scoring import ContextCache, ScoringModel
from archaudit.registry import Registry

if TYPE_CHECKING:
    from archaudit.model import Transformer


class ArchauditLM:
    """An `archaudit.model.Transformer` (anything with `hidden` and `head`) and its tokenizer."""

    tree_attention = False  # the model's forward takes no attention mask
    ragged_context = False  # nor per-row positions: shared prefixes come at one length

    def __init__(
        self, model: Transformer, tokenizer: Any, *, name: str = "archaudit", device: str = "cpu"
    ) -> None:
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = torch.device(device)
        self.context_length = self.max_length = int(model.cfg.context_length)
        self.vocab_size = int(model.cfg.vocab_size)
        self.prefix_token_id = tokenizer.eos_id

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def logits_at(self, ids: torch.Tensor, index: torch.Tensor, **_: Any) -> torch.Tensor:
        h = self.model.hidden(ids)  # (B, T, d)
        h = h.gather(1, index[..., None].expand(-1, -1, h.shape[-1]))  # (B, K, d)
        return self.model.head(h)  # (B, K, V)

    def decoder(self) -> Callable[[Sequence[int]], torch.Tensor] | None:
        """A fresh incremental decoder: fed token ids (the prompt, then one token at a time),
        it returns the next-token logits (V,) through a KV cache. None when the model cannot
        decode so (`Transformer.supports_kv_cache`)."""
        from archaudit.model.kv_cache import KVCache

        if not self.model.supports_kv_cache():
            return None
        cache = KVCache()

        def step(ids: Sequence[int]) -> torch.Tensor:
            h = self.model.hidden(torch.tensor([list(ids)], device=self.device), cache)
            return self.model.head(h[:, -1:])[0, 0]

        return step

    def context_cache(self) -> ContextCache | None:
        """Scoring from a shared context (`scoring.ContextCache`) through the model's KV
        cache; None when the model cannot decode so (`Transformer.supports_kv_cache`)."""
        from archaudit.model.kv_cache import KVCache

        if not self.model.supports_kv_cache():
            return None

        def logits(
            prefixes: torch.Tensor,
            lengths: torch.Tensor,
            rows: torch.Tensor,
            ids: torch.Tensor,
            index: torch.Tensor,
        ) -> torch.Tensor:
            if bool((lengths != prefixes.shape[1]).any()):
                raise ValueError("ArchauditLM takes no ragged prefixes (ragged_context = False)")
            cache = KVCache()
            self.model.hidden(prefixes.to(self.device), cache)
            cache.share(rows.to(self.device))
            h = self.model.hidden(ids.to(self.device), cache)  # (B, S, d)
            h = h.gather(1, index.to(self.device)[..., None].expand(-1, -1, h.shape[-1]))
            return self.model.head(h)  # (B, K, V)

        return logits

    @functools.cached_property
    def position_limit(self) -> int | None:
        """Longest input the model runs at all: its context for learned absolute positions,
        None when positions extrapolate (RoPE, ALiBi, NoPE, sinusoidal). Found by trying."""
        probe = torch.zeros(1, self.context_length + 1, dtype=torch.long, device=self.device)
        try:
            with torch.no_grad():
                self.model.hidden(probe)
        except (ArchauditError, ValueError, IndexError, RuntimeError):
            return self.context_length
        return None


class HFCausalLM:
    """A Hugging Face causal LM and tokenizer, tokenised as lm-evaluation-harness does."""

    tree_attention: bool
    """A custom 4D attention mask and position ids pass through, so choices share a prefix in
    one row; not for a model with sliding-window layers, whose window such a mask would
    replace (`_windowed`)."""
    ragged_context: bool
    """Shared contexts of several lengths run in one pass (right-padded, a padding mask and
    each row's own position ids): many small items share the two passes of the cache. Not
    for a sliding window, which transformers measures in cache slots, padding included."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, device: str = "cpu") -> None:
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = torch.device(device)
        config = model.config
        # lm-eval's resolve_max_length: the first length attribute the config has, else 2048.
        lengths = (
            getattr(config, a, None) for a in ("n_positions", "max_position_embeddings", "n_ctx")
        )
        self.context_length = self.max_length = next((n for n in lengths if n), 2048)
        self.vocab_size = int(model.get_output_embeddings().out_features)
        self.prefix_token_id = (
            tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        )
        # Rotary models run past their configured length; absolute-position ones cannot.
        rotary = hasattr(config, "rope_theta") or getattr(config, "rope_parameters", None)
        self.position_limit = None if rotary else self.max_length
        self.tree_attention = self.ragged_context = not _windowed(config)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), clean_up_tokenization_spaces=False)

    def decoder(self) -> Callable[[Sequence[int]], torch.Tensor]:
        """Greedy decoding through the model's own KV cache (transformers' `past_key_values`,
        as `generate` keeps it): the prompt once, then one token per call. `greedy_tokens` uses
        it for rotary models, which run any length; without it every step recomputed the whole
        prefix (15.3x slower than `generate` on SmolLM2)."""
        key = self._cache_key
        past: dict[str, Any] = {key: None}

        @torch.no_grad()
        def step(ids: Sequence[int]) -> torch.Tensor:
            ids_ = torch.tensor([list(ids)], device=self.device)
            out = self.model(input_ids=ids_, use_cache=True, logits_to_keep=1, **past)
            past[key] = out[key]
            return out.logits[0, -1]

        return step

    @functools.cached_property
    def _cache_key(self) -> str:
        """transformers 5 names the cache `cache`; 4.x named it `past_key_values`."""
        parameters = inspect.signature(self.model.forward).parameters
        return "cache" if "cache" in parameters else "past_key_values"

    def context_cache(self) -> ContextCache:
        """Scoring from a shared context (`scoring.ContextCache`) through transformers' KV
        cache, as `decoder` keeps it: the prefixes in one pass, each one's keys and values
        selected for its rows, then the rows in a second pass that continues them. No custom
        mask: the rows are right-padded and attend causally, which transformers' fast attention
        runs (the tree's 4D mask cost the export of a byte-level run 0.78x lm-eval's speed on
        held-out PIQA and TruthfulQA, issue 57)."""
        key = self._cache_key

        @torch.no_grad()
        def logits(
            prefixes: torch.Tensor,
            lengths: torch.Tensor,
            rows: torch.Tensor,
            ids: torch.Tensor,
            index: torch.Tensor,
        ) -> torch.Tensor:
            owner = torch.arange(len(rows)).repeat_interleave(rows)  # each row's prefix
            padded, rest = _ragged_inputs(prefixes, lengths, owner, ids.shape[1])
            out = self.model(
                input_ids=prefixes.to(self.device),
                use_cache=True,
                logits_to_keep=1,
                **{k: v.to(self.device) for k, v in padded.items()},
            )
            cache = out[key]
            cache.batch_select_indices(owner.to(self.device))
            keep = torch.unique(index).to(self.device)  # (P,) sorted
            kept = self.model(
                input_ids=ids.to(self.device),
                use_cache=True,
                logits_to_keep=keep,
                **{key: cache},
                **{k: v.to(self.device) for k, v in rest.items()},
            ).logits  # (B, P, V)
            return _kept_at(kept, keep, index.to(self.device))

        return logits

    def logits_at(
        self,
        ids: torch.Tensor,
        index: torch.Tensor,
        *,
        positions: torch.Tensor | None = None,
        allowed: torch.Tensor | None = None,
    ) -> torch.Tensor:
        # The model's own forward (so any logit soft-capping or scaling applies), with the
        # output head run only at the positions some row needs.
        mask = None
        if allowed is not None:  # a custom 4D additive mask, which transformers passes through
            dtype = next(self.model.parameters()).dtype
            mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
            mask.masked_fill_(~allowed, torch.finfo(dtype).min)
            mask = mask[:, None]  # (B, 1, T, T)
        keep = torch.unique(index)  # (P,) sorted
        logits = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            logits_to_keep=keep,
            use_cache=False,
        ).logits  # (B, P, V)
        return _kept_at(logits, keep, index)


def _ragged_inputs(
    prefixes: torch.Tensor, lengths: torch.Tensor, owner: torch.Tensor, width: int
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The extra inputs of a ragged batch's two passes: the prefixes' padding mask, then each
    row's mask over its prefix and itself and its positions after its own prefix. None when
    every prefix fills its row: the plain causal passes, as before ragged batches."""
    P = prefixes.shape[1]
    if bool((lengths == P).all()):
        return {}, {}
    mask = (torch.arange(P)[None, :] < lengths[:, None]).long()  # (G, P)
    rows = torch.cat((mask[owner], torch.ones(len(owner), width, dtype=torch.long)), dim=1)
    positions = lengths[owner][:, None] + torch.arange(width)[None, :]  # (B, S)
    return {"attention_mask": mask}, {"attention_mask": rows, "position_ids": positions}


def _windowed(config: Any) -> bool:
    """Some layer attends within a sliding window: per layer (`layer_types`, transformers 5),
    or everywhere (`sliding_window` without `layer_types`, Mistral's form)."""
    kinds = getattr(config, "layer_types", None)
    if kinds:
        return "sliding_attention" in kinds
    window = getattr(config, "sliding_window", None)
    return bool(window) and bool(getattr(config, "use_sliding_window", True))


def _kept_at(logits: torch.Tensor, keep: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Logits (B, P, V) kept at the sorted positions `keep` → at each row's `index` (B, K)."""
    if index.shape[1] == len(keep) and bool((index == keep).all()):
        return logits  # every row reads all kept positions (a held-out window): no copy
    column = torch.searchsorted(keep, index)  # (B, K)
    return logits.gather(1, column[..., None].expand(-1, -1, logits.shape[-1]))


# ---------------------------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class ModelAdapter:
    name: str
    accepts: Callable[[Path], bool]
    load: Callable[[Path, str], ScoringModel]


ADAPTERS: Registry[ModelAdapter] = Registry("model adapter")


def model_adapter(name: str, *, accepts: Callable[[Path], bool]) -> Callable[[Callable], Callable]:
    """Register `load(path, device) -> ScoringModel` for the paths `accepts` recognises.
    Detection tries adapters in registration order."""

    def register(load: Callable[[Path, str], ScoringModel]) -> Callable[[Path, str], ScoringModel]:
        ADAPTERS.register(name)(ModelAdapter(name, accepts, load))
        return load

    return register


def _transformers() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download: models are local files
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise DataError(
            "loading Hugging Face or GGUF models needs the `hf` extra: pip install 'archaudit[hf]'"
        ) from None
    return transformers


def _load_hf(directory: Path, device: str, name: str, **kwargs: Any) -> HFCausalLM:
    """A Hugging Face model checked before use: a folder transformers cannot load (a bogus
    model_type, a truncated weights file, a garbage tokenizer.json) or whose config.json and
    weights disagree (`check_loading_info`) is a one-line refusal naming it."""
    transformers = _transformers()
    common = dict(local_files_only=True, **kwargs)
    source = directory / kwargs.get("gguf_file", "")
    if "gguf_file" not in kwargs:
        check_hf_config(directory)  # its sizes, before transformers allocates them
    # transformers' GGUF conversion draws a raw tqdm bar that its logging switch cannot silence.
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(directory, **common)
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                directory,
                dtype=torch.float32,
                output_loading_info=True,
                ignore_mismatched_sizes=True,  # reported by check_loading_info, in one line
                **common,
            )
        except ArchauditError:
            raise
        except Exception as err:  # a foreign folder fails anywhere inside transformers
            first = (str(err).splitlines() or [""])[0][:200]
            raise DataError(
                f"{source}: transformers cannot load it as a causal LM ({type(err).__name__}: "
                f"{first})"
            ) from None
    check_loading_info(source, info)
    return HFCausalLM(model, tokenizer, name=name, device=device)


LOADING_PROBLEMS = (
    ("missing_keys", "config.json has places no weight fills (they would run at random init)"),
    ("mismatched_keys", "weights do not have the shapes config.json gives"),
    ("unexpected_keys", "weights are not used by the model config.json describes"),
)


def check_loading_info(source: Path, info: dict[str, Any]) -> None:
    """Every weight present, used and of its config's shape, else a one-line refusal."""
    for key, problem in LOADING_PROBLEMS:
        found = sorted(str(k[0] if isinstance(k, tuple) else k) for k in info.get(key) or ())
        if found:
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            raise DataError(
                f"{source}: the {problem}: {found[0]}{more}; the folder's config.json and "
                "weights disagree"
            )


@model_adapter("gguf", accepts=lambda p: p.is_file() and p.suffix == ".gguf")
def load_gguf(path: Path, device: str) -> ScoringModel:
    """A GGUF file, dequantised to float32 by transformers (needs `gguf` and `accelerate`)."""
    return _load_hf(path.parent, device, path.name, gguf_file=path.name)


@model_adapter("hf", accepts=lambda p: (p / "config.json").is_file())
def load_hf(path: Path, device: str) -> ScoringModel:
    """A local Hugging Face causal-LM directory (config.json, weights, tokenizer)."""
    return _load_hf(path, device, path.name)


@model_adapter("archaudit", accepts=lambda p: p.is_dir() and not (p / "config.json").is_file())
def load_archaudit(path: Path, device: str) -> ScoringModel:
    """An archaudit run directory or checkpoint directory."""
    from archaudit.model.load import load_model  # lazily: tokenizers and safetensors on demand

    model, tokenizer = load_model(path)
    return ArchauditLM(model, tokenizer, name=path.name, device=device)


def load_scoring_model(
    model: str | Path | ScoringModel | tuple[Transformer, Any], *, device: str = "cpu"
) -> ScoringModel:
    """A scoring model from a path (`kind:path` or detected), a (Transformer, tokenizer) pair,
    or a ready `ScoringModel`."""
    if isinstance(model, tuple):
        return ArchauditLM(*model, device=device)
    if not isinstance(model, str | Path):
        return model
    kind, _, rest = str(model).partition(":")
    if rest and kind in ADAPTERS:
        path = Path(rest)
    else:
        path, kind = Path(model), ""
    if not path.exists():
        raise DataError(
            f"model {str(path)!r} does not exist{did_you_mean_path(path)}; pass a run or "
            "checkpoint directory, "
            "a Hugging Face model directory or a .gguf file"
        )
    if not kind:
        kind = next((name for name, a in ADAPTERS.items() if a.accepts(path)), "")
    if not kind:
        raise DataError(
            f"model {str(path)!r}: not a .gguf file, a Hugging Face directory (config.json) or "
            f"an archaudit run directory; name the kind explicitly as KIND:PATH with KIND one of "
            f"{', '.join(ADAPTERS)}"
        )
    resolved = path.resolve()
    return _cached_load(kind, resolved, resolved.stat().st_mtime_ns, device)


@functools.lru_cache(maxsize=2)
def _cached_load(kind: str, path: Path, mtime: int, device: str) -> ScoringModel:
    return ADAPTERS.get(kind).load(path, device)
