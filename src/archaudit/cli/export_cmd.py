"""`archaudit export hf RUN --out DIR`: a trained run as a Hugging Face transformers directory.
A thin face over `archaudit.export.export_hf`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archaudit.cli.base.app import app
from archaudit.cli.base.options import emit, output_flags

export_app = typer.Typer(
    help="Export a trained run into another ecosystem's format.", no_args_is_help=True
)
app.add_typer(export_app, name="export")


@export_app.command("hf")
@output_flags
def export_hf_command(
    run: Annotated[Path, typer.Argument(help="A run directory or one of its step-* checkpoints.")],
    out: Annotated[Path, typer.Option("--out", help="The Hugging Face directory to write.")],
    json_: bool = False,
) -> None:
    """Write config.json, model.safetensors, generation_config.json and the tokenizer
    (tokenizer.json) into OUT, for `AutoModelForCausalLM.from_pretrained(OUT)` with no custom
    code. The export is read back and its logits compared with the run's (float32, ≤ 1e-4);
    a configuration no stock transformers class computes is refused, naming its slot."""
    from archaudit.export import export_hf

    result = export_hf(run, out)
    if json_:
        emit(result)
        return
    typer.echo(
        f"{result.architecture} → {result.out} (max |Δ logit| {result.max_abs_logit_diff:.1e} "
        f"over {result.probe_tokens} tokens); evaluate it with `archaudit eval {result.out}`"
    )
