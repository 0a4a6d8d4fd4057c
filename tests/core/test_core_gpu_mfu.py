"""benchmarks/gpu_mfu.py is ready for a GPU machine: at the tiny CPU size it runs end to end."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_mfu.py"


def test_gpu_mfu_runs_at_tiny_size_and_prints_a_row_per_arm():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--size", "tiny", "--arms", "baseline", "softpick"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    assert re.search(r"matmul peak [0-9.]+ [GT]FLOP/s", out)
    for arm in ("baseline", "softpick"):
        row = re.search(rf"^{arm}\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)%$", out, re.M)
        assert row, out
        assert int(row[1].replace(",", "")) > 0 and 0 < float(row[4]) <= 100
