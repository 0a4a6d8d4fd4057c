"""What `stress --plan` says a sweep will cost in time: the probe's estimate of the runs still to
train (as `archaudit plan` makes it) and of the runs the rates above the grid may add.

Its CPU is the runs' (each arm's training step scaled by its measured CPU ratio, not its wall
ratio: `estimate.Part.cpu_ratio`) and the command's own start with its warm server's preload
(`probe.audit_start`, measured once per machine): the parts measured missing from the estimate
on the stress sweeps of issue 54 (docs/stability.md, "Cost against the plan")."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from archaudit.audit.stability.stress import StressPlan


@dataclass(frozen=True)
class StressTime:
    """Seconds of the sweep's runs left to train, on the executor's `workers`."""

    wall_s: float
    cpu_s: float
    """The runs' CPU and `start_cpu_s`."""
    above_grid_wall_s: float
    """At most, for the rates above the grid (each run costs as one of the grid's sweep runs)."""
    above_grid_cpu_s: float
    workers: int
    start_cpu_s: float = 0.0
    """The command's own start and its warm server's preload, in CPU seconds."""

    def line(self) -> str:
        more = (
            f"; the runs above the grid up to {self.above_grid_wall_s / 60:.1f} min more "
            f"({self.above_grid_cpu_s / 60:.1f} CPU-min)"
            if self.above_grid_cpu_s
            else ""
        )
        return (
            f"about {self.wall_s / 60:.1f} min on {self.workers} workers ({self.cpu_s / 60:.1f} "
            f"CPU-min with the command's start, {self.start_cpu_s:.0f} CPU-s; measured here by "
            f"the probe){more}"
        )

    def to_json(self) -> dict[str, float | str]:
        data = asdict(self)
        del data["workers"]
        return {
            "estimated_wall_s": data.pop("wall_s"),
            "estimated_cpu_s": data.pop("cpu_s"),
            **data,
            "time": self.line(),
        }


def stress_time(plan: StressPlan) -> StressTime | None:
    """The probe's time of the runs `plan` has left (measured here unless cached), and of the
    runs the rates above the grid may add; None when nothing is left or the probe cannot tell."""
    from archaudit.audit.planning.estimate import plan_summary

    if not plan.plan.runs:
        return None
    summary = plan_summary(plan.plan, probe=True, loop=False)  # a grid: runs, no loop to judge
    wall, cpu = summary.estimated_wall_s, summary.estimated_cpu_s
    if wall is None or cpu is None:
        return None
    swept = {p.run.path for p in plan.points if p.kind == "lr"}
    each = [r.cost for r in summary.runs if r.run.path in swept and r.cost.seconds is not None]
    share = plan.above_left / max(len(each), 1)
    start = summary.audit_start_cpu_s or 0.0
    return StressTime(
        wall_s=wall,
        cpu_s=cpu + start,
        above_grid_wall_s=share * sum(c.seconds or 0.0 for c in each) / summary.workers,
        above_grid_cpu_s=share * sum(c.cpu_seconds or 0.0 for c in each),
        workers=summary.workers,
        start_cpu_s=start,
    )
