"""What the figures say, read back from their SVG: one colour per arm on the whole page, the
power figure's MDE line on its curve at the stated power, and an interval for every arm of a
sequential audit (issue 22, must-show 1)."""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from report_helpers import fake_audit

from archaudit.audit.grid import store
from archaudit.report import Report, build_report
from archaudit.report.data import gather
from archaudit.report.figures import Figure
from archaudit.report.sections import Row
from archaudit.stats.judging.judgement_text import interval_kind

GROUP = re.compile(r'<g id="arm--(?P<arm>[^"]+?)--(?P<what>[^"]*)">(?P<body>.*?)</g>', re.S)
COLOUR = re.compile(r"(?:stroke|fill): (#[0-9a-f]{6})")
PATH = re.compile(r'<g id="(?P<gid>[^"]+)">\s*<path d="(?P<d>[^"]+)"', re.S)


def figures_in(blocks) -> list[Figure]:
    found = []
    for block in blocks:
        found += block.figures if isinstance(block, Row) else [block]
    return [b for b in found if isinstance(b, Figure)]


def page_figures(report: Report) -> list[Figure]:
    return [f for s in report.sections for f in figures_in(s.blocks)]


def arm_colours_in(svg: str) -> dict[str, set[str]]:
    """Arm → the colours of every mark tagged with its name."""
    found: dict[str, set[str]] = defaultdict(set)
    for match in GROUP.finditer(svg):
        found[match["arm"]] |= set(COLOUR.findall(match["body"]))
    return found


def vertices(svg: str, gid: str) -> list[tuple[float, float]]:
    match = next(m for m in PATH.finditer(svg) if m["gid"] == gid)
    numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", match["d"])]
    return list(zip(numbers[::2], numbers[1::2], strict=True))


def test_each_arm_has_one_colour_across_every_figure(audit_report: Report) -> None:
    colours: dict[str, set[str]] = defaultdict(set)
    figures_with: dict[str, set[str]] = defaultdict(set)
    for figure in page_figures(audit_report):
        for arm, seen in arm_colours_in(figure.svg).items():
            colours[arm] |= seen
            figures_with[arm].add(figure.key.split("-")[0])
    arms = {"qk_norm", "post_ln", "geglu", "softpick"}  # 4 arms at 2 scales
    assert arms <= set(colours)
    for arm in arms:
        assert len(colours[arm]) == 1, (arm, colours[arm])
        ranked = any(arm in {a.arm for a in b.arms} for b in audit_report.data.findings.transfers)
        expected = {"forest", "decoupling", "curves", *(["bump"] if ranked else [])}
        assert figures_with[arm] >= expected, arm  # geglu diverged at d48: no rank there
    assert len({next(iter(colours[a])) for a in arms}) == len(arms)  # and no two arms share one
    named = {arm: c.hex for arm, c in audit_report.data.colours.items()}
    assert all(colours[arm] == {named[arm]} for arm in arms)  # the colour key says the same
    key = next(b for b in audit_report.sections[0].blocks if "Colours" in getattr(b, "text", ""))
    assert all(f"{arm} {audit_report.data.colours[arm].name}" in key.text for arm in arms)


def power_gid(svg: str, scale: str, part: str) -> str:
    """The gid of the power figure's `part` for `scale`: scales that ran one design share a
    curve, named after all of them (`power--d48--d64--curve`)."""
    gids = [m["gid"] for m in PATH.finditer(svg) if m["gid"].startswith("power--")]
    return next(g for g in gids if g.endswith(f"--{part}") and scale in g.split("--")[1:-1])


def check_mde_meets_curve(svg: str, scale: str, target: float) -> float:
    """The power at which the MDE line meets the curve, read from the SVG's coordinates: the
    MDE line rises from power 0 to the target, so its two ends give the y scale."""
    (x, y_zero), (_, y_top) = vertices(svg, power_gid(svg, scale, "mde"))
    per_unit = (y_zero - y_top) / target
    curve = vertices(svg, power_gid(svg, scale, "curve"))
    for (x0, y0), (x1, y1) in itertools.pairwise(curve):
        if x0 <= x <= x1:
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0
            return (y_zero - y) / per_unit
    raise AssertionError(f"the MDE line at x = {x} is off the curve of {scale}")


def test_the_power_figures_mde_line_meets_the_curve_at_the_stated_power(
    audit_report: Report,
) -> None:
    power = next(s for s in audit_report.sections if s.key == "power")
    figures = figures_in(power.blocks)
    assert figures
    for case in audit_report.data.power:
        figure = next(f for f in figures if f.key == f"power-{case.metric}")
        target = case.curve.target
        assert check_mde_meets_curve(figure.svg, case.scale, target) == pytest.approx(
            target, abs=0.02
        )
        # the funnel's design MDE and the power table's are the curve's
        verdicts = next(
            v
            for v in audit_report.data.verdicts
            if (v.metric, v.scale) == (case.metric, case.scale)
        )
        assert verdicts.mde == pytest.approx(case.curve.mde_sigmas * case.sigma)


def sequential_audit(root: Path) -> Path:
    """A fake audit whose val_loss families were judged by the sequential loop (its summary
    written as `_finish` writes it), with 4 arms at 2 scales."""
    effects = {"qk_norm": 0.0, "geglu": 0.0, "softpick": 0.0, "post_ln": 0.1}
    audit = fake_audit(root, effects)
    fixed = {(v.metric, v.scale): v for v in gather(audit).verdicts}
    families = []
    for scale in ("d32", "d48"):
        v = fixed[("val_loss", scale)]
        arms = [
            {
                "arm": a.arm,
                "seeds": a.n_seeds,
                "delta": a.delta,
                "t": 0.0,
                "p": a.p,
                "verdict": a.verdict,
                "stopped": "max-seeds",
                "se": v.sigma * (1 / a.n_seeds + 1 / v.baseline_n) ** 0.5,
                "df": v.sigma_dof,
                "threshold": 0.01,
            }
            for a in v.arms
            if a.test
        ]
        families.append(
            {
                "baseline": "baseline",
                "metric": "val_loss",
                "scale": scale,
                "sigma": v.sigma,
                "sigma_dof": v.sigma_dof,
                "baseline_seeds": v.baseline_n,
                "arms": arms,
            }
        )
    rule = {"alpha": 0.05, "max_seeds": 2, "baseline_seeds": 3}
    folder = audit / store.SEQUENTIAL_DIR
    folder.mkdir()
    summary = {"rounds": 1, "runs": 22, "stop": "max-seeds", "rule": rule, "families": families}
    (folder / store.SEQUENTIAL_SUMMARY).write_text(json.dumps(summary))
    return audit


def test_every_arm_of_a_sequential_audit_has_an_interval(tmp_path: Path) -> None:
    report = build_report(sequential_audit(tmp_path), metrics=["val_loss"])
    forests = [f for f in page_figures(report) if f.key.startswith("forest-")]
    assert [f.key for f in forests] == ["forest-val_loss-d32", "forest-val_loss-d48"]
    for figure, scale in zip(forests, ("d32", "d48"), strict=True):
        tagged = {(m["arm"], m["what"]) for m in GROUP.finditer(figure.svg)}
        for arm in ("qk_norm", "geglu", "softpick", "post_ln"):
            assert (arm, f"interval--{scale}") in tagged, (arm, scale)
            assert (arm, f"seeds--{scale}") in tagged, (arm, scale)
    for v in report.data.verdicts:
        assert v.sequential is not None and "repeated confidence interval" in interval_kind(v)
        assert all(a.interval is not None and a.interval[0] < a.delta < a.interval[1]
                   for a in v.arms)  # fmt: skip
    # the power figure is the loop's, says so, and its MDE line still meets its curve
    power = next(f for f in page_figures(report) if f.key == "power-val_loss")
    for case in report.data.power:
        assert case.curve.method.startswith("sequential loop, simulated")
        assert check_mde_meets_curve(power.svg, case.scale, 0.8) == pytest.approx(0.8, abs=0.02)


def test_scales_that_ran_one_design_share_one_curve_and_one_mde_label() -> None:
    from archaudit.audit.results.power_cases import PowerCase
    from archaudit.report.figures import power_curves
    from archaudit.stats.simulation.power import PowerCurve

    curve = PowerCurve(method="sequential", target=0.8, mde_sigmas=7.7,
                       points=((0.0, 0.02), (7.7, 0.8), (12.0, 0.99)))  # fmt: skip
    other = PowerCurve(method="fixed", target=0.8, mde_sigmas=9.1,
                       points=((0.0, 0.02), (9.1, 0.8), (14.0, 0.99)))  # fmt: skip
    cases = [
        PowerCase(
            metric="val_loss",
            scale=scale,
            sigma=0.02,
            arm_seeds=(3,),
            baseline_seeds=3,
            m=4,
            curve=c,
            seeds_for=(),
        )
        for scale, c in (("d48", curve), ("d64", curve), ("d96", other))
    ]
    svg = power_curves("power-val_loss", "val_loss", cases).svg
    gids = sorted(m["gid"] for m in PATH.finditer(svg) if m["gid"].startswith("power--"))
    assert [g for g in gids if g.endswith("--mde")] == ["power--d48--d64--mde", "power--d96--mde"]
    assert power_gid(svg, "d64", "curve") == "power--d48--d64--curve"
