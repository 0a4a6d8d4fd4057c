"""The scoring LM: summed log-likelihood of continuations given contexts.

Everything downstream (multiple choice, cloze, minimal pairs, probes, held-out loss, the
lm-evaluation-harness adapter) reduces to `score_tokens`: for (context_ids, continuation_ids)
pairs, the summed log-probability of the continuation and whether greedy decoding would have
produced it. Text pairs are joined exactly as lm-evaluation-harness joins them (`encode_pair`),
so numbers are comparable with published lm-eval results.

A model that keeps a KV cache (`context_cache`) scores the choices of a multiple-choice or cloze
item from one pass over their shared context: the context's keys and values are computed once
and every continuation continues from them (`_shared_groups`, `_score_shared`).
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import torch

from archaudit.errors import DataError
from archaudit.progress import progress


class ScoringModel(Protocol):
    """What the scorer needs from a model; adapters in `archaudit.evals.models` provide it."""

    name: str
    max_length: int
    """Longest input in tokens; longer inputs lose context from the left."""
    context_length: int
    """Training context in tokens: long-context retrieval is measured in multiples of it."""
    prefix_token_id: int | None
    """Token that conditions an empty context (BOS/EOS); None when the tokenizer has none."""
    device: torch.device
    vocab_size: int
    """Width V of the logits `logits_at` returns: the scorer keeps (B, K, V) within a budget."""

    @property
    def position_limit(self) -> int | None:
        """Longest input the model can run at all (learned absolute positions); None = no
        limit. A property, so that an adapter may find it out lazily."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    tree_attention: bool
    """`logits_at` honours `positions` and `allowed`, so choices can share their prefix."""

    def logits_at(
        self,
        ids: torch.Tensor,
        index: torch.Tensor,
        *,
        positions: torch.Tensor | None = None,
        allowed: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Next-token logits of `ids` (B, T) at row indices `index` (B, K) → (B, K, V).

        `positions` (B, T) are position ids and `allowed` (B, T, T) says which keys each query
        sees; both None means plain causal attention over positions 0..T-1.
        """
        ...


ContextCache = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor
]
"""`(prefixes (G, P), lengths (G,), rows (G,), ids (B, S), index (B, K)) → (B, K, V)`: the
prefixes run once through the model's KV cache, prefix g (its first `lengths[g]` tokens, then
padding) is continued by the next `rows[g]` rows of `ids` (B = rows.sum()), each row's first
token at position `lengths[g]`, and the next-token logits are read at row positions `index` of
`ids`. What a model's optional `context_cache()` returns; it returns None when caching would
change what the model computes (`Transformer.supports_kv_cache`). Only a model whose
`ragged_context` is true is given lengths short of P (it masks the padding and places each
row's tokens itself); the others get prefixes of one length, cut to the batch's shortest."""


class Score(NamedTuple):
    logprob: float
    """Summed log-probability (nats) of the continuation."""
    greedy: bool
    """Every continuation token is the argmax of its prediction."""
    truncated: bool = False
    """The context lost tokens from the left to fit the model's maximum length."""


TokenPair = tuple[list[int], list[int]]

LOGITS_BUDGET_BYTES = 512 * 2**20
"""Most bytes of fp32 logits (B, K, V) one batch may hold. Rows join a batch while it fits, so
peak memory does not grow with the vocabulary (lm-eval holds one row's logits and their
log-softmax); a single row over the budget still runs, alone."""


def encode_pair(model: ScoringModel, context: str, continuation: str) -> TokenPair:
    """Tokenise a (context, continuation) text pair the way lm-evaluation-harness does.

    Trailing whitespace of the context moves to the continuation; context and continuation are
    tokenised together and split at the length of the context's own encoding, so a word-initial
    space merges into the continuation's first token as it would in running text. An empty
    context becomes the prefix token (lm-eval's `TemplateLM.loglikelihood`).
    """
    return _encode_pair(model.encode, model.prefix_token_id, context, continuation)


def encode_pairs(model: ScoringModel, pairs: Sequence[tuple[str, str]]) -> list[TokenPair]:
    """`encode_pair` over many pairs; a context shared by several choices is encoded once."""
    cache: dict[str, list[int]] = {}

    def encode(text: str) -> list[int]:
        if text not in cache:
            cache[text] = model.encode(text)
        return cache[text]

    return [_encode_pair(encode, model.prefix_token_id, c, x) for c, x in pairs]


def _encode_pair(
    encode: Callable[[str], list[int]], prefix: int | None, context: str, continuation: str
) -> TokenPair:
    if not context:
        cont = encode(continuation)
        if prefix is None or cont[:1] == [prefix]:
            # Nothing to condition on: the first token becomes the context, as lm-eval does
            # when the continuation already starts with the prefix token.
            return cont[:1], cont[1:]
        return [prefix], cont
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
    context_ids = encode(context)
    return context_ids, encode(context + continuation)[len(context_ids) :]


Seq = tuple[int, ...]


@dataclass(frozen=True, eq=False)  # identity hash: trees key dicts
class _Tree:
    """Inputs (none a prefix of another) that share their first `shared` tokens: the shared part
    once, then each member's own tokens in a branch that sees the shared part and itself."""

    members: tuple[Seq, ...]
    shared: int

    def __len__(self) -> int:
        return self.shared + sum(len(m) - self.shared for m in self.members)

    @property
    def tokens(self) -> list[int]:
        return list(self.members[0][: self.shared]) + [
            t for m in self.members for t in m[self.shared :]
        ]

    @property
    def branches(self) -> list[int]:
        """-1 on the shared part, i on member i's own tokens."""
        return [-1] * self.shared + [
            i for i, m in enumerate(self.members) for _ in m[self.shared :]
        ]

    @property
    def positions(self) -> list[int]:
        return list(range(self.shared)) + [
            p for m in self.members for p in range(self.shared, len(m))
        ]

    def locate(self, member: Seq, position: int) -> int:
        """Where token `position` of `member` sits in the tree."""
        if position < self.shared:
            return position
        start = self.shared + sum(
            len(m) - self.shared for m in self.members[: self.members.index(member)]
        )
        return start + position - self.shared


Line = list[_Tree]
"""The trees that one row of a batch carries, one after the other."""


def score_tokens(
    model: ScoringModel,
    pairs: Sequence[TokenPair],
    *,
    batch_size: int = 32,
    max_batch_tokens: int = 32768,
    max_length: int | None = None,
    show_progress: bool = True,
    description: str = "scoring",
    shared_context: bool = True,
) -> list[Score]:
    """Summed continuation log-probability and greediness for each token pair, in input order.

    A request's model input is `(context + continuation)[:-1]`, cut from the left to
    `max_length` (default: the model's), as lm-eval does; `Score.truncated` says it was cut.
    Only a continuation that cannot fit at all is refused. Causal logits at a position do not
    depend on what follows, so an input that is a prefix of another is read from the longer
    one's row (all single-token choices of a question cost one row).

    When the model offers a `context_cache` (and `shared_context`), inputs that share a
    context of at least `MIN_SHARED` tokens before their first scored token (the choices of a
    question, questions under one few-shot preamble) form a group: the shared tokens run once
    through the KV cache and the rest of every input continues from it, one row each; groups
    of similar context lengths share the two passes (`_group_batches`). The
    other inputs, and every input of a model without a cache, are scored in full:
    when the model takes an attention mask (`tree_attention`: Hugging Face models, which
    therefore need no cache), inputs sharing a long prefix form a tree whose prefix is computed
    once in the same pass as the continuations, and short trees share a row instead of padding.
    Rows are sorted longest first (memory trouble shows at once), batched under `batch_size`
    rows, `max_batch_tokens` padded tokens and `LOGITS_BUDGET_BYTES` of logits, and
    right-padded: padding after a row's last token cannot change any logit we read.
    """
    inputs, cut = _model_inputs(pairs, max_length or model.max_length, description)
    logprob = torch.zeros(len(pairs), dtype=torch.float64)
    misses = torch.zeros(len(pairs), dtype=torch.long)
    budget = _Budget(batch_size, max_batch_tokens, LOGITS_BUDGET_BYTES // (4 * model.vocab_size))
    make_cache = getattr(model, "context_cache", None) if shared_context else None
    cache: ContextCache | None = make_cache() if make_cache is not None else None
    parts: list[Iterator[_Scored]] = []
    rest: Sequence[int] = range(len(pairs))
    if cache is not None:
        groups, rest = _shared_groups(inputs, pairs, budget)
        ragged = bool(getattr(model, "ragged_context", False))
        parts.append(_score_groups(cache, groups, inputs, pairs, budget, ragged))
    parts.append(_score_in_full(model, rest, inputs, pairs, budget))
    with progress(description, len(pairs)) if show_progress else nullcontext() as bar:
        for members, lp, miss in itertools.chain(*parts):
            logprob[members], misses[members] = lp, miss
            if bar:
                bar.update(advance=len(members))
    return [
        Score(float(lp), bool(m == 0), c) for lp, m, c in zip(logprob, misses, cut, strict=True)
    ]


_Scored = tuple[list[int], torch.Tensor, torch.Tensor]
"""(request indices, their summed log-probabilities, their greedy-miss counts)."""


def _score_in_full(
    model: ScoringModel,
    requests: Sequence[int],
    inputs: list[Seq],
    pairs: Sequence[TokenPair],
    budget: _Budget,
) -> Iterator[_Scored]:
    """The `requests` batch by batch, each input computed in full (or in a tree with the
    inputs it shares a prefix with)."""
    sub_inputs, sub_pairs = [inputs[i] for i in requests], [pairs[i] for i in requests]
    layout = _Layout.of(sub_inputs, tree=model.tree_attention)
    reads_per_line = [layout.reads([line], sub_inputs, sub_pairs)[1] for line in layout.lines]
    for batch in _batches(layout.lines, [_read_count(r) for r in reads_per_line], budget):
        members, reads = layout.reads(batch, sub_inputs, sub_pairs)
        yield [requests[i] for i in members], *_score_batch(model, batch, reads)


def _model_inputs(
    pairs: Sequence[TokenPair], limit: int, description: str
) -> tuple[list[Seq], list[bool]]:
    """Each pair's model input, cut from the left to `limit` tokens, and whether it was cut."""
    inputs: list[Seq] = []
    # lm-eval's rule (lm_eval/models/huggingface.py, HFLM._loglikelihood_tokens, 0.4.x): it
    # asserts len(continuation_enc) <= max_length, and a longer context + continuation is cut
    # from the left, `(context_enc + continuation_enc)[-(max_length + 1):][:-1]`, with a warning.
    for context, continuation in pairs:
        if not continuation:
            raise DataError(f"{description}: empty continuation: there is nothing to score")
        if len(continuation) > limit:
            raise DataError(
                f"{description}: continuation of {len(continuation)} tokens exceeds the model's "
                f"maximum length {limit}; shorten it or evaluate a model with a longer context"
            )
        inputs.append(tuple((context + continuation)[-(limit + 1) : -1]))
    cut = [len(c) + len(x) > limit + 1 for c, x in pairs]
    return inputs, cut


@dataclass(frozen=True)
class _Layout:
    """Where each input is read from: the longest input it is a prefix of, that input's tree,
    and the rows (lines of trees) that carry the trees, widest first."""

    longest: dict[Seq, Seq]
    requests: dict[_Tree, list[int]]
    """The indices of the inputs each tree answers."""
    lines: list[Line]

    @classmethod
    def of(cls, inputs: list[Seq], *, tree: bool) -> _Layout:
        longest = _longest_extension(inputs)
        trees = _grow_trees(sorted(set(longest.values())), branch=tree)
        tree_of = {m: t for t in trees for m in t.members}
        requests: dict[_Tree, list[int]] = {t: [] for t in trees}
        for i, seq in enumerate(inputs):
            requests[tree_of[longest[seq]]].append(i)
        trees.sort(key=len, reverse=True)
        lines = _fill_lines(trees) if tree else [[t] for t in trees]
        lines.sort(key=_width, reverse=True)
        return cls(longest, requests, lines)

    def reads(
        self, batch: list[Line], inputs: list[Seq], pairs: Sequence[TokenPair]
    ) -> tuple[list[int], list[_Read]]:
        """The inputs a batch answers, and where in the batch each one's continuation is read."""
        members, reads = [], []
        for b, line in enumerate(batch):
            offset = 0
            for t in line:
                for i in self.requests[t]:
                    seq, targets = inputs[i], pairs[i][1]
                    where = [
                        offset + t.locate(self.longest[seq], p)
                        for p in _read_positions(seq, targets)
                    ]
                    reads.append(_Read(b, where, targets))
                    members.append(i)
                offset += len(t)
        return members, reads


def _read_positions(seq: Seq, continuation: list[int]) -> range:
    """The input positions whose next-token predictions are the continuation's tokens."""
    return range(len(seq) - len(continuation), len(seq))


class _Read(NamedTuple):
    """One request's continuation: row `row` of the batch, predicted at row `positions`."""

    row: int
    positions: list[int]
    targets: list[int]


def _longest_extension(inputs: list[Seq]) -> dict[Seq, Seq]:
    """Map each input to the longest input it is a prefix of (itself when none)."""
    # In lexicographic order an input's extensions, if any, follow it directly; walking the
    # sorted list backwards carries the longest extension down each chain of prefixes.
    longest: dict[Seq, Seq] = {}
    following: Seq | None = None
    for seq in sorted(set(inputs), reverse=True):
        if following is not None and following[: len(seq)] == seq:
            longest[seq] = longest[following]  # seq is a prefix of the input after it
        else:
            longest[seq] = seq
        following = seq
    return longest


def _common_prefix(a: Seq, b: Seq) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _grow_trees(
    ordered: list[Seq], *, branch: bool, min_shared: int = 8, max_members: int = 16
) -> list[_Tree]:
    """Group lexicographically sorted inputs (none a prefix of another) into trees.

    Neighbours join a tree while they share at least `min_shared` tokens with it and the tree
    stays within twice its longest member (a sorted run's common prefix is that of its ends).
    """
    groups: list[list[Seq]] = []
    for seq in ordered:
        if branch and groups and len(groups[-1]) < max_members:
            group = groups[-1] + [seq]
            shared = _common_prefix(group[0], seq)
            size = shared + sum(len(m) - shared for m in group)
            if shared >= min_shared and size <= 2 * max(map(len, group)):
                groups[-1] = group
                continue
        groups.append([seq])
    return [
        _Tree(tuple(g), _common_prefix(g[0], g[-1]) if len(g) > 1 else len(g[0])) for g in groups
    ]


def _width(line: Line) -> int:
    return sum(map(len, line))


def _fill_lines(trees: list[_Tree]) -> list[Line]:
    """Trees (longest first) into rows as wide as the longest tree, best fit decreasing, so a
    batch of short questions carries little padding."""
    width = len(trees[0]) if trees else 0
    lines: list[Line] = []
    room: list[tuple[int, int]] = []  # (free tokens, line index), sorted
    for t in trees:
        k = bisect.bisect_left(room, (len(t), -1))
        if k == len(room):
            lines.append([t])
            bisect.insort(room, (width - len(t), len(lines) - 1))
        else:
            free, j = room.pop(k)
            lines[j].append(t)
            bisect.insort(room, (free - len(t), j))
    return lines


class _Budget(NamedTuple):
    rows: int
    tokens: int
    """Padded input tokens (B * T)."""
    logits: int
    """Logit rows (B * K, K padded to the batch's most read positions): bytes / (4 V)."""


def _read_count(reads: list[_Read]) -> int:
    """K of a row: the distinct positions its reads go through the output head at."""
    return len({p for r in reads for p in r.positions})


def _batches(lines: list[Line], reads: list[int], budget: _Budget) -> Iterator[list[Line]]:
    """Consecutive runs of rows (sorted longest first) within the row, padded-token and logits
    budgets; `reads` is each row's K."""
    batch: list[Line] = []
    k_max = 0
    for line, k in zip(lines, reads, strict=True):
        # rows arrive longest first, so the batch's padded width is its first row's width
        width = _width(batch[0]) if batch else _width(line)
        n = len(batch) + 1
        if batch and (
            n > budget.rows or n * width > budget.tokens or n * max(k_max, k) > budget.logits
        ):
            yield batch
            batch, k_max = [], 0
        batch.append(line)
        k_max = max(k_max, k)
    if batch:
        yield batch


def _score_batch(
    model: ScoringModel, batch: list[Line], reads: list[_Read]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed log-probabilities and greedy-miss counts of `reads` over the rows `batch`."""
    width = _width(batch[0])
    ids = torch.zeros(len(batch), width, dtype=torch.long)  # (B, T), right-padded
    positions = torch.arange(width).repeat(len(batch), 1)  # (B, T)
    trees = torch.full((len(batch), width), -1)  # which tree of its row a token is in
    branches = torch.full((len(batch), width), -2)  # padding: a branch of its own
    for b, line in enumerate(batch):
        n = _width(line)
        ids[b, :n] = torch.tensor([tok for t in line for tok in t.tokens])
        positions[b, :n] = torch.tensor([p for t in line for p in t.positions])
        trees[b, :n] = torch.tensor([j for j, t in enumerate(line) for _ in range(len(t))])
        branches[b, :n] = torch.tensor([br for t in line for br in t.branches])
    allowed = None
    if any(len(line) > 1 or len(line[0].members) > 1 for line in batch):
        causal = torch.ones(width, width, dtype=torch.bool).tril()
        same_tree = trees[:, None, :] == trees[:, :, None]  # (B, T_query, T_key)
        visible = (branches[:, None, :] == branches[:, :, None]) | (branches[:, None, :] == -1)
        allowed = causal & same_tree & visible

    index, column = _read_index(reads, len(batch))
    device = model.device
    # no_grad, not inference_mode: tensors a model caches here (rotary tables) must stay
    # usable when the same model object trains on afterwards.
    with torch.no_grad():
        logits = model.logits_at(
            ids.to(device),
            index.to(device),
            positions=None if allowed is None else positions.to(device),
            allowed=None if allowed is None else allowed.to(device),
        )
        return _sum_reads(logits, reads, column)  # (B, K, V) logits


def _read_index(reads: list[_Read], rows: int) -> tuple[torch.Tensor, list[dict[int, int]]]:
    """The row positions whose logits the reads need, (B, K) padded with each row's first,
    and each position's column in K. Only these go through the output head: the full
    (B, T, V) logits would be mostly waste for long contexts and short answers."""
    needed = [sorted({p for r in reads if r.row == b for p in r.positions}) for b in range(rows)]
    k_max = max(map(len, needed))
    index = torch.tensor([row + [row[0]] * (k_max - len(row)) for row in needed])  # (B, K)
    return index, [{p: k for k, p in enumerate(row)} for row in needed]


def _sum_reads(
    logits: torch.Tensor, reads: list[_Read], column: list[dict[int, int]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed log-probabilities and greedy-miss counts of `reads` from (B, K, V) logits."""
    # half precision is read in float32; a float64 model keeps its precision
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    device = logits.device
    log_z, greedy = _normaliser_and_argmax(logits)  # (B, K) each
    # One entry per continuation token: its row, its column in K, its target, its request.
    tok_row = torch.tensor([r.row for r in reads for _ in r.targets], device=device)
    tok_k = torch.tensor([column[r.row][p] for r in reads for p in r.positions], device=device)
    tok_target = torch.tensor([t for r in reads for t in r.targets], device=device)
    tok_lp = (logits[tok_row, tok_k, tok_target] - log_z[tok_row, tok_k]).double().cpu()
    tok_miss = (greedy[tok_row, tok_k] != tok_target).long().cpu()
    owner = torch.tensor([j for j, r in enumerate(reads) for _ in r.targets])
    logprob = torch.zeros(len(reads), dtype=torch.float64).index_add_(0, owner, tok_lp)
    misses = torch.zeros(len(reads), dtype=torch.long).index_add_(0, owner, tok_miss)
    return logprob, misses


MIN_SHARED = 8
"""Fewest shared tokens worth a pass of their own through the KV cache."""


@dataclass(frozen=True)
class _SharedGroup:
    """Inputs (none a prefix of another) whose first `split` tokens are the same and hold no
    scored position: the split runs once, each member's own tokens continue it in a row."""

    members: tuple[Seq, ...]
    split: int
    requests: list[int]
    """The request indices the members answer."""
    rows: list[int]
    """Each request's member (its row)."""


def _shared_groups(
    inputs: list[Seq], pairs: Sequence[TokenPair], budget: _Budget
) -> tuple[list[_SharedGroup], list[int]]:
    """Groups of inputs to score from a shared cached context, and the requests left over
    (whose input shares too little with its neighbours) to score in full.

    Inputs are sorted, so a run of neighbours shares the common prefix of its ends. A
    neighbour joins while the run still shares `MIN_SHARED` tokens before any scored position,
    the rows fit the batch budgets, and the run costs no more tokens than the run before it
    and the neighbour apart: the next question's first choice does not cut the run's shared
    context to the few tokens that open every question, but a few-shot preamble still joins
    the questions under it.
    """
    longest = _longest_extension(inputs)
    asked: dict[Seq, list[int]] = {}
    for i, seq in enumerate(inputs):
        asked.setdefault(longest[seq], []).append(i)
    first_read = {m: min(len(inputs[i]) - len(pairs[i][1]) for i in asked[m]) for m in asked}
    runs: list[list[Seq]] = []
    for seq in sorted(asked):
        run = runs[-1] + [seq] if runs else []
        if run and _worth_sharing(run, runs[-1], first_read, budget):
            runs[-1] = run
        else:
            runs.append([seq])
    groups, rest = [], []
    for run in runs:
        split = _split(run, first_read)
        if len(run) == 1 or split < MIN_SHARED:
            rest += [i for m in run for i in asked[m]]
            continue
        requests = [i for m in run for i in asked[m]]
        rows = [b for b, m in enumerate(run) for _ in asked[m]]
        groups.append(_SharedGroup(tuple(run), split, requests, rows))
    return groups, sorted(rest)


def _split(run: list[Seq], first_read: dict[Seq, int]) -> int:
    """Tokens the sorted run shares before the first position any of its requests reads."""
    return min(_common_prefix(run[0], run[-1]), *(first_read[m] for m in run))


def _worth_sharing(
    run: list[Seq], before: list[Seq], first_read: dict[Seq, int], budget: _Budget
) -> bool:
    """Whether `run` (`before` and one more input) is a group worth its tokens."""
    split = _split(run, first_read)
    width = max(len(m) for m in run) - split  # the padded rows after the shared part
    return (
        split >= MIN_SHARED
        and len(run) <= budget.rows
        and len(run) * width <= budget.tokens
        and len(run) * (width + 1) <= budget.logits
        and _run_tokens(run, first_read) <= _run_tokens(before, first_read) + len(run[-1])
    )


def _run_tokens(run: list[Seq], first_read: dict[Seq, int]) -> int:
    """Tokens a run costs: its shared part once and its padded rows, or its input alone."""
    if len(run) == 1:
        return len(run[0])
    split = _split(run, first_read)
    return split + len(run) * (max(len(m) for m in run) - split)


def _score_groups(
    cache: ContextCache,
    groups: list[_SharedGroup],
    inputs: list[Seq],
    pairs: Sequence[TokenPair],
    budget: _Budget,
    ragged: bool,
) -> Iterator[_Scored]:
    for batch in _group_batches(groups, budget, ragged):
        requests = [i for g in batch for i in g.requests]
        yield requests, *_score_shared(cache, batch, inputs, pairs, ragged)


PASS_TOKENS = 32
"""What one forward pass costs beyond its tokens, in tokens: on a CPU a pass reads every weight
whatever its size (a 25M-parameter model: 14 ms for a pass of 8 tokens, 0.36-0.45 ms per token
in passes of 128-2048; `benchmarks/eval_speed.py`'s model)."""


def _group_batches(
    groups: list[_SharedGroup], budget: _Budget, ragged: bool = False
) -> Iterator[list[_SharedGroup]]:
    """Groups into batches under the budgets: one pass over the batch's prefixes, then one over
    all their rows. A group joins the batch when that costs fewer tokens (`_batch_tokens`) than
    a batch of its own: small groups alone would cost two small passes each. Without `ragged`
    prefixes (the model takes none), the prefixes are cut to the batch's shortest and the rows
    carry the rest of their context, so groups come longest split first (long contexts cut to a
    much shorter one would run their rest in every row); with them, every prefix keeps its own
    length and every row its own tokens, so groups come widest rows first (many items' short
    continuations share the two passes, padded to their neighbours' widths)."""
    batch: list[_SharedGroup] = []
    order = _widest_rows if ragged else (lambda g: g.split)
    for group in sorted(groups, key=order, reverse=True):
        trial = [*batch, group]
        if batch and not _worth_joining(trial, budget, ragged):
            yield batch
            trial = [group]
        batch = trial
    if batch:
        yield batch


def _widest_rows(group: _SharedGroup) -> tuple[int, int]:
    """A group's widest row after its own prefix, then its prefix: the order of ragged batches."""
    return max(len(m) for m in group.members) - group.split, group.split


class _BatchShape(NamedTuple):
    split: int
    """The prefix width: the shortest of the batch's groups' (cut), or the longest (ragged:
    the others padded)."""
    rows: int
    width: int
    """The padded rows' tokens after their prefix."""

    @classmethod
    def of(cls, batch: list[_SharedGroup], ragged: bool = False) -> _BatchShape:
        rows = sum(len(g.members) for g in batch)
        if ragged:
            width = max(len(m) - g.split for g in batch for m in g.members)
            return cls(max(g.split for g in batch), rows, width)
        split = min(g.split for g in batch)
        return cls(split, rows, max(len(m) for g in batch for m in g.members) - split)

    def cut(self, group: _SharedGroup, ragged: bool) -> int:
        """Where `group`'s members are split into prefix and row."""
        return group.split if ragged else self.split


def _batch_tokens(batch: list[_SharedGroup], ragged: bool = False) -> int:
    """Padded tokens of a batch's two passes (the prefixes, then the rows), plus `PASS_TOKENS`
    for each pass."""
    shape = _BatchShape.of(batch, ragged)
    return 2 * PASS_TOKENS + len(batch) * shape.split + shape.rows * shape.width


def _worth_joining(batch: list[_SharedGroup], budget: _Budget, ragged: bool = False) -> bool:
    """Whether the last group of `batch` joins the others: within the budgets and cheaper
    together than apart."""
    shape = _BatchShape.of(batch, ragged)
    cost = functools.partial(_batch_tokens, ragged=ragged)
    # `batch_size` bounds the prefixes; the rows after them are short, so their tokens and
    # logits (K <= width per row) bound them.
    return (
        len(batch) <= budget.rows
        and shape.rows * shape.width <= min(budget.tokens, budget.logits)
        and len(batch) * shape.split <= budget.tokens
        and cost(batch) <= cost(batch[:-1]) + cost(batch[-1:])
    )


def _score_shared(
    cache: ContextCache,
    batch: list[_SharedGroup],
    inputs: list[Seq],
    pairs: Sequence[TokenPair],
    ragged: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed log-probabilities and greedy misses of a batch of groups' requests, in its
    order: each group's shared context once through the cache (cut to the batch's shortest,
    or with `ragged` whole and right-padded), each member's own tokens as one right-padded row
    continuing it."""
    shape = _BatchShape.of(batch, ragged)
    cuts = [shape.cut(g, ragged) for g in batch]
    ids = torch.zeros(shape.rows, shape.width, dtype=torch.long)  # (B, S)
    prefixes = torch.zeros(len(batch), shape.split, dtype=torch.long)  # (G, P), right-padded
    reads, offset = [], 0
    for j, (g, cut) in enumerate(zip(batch, cuts, strict=True)):
        prefixes[j, :cut] = torch.tensor(g.members[0][:cut])
        for b, m in enumerate(g.members):
            ids[offset + b, : len(m) - cut] = torch.tensor(m[cut:])
        for i, row in zip(g.requests, g.rows, strict=True):
            positions = _read_positions(inputs[i], pairs[i][1])
            reads.append(_Read(offset + row, [p - cut for p in positions], pairs[i][1]))
        offset += len(g.members)
    index, column = _read_index(reads, shape.rows)
    lengths = torch.tensor(cuts)  # (G,)
    rows = torch.tensor([len(g.members) for g in batch])  # (G,)
    with torch.no_grad():
        logits = cache(prefixes, lengths, rows, ids, index)
        return _sum_reads(logits, reads, column)


def _normaliser_and_argmax(
    logits: torch.Tensor, chunk: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """logsumexp and argmax over V of (B, K, V) logits, `chunk` rows of V at a time.

    log p(target) = logit - logsumexp needs no log-softmax copy of the logits, and logsumexp's
    own temporary (exp of the shifted logits) is one chunk, not a second (B, K, V) tensor.
    """
    flat = logits.reshape(-1, logits.shape[-1])  # a view: the logits are contiguous
    log_z = torch.cat([torch.logsumexp(c, dim=-1) for c in flat.split(chunk)])
    greedy = torch.cat([c.argmax(dim=-1) for c in flat.split(chunk)])
    return log_z.view(logits.shape[:-1]), greedy.view(logits.shape[:-1])


def rolling_pairs(
    ids: Sequence[int], prefix: int | None, max_length: int, stride: int | None = None
) -> list[TokenPair]:
    """Disjoint (context, continuation) windows that together predict every token of `ids`.

    lm-eval's `loglikelihood_rolling` (`get_rolling_token_windows` with context_len=1 and
    `make_disjoint_window`, lm_eval/utils.py) when `stride` is None: the first window predicts
    up to `max_length` tokens from the prefix token; every later window predicts the next
    `stride` (default `max_length`) tokens and takes as context the tokens before them that fill
    the model's input to `max_length`: one token for a full window, more for the last, partial
    one. A smaller `stride` is a sliding window: each prediction sees at least
    `max_length - stride` tokens. Without a prefix token the first token of `ids` conditions the
    first window (and goes unpredicted).
    """
    stride = stride or max_length
    if not 1 <= stride <= max_length:
        raise DataError(f"stride {stride} must be between 1 and the window length {max_length}")
    seq = ([] if prefix is None else [prefix]) + list(ids)
    n = len(seq) - 1  # tokens to predict
    if n <= 0:
        return []
    done = min(max_length, n)
    pairs = [(seq[:1], seq[1 : done + 1])]
    while done < n:
        width = min(n - done, stride)
        end = done + width  # predicted tokens so far, after this window
        pairs.append((seq[end - max_length : end - width + 1], seq[end - width + 1 : end + 1]))
        done = end
    return pairs
