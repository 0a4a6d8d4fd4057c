"""A report written while an extra seed trains (`status --report`) draws its bands from the
finished seeds (issue 57 finding 5): the seed in progress, 7 steps into 20, dropped the baseline
from "training loss, last third" (no step common to its last third and theirs) and cut softpick's
validation band at the step it had reached, although three seeds of each had finished."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from report_helpers import AUDIT_TOML, fake_audit

from archaudit.audit.grid import store
from archaudit.report.data import bands, gather

THREE_SEEDS = AUDIT_TOML.replace("arms = 2", "arms = 3")
STEPS = 20
"""The fake runs' last step (report_helpers.fake_audit)."""


def extra_seed_in_progress(audit: Path, arm: str, scale: str, steps: int) -> None:
    """A fourth seed of `arm` at `scale` that has trained `steps` steps: no DONE yet."""
    source = audit / arm / scale / "seed-0"
    target = audit / arm / scale / "seed-3"
    shutil.copytree(source, target)
    (target / store.DONE).unlink()
    spec = json.loads((target / store.RUN_FILE).read_text())
    (target / store.RUN_FILE).write_text(json.dumps({**spec, "seed": 3}))
    rows = (target / store.METRICS).read_text().splitlines()[:steps]
    (target / store.METRICS).write_text("".join(row + "\n" for row in rows))


@pytest.fixture(scope="module")
def mid_audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mid")
    audit = fake_audit(root, {"softpick": -0.003, "qk_norm": 0.0}, audit_toml=THREE_SEEDS)
    for arm in ("baseline", "softpick"):
        extra_seed_in_progress(audit, arm, "d48", steps=7)
    return audit


@pytest.mark.parametrize("kind", ["train", "val"])
def test_bands_come_from_the_finished_seeds(mid_audit, kind):
    data = gather(mid_audit)
    running = {(c.arm, c.seed) for c in data.curves if c.scale == "d48" and len(c.steps) < STEPS}
    assert running == {("baseline", 3), ("softpick", 3)}  # their curves are read
    drawn = {band.arm: band for band in bands(data.curves, "d48", kind)}
    assert set(drawn) == {"baseline", "softpick", "qk_norm"}
    for band in drawn.values():
        assert band.seeds == 3
        assert band.steps[-1] == STEPS
    if kind == "train":
        assert drawn["baseline"].steps[0] >= 2 / 3 * STEPS


def test_the_page_says_runs_in_progress_are_left_out(mid_audit):
    from archaudit.report import build_report

    page = build_report(mid_audit).html()
    assert "runs still training, are left out of the bands" in page
    assert "curves-d48-loss" in page
