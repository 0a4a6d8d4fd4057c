"""`archaudit replicate`: the literature's claims as audits, run and judged
(audit/replicating/replicate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from archaudit.cli.audit_cmd import Executor, Overrides, Probe, show
from archaudit.cli.base.app import app
from archaudit.cli.base.options import emit, output_flags, with_flags
from archaudit.formatting import num, pvalue

if TYPE_CHECKING:
    from archaudit.audit.replicating.replicate import Claim
    from archaudit.audit.replicating.replicate_run import ClaimPlan
    from archaudit.audit.replicating.replication import Replication

DEFAULT_RUNS = Path("runs")


@app.command("replicate")
@output_flags
@with_flags
def replicate_command(
    target: Annotated[
        str,
        typer.Argument(
            help="A claim (see `replicate list`), `all`, `list`, or `table` (the table of "
            "docs/replications.md from the run folders, nothing trains)."
        ),
    ],
    plan_only: Annotated[
        bool, typer.Option("--plan", help="Print the runs left, their CPU cost and the power.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="`table`: write the table into this page.")
    ] = None,
    *,
    executor: Executor,
    probe: Probe = True,
    overrides: Overrides = None,
    runs_dir: Annotated[
        Path,
        typer.Option("--runs-dir", help="Where the claims' audits go (one folder per claim file)."),
    ] = DEFAULT_RUNS,
    json_: bool = False,
    quiet: bool = False,
) -> None:
    """Run a published claim's audit (resumable) and say whether the tool reproduces it:
    reproduced (its own verdict in the published direction at its calibrated level),
    contradicted, or not established (with the design's power), plus the CPU cost."""
    from archaudit.audit.replicating.replicate import get_claim, list_claims

    sets = [*(overrides or ()), *executor]
    if target == "list":
        return _list(list_claims(), json_)
    if target == "table":
        return _table(runs_dir, sets, out, json_)
    claims = list_claims() if target == "all" else [get_claim(target)]
    if plan_only:
        return _plan(claims, runs_dir, sets, probe, json_)
    from archaudit.audit.replicating.replicate_run import replicate_all

    results = replicate_all(claims, runs_dir, overrides=sets, live=not (quiet or json_))
    if json_:
        return emit([r.to_json() for r in results])
    show(results_table(results))


def _list(claims: list[Claim], json_: bool) -> None:
    if json_:
        return emit([c.describe() for c in claims])
    table = Table(title="published claims (archaudit replicate CLAIM)")
    for column in ("claim", "test", "arm", "published", "source", "status"):
        table.add_column(column)
    from archaudit.audit.replicating.replication import published

    for c in claims:
        table.add_row(
            c.name, c.test or "—", c.arm or "—", published(c), c.source, c.status or "runnable"
        )
    show(table)


def _plan(claims: list[Claim], runs_dir: Path, sets: list[str], probe: bool, json_: bool) -> None:
    from archaudit.audit.replicating.replicate_run import plan_claims, total_cpu_s

    plans = plan_claims(claims, runs_dir, overrides=sets, probe=probe)
    total, more = total_cpu_s(plans)
    if json_:
        return emit({"claims": [_plan_json(p) for p in plans], "cpu_s": total, "cpu_more_s": more})
    console = Console()
    for p in plans:
        console.print(p.line(), highlight=False)
        for line in p.power:
            console.print(f"  {line}", highlight=False)
    left = sum(p.runs_left for p in plans)
    cost = "not estimated (--no-probe)" if total is None else f"{total / 60:.1f} CPU-min"
    above = f" (+ up to {more / 60:.1f} CPU-min above the stress grids)" if more else ""
    console.print(
        f"total: {left} runs to train, {cost}{above}, by plan's estimates", highlight=False
    )


def _plan_json(plan: ClaimPlan) -> dict[str, object]:
    from dataclasses import asdict

    return {**asdict(plan), "line": plan.line()}


def _table(runs_dir: Path, sets: list[str], out: Path | None, json_: bool) -> None:
    from archaudit.audit.replicating.replicate import list_claims
    from archaudit.audit.replicating.replicate_run import judge_all
    from archaudit.report.replications import block, with_block

    claims = list_claims()
    results = judge_all(claims, runs_dir, overrides=sets)
    if json_:
        return emit([r.to_json() for r in results])
    generated = block(results, claims, str(runs_dir))
    if out is None:
        typer.echo(generated)
        return
    out.write_text(with_block(out.read_text() if out.is_file() else "", generated))
    Console().print(f"wrote the table of {len(results)} claims into {out}", highlight=False)


def results_table(results: list[Replication]) -> Table:
    table = Table(title="replications")
    columns = ("claim", "outcome", "verdict", "estimate", "p (α)", "power", "design", "CPU-min")
    for column in columns:
        table.add_column(column)
    for r in results:
        e = r.evidence
        table.add_row(
            r.claim,
            str(r.outcome),
            e.verdict if e else r.why,
            f"{num(e.estimate, 3)} ({e.measure})" if e else "—",
            f"{pvalue(e.p)} ({num(e.alpha, 3)})" if e else "—",
            (f"{e.power:.2f}" if e.power is not None else "not modelled") if e else "—",
            e.design if e else "—",
            r.cpu_cell(),
        )
    return table
