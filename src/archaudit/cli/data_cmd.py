"""`archaudit data prepare`: tokenize a corpus of any size into sharded token files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archaudit.audit.spec import MAX_PARALLEL
from archaudit.cli.app import app
from archaudit.cli.options import emit, in_range, output_flags

data_app = typer.Typer(
    help="Corpora: tokenize once into sharded token files.", no_args_is_help=True
)
app.add_typer(data_app, name="data")


@data_app.command("prepare")
@output_flags
def prepare_command(
    source: Annotated[
        str,
        typer.Argument(
            help="A .txt/.jsonl/.parquet file, a folder of them, nanoGPT .bin token files, a "
            "`save_to_disk` dataset folder, or hf:NAME[:SPLIT] (the `hf` extra)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for shard-*.bin and index.json.")],
    tokenizer: Annotated[
        str,
        typer.Option(
            "--tokenizer",
            help="byte | bpe:\\<V> | gpt2:\\<dir> | hf:\\<dir> (as recipe.tokenizer).",
        ),
    ] = "byte",
    workers: Annotated[
        int,
        typer.Option("--workers", help="Tokenizing processes.", callback=in_range(1, MAX_PARALLEL)),
    ] = 1,
    shard_tokens: Annotated[
        int, typer.Option("--shard-tokens", help="Tokens per shard.", callback=in_range(1))
    ] = 100_000_000,
    text_field: Annotated[
        str, typer.Option("--text-field", help="Text column of .jsonl/parquet.")
    ] = "text",
    json_: bool = False,
) -> None:
    """Tokenize SOURCE into sharded token files; train on them with `recipe.corpus = OUT`.

    The shards are byte-identical for any worker count, and the corpus is streamed: memory
    holds a few pieces per worker, never the whole corpus.
    """
    from archaudit.data.prepare import prepare
    from archaudit.progress import log

    result = prepare(
        source, tokenizer, out, workers=workers, shard_tokens=shard_tokens, text_field=text_field
    )
    if json_:
        emit(result)
        return
    log(
        f"{result.n_tokens:,} tokens in {result.n_shards} shard(s) → {result.out} "
        f"(content {result.content_hash[:12]}); train with --set recipe.corpus={result.out}"
    )
