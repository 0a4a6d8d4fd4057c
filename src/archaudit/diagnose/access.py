"""One view of any loaded model for the diagnostics, reached from outside through forward hooks.

`view_of` wraps the scoring models `archaudit eval` loads (an archaudit Transformer, or a Hugging
Face causal LM, which is also what a GGUF file becomes) in a `ModelView`: full logits, the
unembedding, each layer's input and output, attention maps, the per-head input of each attention
output projection, and a copy with its layers removed or replaced. The model code itself carries
no diagnostic code.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from archaudit.errors import DataError
from archaudit.evals.models import ArchauditLM, HFCausalLM, load_scoring_model

if TYPE_CHECKING:
    from archaudit.model import Transformer

LayerPlan = Sequence[int | nn.Module]
"""A new layer stack: indices of the model's own layers (copied) or ready modules, in order."""


def _first_tensor(value: Any) -> torch.Tensor:
    return value[0] if isinstance(value, tuple | list) else value


@contextlib.contextmanager
def _hooks(handles: list[torch.utils.hooks.RemovableHandle]) -> Iterator[None]:
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _linear(name: str, module: nn.Module, path: str) -> nn.Linear:
    """The linear map at `path` inside `module`, which the diagnostics read weights from."""
    found = module.get_submodule(path)
    if not isinstance(found, nn.Linear):
        raise DataError(f"{name}: {path} is a {type(found).__name__}, not a linear map")
    return found


class ModelView:
    """What every diagnostic needs from a model; subclasses say where the parts live."""

    scoring: ArchauditLM | HFCausalLM
    model: nn.Module

    def __init__(self, scoring: ArchauditLM | HFCausalLM) -> None:
        self.scoring = scoring
        self.model = scoring.model
        self.name: str = scoring.name
        self.device = scoring.device

    # -- parts, per model family ------------------------------------------------------------
    def layers(self) -> list[nn.Module]:
        raise NotImplementedError

    def layer_ends(self, layer: nn.Module) -> tuple[nn.Module, nn.Module]:
        """The modules whose input and output are the layer's input and output stream."""
        return layer, layer

    def unembedding(self) -> torch.Tensor:
        """W (V×D): logits = W·h."""
        raise NotImplementedError

    def tied(self) -> bool:
        raise NotImplementedError

    def attention_output(self, layer: nn.Module) -> tuple[nn.Linear, int]:
        """The output projection of a layer's attention and its number of heads."""
        raise NotImplementedError

    def attention_maps(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """Per layer, the attention weights (B, h, T, T) of one forward pass."""
        raise NotImplementedError

    def rebuilt(self, plan: LayerPlan) -> ModelView:
        """A copy of the model whose layer stack follows `plan`."""
        raise NotImplementedError

    def _logits(self, ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.scoring.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.scoring.decode(ids)

    @property
    def prefix_token_id(self) -> int | None:
        """The BOS (or EOS) token that starts a document; None for a tokenizer without one."""
        return self.scoring.prefix_token_id

    @property
    def context_length(self) -> int:
        return int(self.scoring.context_length)

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) → next-token logits (B, T, V) in float32."""
        return self._logits(ids.to(self.device)).float()

    def next_logits(self, ids: torch.Tensor, cache: Any = None) -> tuple[torch.Tensor, Any]:
        """Logits (B, V) of the token after `ids` (B, T), and the cache for the next call, which
        passes `ids` grown by new tokens. This default keeps none: a forward pass over the last
        `context_length` tokens per call (the small models diagnosed here)."""
        return self.logits(ids[:, -self.context_length :])[:, -1], None

    def layer_io(self, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, its input and output residual stream (B, T, D) on one forward pass."""
        seen: dict[int, list[torch.Tensor]] = {}

        def keep(i: int, value: Any) -> None:
            seen.setdefault(i, []).append(_first_tensor(value).detach().float())

        handles = []
        for i, layer in enumerate(self.layers()):
            first, last = self.layer_ends(layer)
            handles.append(
                first.register_forward_pre_hook(
                    lambda _m, args, kwargs, i=i: keep(i, args or kwargs["hidden_states"]),
                    with_kwargs=True,
                )
            )
            handles.append(last.register_forward_hook(lambda _m, _a, out, i=i: keep(i, out)))
        with _hooks(handles), torch.no_grad():
            self.logits(ids)
        return [(seen[i][0], seen[i][-1]) for i in range(len(self.layers()))]

    @contextlib.contextmanager
    def heads_masked(self, masked: dict[int, Sequence[int]]) -> Iterator[None]:
        """Zero the given heads' outputs ({layer: [head, ...]}) before W_O while inside."""
        handles = []
        layers = self.layers()
        for layer, heads in masked.items():
            proj, n_heads = self.attention_output(layers[layer])

            def zero(
                _m: nn.Module,
                args: tuple[torch.Tensor, ...],
                heads: tuple[int, ...] = tuple(heads),
                n_heads: int = n_heads,
            ) -> tuple[torch.Tensor, ...]:
                x = args[0]
                x = x.reshape(*x.shape[:-1], n_heads, -1).clone()  # (B, T, h, d_h)
                x[..., list(heads), :] = 0.0
                return (x.flatten(-2), *args[1:])

            handles.append(proj.register_forward_pre_hook(zero))
        with _hooks(handles):
            yield

    def n_heads(self) -> list[int]:
        return [self.attention_output(layer)[1] for layer in self.layers()]


class ArchauditView(ModelView):
    """An `archaudit.model.Transformer`: layers are its blocks, hooked at the block's forward;
    the stream must be the standard one, which calls the blocks in turn (hyper-connections and
    attention residuals mix the stream between sublayers, so a block has no single input and
    output)."""

    scoring: ArchauditLM
    model: Transformer

    def __init__(self, scoring: ArchauditLM) -> None:
        super().__init__(scoring)
        cfg = self.model.cfg
        if cfg.stream.name != "standard":
            raise DataError(
                f"{self.name}: diagnostics need model.stream.name = 'standard' (got "
                f"{cfg.stream.name!r}): other streams have no single per-layer residual to hook"
            )

    def layers(self) -> list[nn.Module]:
        return list(self.model.layers())  # call order: a shared block once per use

    def unembedding(self) -> torch.Tensor:
        head = self.model.head
        head_name = self.model.cfg.head.name
        if head_name != "linear":
            raise DataError(
                f"{self.name}: model.head.name = {head_name!r} is not a linear map to the "
                "vocabulary, so the gradient bottleneck is not defined for it"
            )
        return _linear(self.name, head, "proj").weight

    def tied(self) -> bool:
        return _linear(self.name, self.model.head, "proj").weight is self.model.embed.weight

    def attention_output(self, layer: nn.Module) -> tuple[nn.Linear, int]:
        attention = layer.get_submodule("attn")
        # Differential attention reads W_O's input as `h` heads of two value halves each.
        heads = getattr(attention, "n_heads", None) or getattr(attention, "h", None)
        if heads is None:
            raise DataError(f"{self.name}: the attention module has no head count to read")
        return _linear(self.name, attention, "o_proj"), int(heads)

    def attention_maps(self, ids: torch.Tensor) -> list[torch.Tensor]:
        # The fused kernel keeps no weights, so recompute them from (q, k, mask) at each score
        # module; differential attention calls its score twice, and both maps are kept.
        maps: dict[int, list[torch.Tensor]] = {}
        handles = []
        if len({id(block) for block in self.layers()}) < len(self.layers()):
            raise DataError(
                f"{self.name}: shared layers (model.sharing) run one attention module in several "
                "layers, so its maps cannot be told apart per layer"
            )
        for i, block in enumerate(self.layers()):
            score = getattr(block.get_submodule("attn"), "score", None)
            if score is None:
                raise DataError(f"{self.name}: layer {i} has no attention score module to read")

            def keep(module: Any, args: tuple[torch.Tensor, ...], i: int = i) -> None:
                q, k, _v, mask = args
                maps.setdefault(i, []).append(module.weights(module.logits(q, k, mask), mask))

            handles.append(score.register_forward_pre_hook(keep))
        with _hooks(handles), torch.no_grad():
            self.logits(ids)
        return [torch.cat(maps[i], dim=1).float() for i in range(len(self.layers()))]

    def rebuilt(self, plan: LayerPlan) -> ModelView:
        model = copy.deepcopy(self.model)
        own = model.layers()
        model.blocks = nn.ModuleList(own[p] if isinstance(p, int) else p for p in plan)
        model.order = list(range(len(model.blocks)))
        return ArchauditView(
            ArchauditLM(model, self.scoring.tokenizer, name=self.name, device=str(self.device))
        )

    def _logits(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids)


class HFView(ModelView):
    """A Hugging Face decoder (Llama, Qwen, Mistral, GPT-NeoX-like `model.layers` stacks)."""

    scoring: HFCausalLM
    model: Any
    """A transformers `PreTrainedModel`: its parts are found by name, per architecture."""

    def __init__(self, scoring: HFCausalLM) -> None:  # the base's, for an HF model only
        super().__init__(scoring)

    def layers(self) -> list[nn.Module]:
        return list(self._stack())

    def _stack(self) -> nn.ModuleList:
        base = self.model.base_model
        for name in ("layers", "h", "blocks"):
            stack = getattr(base, name, None)
            if isinstance(stack, nn.ModuleList):
                return stack
        raise DataError(f"{self.name}: cannot find the decoder layer list of this architecture")

    def unembedding(self) -> torch.Tensor:
        return self.model.get_output_embeddings().weight

    def tied(self) -> bool:
        inp = self.model.get_input_embeddings().weight
        return self.unembedding().data_ptr() == inp.data_ptr()

    def attention_output(self, layer: nn.Module) -> tuple[nn.Linear, int]:
        attention = getattr(layer, "self_attn", None) or getattr(layer, "attn", None)
        proj = getattr(attention, "o_proj", None) or getattr(attention, "dense", None)
        if proj is None:
            raise DataError(f"{self.name}: cannot find the attention output projection")
        return proj, int(self.model.config.num_attention_heads)

    def attention_maps(self, ids: torch.Tensor) -> list[torch.Tensor]:
        config = self.model.config
        previous = config._attn_implementation
        self.model.set_attn_implementation("eager")  # fused kernels return no weights
        try:
            with torch.no_grad():
                out = self.model(
                    input_ids=ids.to(self.device), output_attentions=True, use_cache=False
                )
        finally:
            self.model.set_attn_implementation(previous)
        return [a.float() for a in out.attentions]

    def rebuilt(self, plan: LayerPlan) -> ModelView:
        model = copy.deepcopy(self.model)
        base = model.base_model
        name = next(
            n
            for n in ("layers", "h", "blocks")
            if isinstance(getattr(base, n, None), nn.ModuleList)
        )
        own = list(getattr(base, name))
        stack = [own[p] if isinstance(p, int) else p for p in plan]
        setattr(base, name, nn.ModuleList(stack))
        config = model.config
        types = getattr(config, "layer_types", None)
        if types is not None:
            config.layer_types = [types[p] if isinstance(p, int) else types[0] for p in plan]
        config.num_hidden_layers = len(stack)
        for i, layer in enumerate(stack):  # the KV cache is indexed by layer
            attention = getattr(layer, "self_attn", None)
            if attention is not None and hasattr(attention, "layer_idx"):
                attention.layer_idx = i
        return HFView(
            HFCausalLM(model, self.scoring.tokenizer, name=self.name, device=str(self.device))
        )

    def _logits(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, use_cache=False).logits

    def next_logits(self, ids: torch.Tensor, cache: Any = None) -> tuple[torch.Tensor, Any]:
        """With a KV cache (transformers' own): after the prompt, one token per call costs one
        token's forward pass, so models of SmolLM2's size generate in reasonable time. Past
        the context length it falls back to the uncached sliding window."""
        if ids.shape[1] > self.context_length:
            return super().next_logits(ids)
        seen = 0 if cache is None else cache.get_seq_length()
        # transformers 5 names the cache `cache`; 4.x named it `past_key_values`
        name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else None
        name = name or "past_key_values"
        out = self.model(input_ids=ids[:, seen:].to(self.device), use_cache=True, **{name: cache})
        return out.logits[:, -1].float(), getattr(out, name)


VIEWS: dict[type, Callable[[Any], ModelView]] = {
    ArchauditLM: ArchauditView,
    HFCausalLM: HFView,
}
"""The view of each scoring model's exact type (so each view is called with its own kind)."""


def view_of(model: str | Any, *, device: str = "cpu") -> ModelView:
    """A `ModelView` of a path (run/checkpoint directory, HF directory, .gguf file, KIND:PATH),
    a (Transformer, tokenizer) pair, a scoring model or a view."""
    if isinstance(model, ModelView):
        return model
    try:
        scoring = load_scoring_model(model, device=device)
    except (OSError, ValueError, KeyError, RuntimeError, EOFError) as err:  # a corrupt file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DataError(f"model {str(model)!r} cannot be read: {first}") from None
    make = VIEWS.get(type(scoring))
    if make is None:
        raise DataError(
            f"diagnostics support archaudit and Hugging Face models, not {type(scoring).__name__}"
        )
    return make(scoring)
