"""The simulation entries the package ships (`stats/simulation/shipped/`), regenerated.

    python -m archaudit.devtools.shipped_cache           # check: exit 1 when they differ
    python -m archaudit.devtools.shipped_cache --write   # rewrite them

A first `plan` on a fresh machine would otherwise calibrate its design's level α′ and simulate
its loop (`stats/simulation/calibrate.py`, `plan_power.py`): 18 CPU-seconds for the README's
20-arm starter, 439 s of wall at a load of 12-16 (issue 57). This runs `plan FILE --no-probe`,
with and without `--until-settled`, on each of `AUDITS` (both `archaudit init` starters and the
demo) in one fresh cache with the shipped entries ignored, then the demo itself (its verdicts
judge the designs its loop ended with), and takes every `stats/` entry they wrote: about 4
CPU-minutes. Rerun it with `--write` after a change of CALIBRATION_VERSION, SIMULATION_VERSION,
the loop's versions, the starters or the demo: `tests/stats/test_stats_shipped_cache.py` fails
until then.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from archaudit.stats.simulation.disk_cache import NO_SHIPPED, SHIPPED

README_ARMS = ("suite:audit2026",)
"""The arms of the README's worked audit (`archaudit init my_audit.toml --arms ...`)."""


@dataclass(frozen=True)
class Audit:
    """An audit file whose first `plan` the shipped entries serve: its name and how to write
    it into a folder."""

    name: str
    write: Callable[[Path], Path]


def _starter(arms: tuple[str, ...]) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        from archaudit.audit.setup.starter import DEFAULT_ARMS, write_starter

        return write_starter(folder / "my_audit.toml", arms=arms or DEFAULT_ARMS, force=True)

    return write


def _demo(folder: Path) -> Path:
    from archaudit.audit.execute.demo import DEMO_FILE

    return DEMO_FILE


AUDITS = (
    Audit("init's default starter", _starter(())),
    Audit("the README's starter (--arms suite:audit2026)", _starter(README_ARMS)),
    Audit("the demo", _demo),
)
PLANS = ((), ("--until-settled",))
"""`plan --no-probe` is run with each of these."""


def generate(cache: Path) -> dict[str, bytes]:
    """Every `stats/` entry the plans of `AUDITS` write into the fresh `cache`, by name."""
    env = {**os.environ, "ARCHAUDIT_CACHE": str(cache), NO_SHIPPED: "1"}
    with tempfile.TemporaryDirectory(prefix="archaudit-shipped-") as tmp:
        for audit in AUDITS:
            folder = Path(tmp) / str(AUDITS.index(audit))
            folder.mkdir()
            path = audit.write(folder)
            for extra in PLANS:
                command = [sys.executable, "-m", "archaudit", "plan", str(path), "--no-probe"]
                command += ["--runs-dir", str(folder / "runs"), *extra]
                print(f"{audit.name}: plan {' '.join(command[4:])}", file=sys.stderr, flush=True)
                subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        # The demo's own verdicts judge the designs its loop ended with, which `plan` does not
        # see: run it once, as `make demo` does, so that a first demo simulates nothing either.
        demo = [sys.executable, "-m", "archaudit", "demo", "--quiet", "--runs-dir", tmp]
        print(f"the demo: {' '.join(demo[3:])}", file=sys.stderr, flush=True)
        subprocess.run(demo, env=env, check=True, stdout=subprocess.DEVNULL)
    return {path.name: path.read_bytes() for path in sorted((cache / "stats").glob("*.json"))}


def shipped() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(SHIPPED.glob("*.json"))}


def write(entries: dict[str, bytes]) -> None:
    """Replace the shipped entries with `entries`."""
    SHIPPED.mkdir(exist_ok=True)
    for path in SHIPPED.glob("*.json"):
        if path.name not in entries:
            path.unlink()
    for name, data in entries.items():
        (SHIPPED / name).write_bytes(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the shipped entries")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="archaudit-cache-") as cache:
        entries = generate(Path(cache))
    if args.write:
        write(entries)
        print(f"wrote {len(entries)} entries into {SHIPPED}")
        return 0
    now = shipped()
    missing = sorted(set(entries) - set(now))
    stale = sorted(set(now) - set(entries))
    for name in missing:
        print(f"missing: {name}")
    for name in stale:
        print(f"not needed: {name}")
    if missing or stale:
        print("run `python -m archaudit.devtools.shipped_cache --write`")
        return 1
    print(f"the {len(now)} shipped entries are the ones plan needs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
