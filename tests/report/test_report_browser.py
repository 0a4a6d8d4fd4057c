"""The report in a real browser (Debian's headless chromium, installed by `make test-slow`):
every figure renders, every in-page reference resolves, the console stays silent, the page
fits a phone's width, and a full-page screenshot is not blank. A broken page run through the
same checks fails them, so the checks can fail.

Set ARCHAUDIT_REPORT_SCREENSHOTS=DIR to keep the screenshots."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from archaudit.report import Report
from archaudit.report.build import write_html

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
# Injected into a copy of the page (the report itself has no script): after load, it writes
# what it measured into the DOM, which --dump-dom prints.
CHECK = """<script>
window.addEventListener('load', () => {
  const svgs = [...document.querySelectorAll('figure svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {w: r.width, h: r.height, shapes: s.querySelectorAll('path, use').length};
  });
  const images = [...document.images].map(i => i.complete && i.naturalWidth > 0);
  const refs = [...document.querySelectorAll('[href^="#"]')].map(e => e.getAttribute('href'));
  const clips = [...document.querySelectorAll('[clip-path]')]
    .map(e => e.getAttribute('clip-path').slice(4, -1));
  const broken = [...refs, ...clips].filter(h => !document.getElementById(h.slice(1)));
  const answers = [...document.querySelectorAll('th')]
    .filter(th => ['verdict', 'decoupled'].includes(th.textContent))
    .map(th => th.getBoundingClientRect().right);
  const out = document.createElement('pre');
  out.id = 'archaudit-check';
  out.textContent = JSON.stringify({svgs, images, broken, answers,
    height: document.documentElement.scrollHeight, width: window.innerWidth,
    overflow: document.documentElement.scrollWidth - window.innerWidth});
  document.body.appendChild(out);
});
</script>"""


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )


def measure(page: Path, tmp: Path, width: int) -> dict:
    """Load a copy of `page` with the check script; return what it measured."""
    probe = page.with_name(page.stem + ".check.html")
    probe.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
    done = chromium(
        probe, tmp / f"profile-check-{width}", f"--window-size={width},900",
        "--virtual-time-budget=10000", "--dump-dom",
    )  # fmt: skip
    found = re.search(r'<pre id="archaudit-check">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(found.group(1))


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def screenshot(page: Path, tmp: Path, width: int, height: int) -> tuple[np.ndarray, list[str]]:
    shot = tmp / f"{page.stem}-{width}.png"
    done = chromium(
        page, tmp / f"profile-shot-{width}", f"--window-size={width},{height}",
        f"--screenshot={shot}",
    )  # fmt: skip
    assert shot.is_file(), done.stderr[-2000:]
    keep = os.environ.get("ARCHAUDIT_REPORT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return np.asarray(Image.open(shot).convert("L"), dtype=float), console_messages(done.stderr)


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test-slow installs it)")


@pytest.mark.parametrize("name", ["audit_report", "csv_report"])
def test_report_renders_in_chromium(name: str, request, tmp_path: Path) -> None:
    report: Report = request.getfixturevalue(name)
    page = write_html(report, tmp_path / f"{name}.html")
    figures = report.html().count("<figure>")

    desktop = measure(page, tmp_path, 1280)
    assert len(desktop["svgs"]) == figures >= 6
    for svg in desktop["svgs"]:
        assert svg["w"] > 300 and svg["h"] > 100 and svg["shapes"] > 10, svg
    assert all(desktop["images"]) and desktop["broken"] == []
    phone = measure(page, tmp_path, 390)
    assert phone["overflow"] <= 0, "the page is wider than a phone's screen"
    assert phone["width"] <= 500  # headless chromium's narrowest window
    assert all(svg["w"] <= phone["width"] for svg in phone["svgs"]), (phone["width"], phone["svgs"])
    # every arm table's verdict (and decoupled) column is on a phone's screen without scrolling
    assert phone["answers"] and max(phone["answers"]) <= phone["width"], phone["answers"]

    pixels, console = screenshot(page, tmp_path, 1280, desktop["height"])
    assert console == []
    assert pixels.shape == (desktop["height"], 1280)
    assert pixels.std() > 20  # not blank: text, lines and coloured markers on white
    assert (pixels < 128).mean() > 0.005  # some ink on the page
    _, console = screenshot(page, tmp_path, 390, phone["height"])
    assert console == []


def test_the_checks_fail_on_a_broken_page(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><figure><svg width="0" height="0"></svg></figure>'
        '<img src="missing.png"><a href="#nowhere">x</a>'
        '<div style="width:2000px">wide</div><script>console.error("boom")</script></body></html>'
    )
    measured = measure(page, tmp_path, 390)
    assert measured["svgs"][0]["w"] == 0
    assert measured["images"] == [False]
    assert measured["broken"] == ["#nowhere"]
    assert measured["overflow"] > 0
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    pixels, _ = screenshot(blank, tmp_path, 400, 300)
    assert pixels.std() == 0
    _, console = screenshot(page, tmp_path, 400, 300)
    assert any('"boom"' in line for line in console)
