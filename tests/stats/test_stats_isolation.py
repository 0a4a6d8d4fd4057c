"""`archaudit.stats` imports neither torch nor the training side of the package (scipy, its
distributions library, is allowed; statsmodels stays a test-only reference)."""

import json
import subprocess
import sys

FORBIDDEN = (
    "torch",
    "statsmodels",
    "archaudit.model",
    "archaudit.train",
    "archaudit.evals",
    "archaudit.mods",
    "archaudit.audit",
)


def test_importing_stats_leaves_torch_out():
    code = (
        "import json, sys\n"
        "import archaudit.stats\n"
        "from archaudit.stats import judge, simulate_null, fit_scaling_law\n"
        f"print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(output) == []
    assert "torch" in FORBIDDEN
