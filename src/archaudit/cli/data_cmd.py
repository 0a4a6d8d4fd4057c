"""`archaudit data prepare`: tokenize a corpus of any size into sharded token files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from archaudit.audit.setup.spec import MAX_PARALLEL
from archaudit.cli.base.app import app
from archaudit.cli.base.options import Flags, emit, output_flags, with_flags
from archaudit.ranges import Range


@dataclass(frozen=True, kw_only=True)
class Sharding:
    """How `data prepare` tokenizes and shards."""

    tokenizer: str = "byte"
    """byte | bpe:<V> | gpt2:<dir> | hf:<dir> (as recipe.tokenizer)."""
    workers: int = field(default=1, metadata={"range": Range(1, MAX_PARALLEL)})
    """Tokenizing processes."""
    shard_tokens: int = field(default=100_000_000, metadata={"range": Range(1)})
    """Tokens per shard."""
    text_field: str = "text"
    """Text column of .jsonl/parquet."""


data_app = typer.Typer(
    help="Corpora: tokenize once into sharded token files.", no_args_is_help=True
)
app.add_typer(data_app, name="data")


@data_app.command("prepare")
@output_flags
@with_flags
def prepare_command(
    source: Annotated[
        str,
        typer.Argument(
            help="A .txt/.jsonl/.parquet file, a folder of them, nanoGPT .bin token files, a "
            "`save_to_disk` dataset folder, or hf:NAME[:SPLIT] (the `hf` extra)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for shard-*.bin and index.json.")],
    *,
    sharding: Annotated[Sharding, Flags(Sharding)],
    json_: bool = False,
) -> None:
    """Tokenize SOURCE into sharded token files; train on them with `recipe.corpus = OUT`.

    The shards are byte-identical for any worker count, and the corpus is streamed: memory
    holds a few pieces per worker, never the whole corpus.
    """
    from archaudit.data.prepare import prepare
    from archaudit.progress import log

    result = prepare(
        source,
        sharding.tokenizer,
        out,
        workers=sharding.workers,
        shard_tokens=sharding.shard_tokens,
        text_field=sharding.text_field,
    )
    if json_:
        emit(result)
        return
    log(
        f"{result.n_tokens:,} tokens in {result.n_shards} shard(s) → {result.out} "
        f"(content {result.content_hash[:12]}); train with --set recipe.corpus={result.out}"
    )
