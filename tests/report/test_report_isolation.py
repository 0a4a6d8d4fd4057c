"""The report reads results and draws them: building one, CSV or audit directory, imports
neither torch nor the model, trainer or evaluation code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("torch", "archaudit.model", "archaudit.train", "archaudit.evals", "archaudit.mods")


def test_building_a_report_leaves_torch_out(results_csv: Path, audit_dir: Path) -> None:
    code = (
        "import json, sys\n"
        "from archaudit.report import build_report\n"
        f"build_report({str(results_csv)!r}, metrics=['val_loss'])\n"
        f"build_report({str(audit_dir)!r}, metrics=['val_loss'])\n"
        f"print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
