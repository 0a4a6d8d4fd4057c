"""One module owns the run-directory layout (`archaudit.rundir`), and the evaluators load a
trained model without importing the trainer."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import archaudit
from archaudit.rundir import checkpoint_dirs, checkpoint_name, checkpoint_step, run_dir_of

SRC = Path(archaudit.__file__).parent
# Quoted run-directory names, or checkpoint folder names built by hand.
SPELLED = re.compile(
    r"""["'](spec\.json|env\.json|metrics\.jsonl|events\.jsonl|evals\.json|train\.json|run\.json"""
    r"""|attempts\.jsonl|DONE|FAILED|claim\.|checkpoint|state\.pt|model\.safetensors"""
    r"""|train_state\.pt|SHA256SUMS)["']|["']step-"""
)


def test_no_module_but_rundir_spells_a_run_directory_name():
    spelled = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "rundir.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SPELLED.search(line)
    ]
    assert spelled == []


def test_checkpoint_folders_are_named_and_listed_by_step(tmp_path: Path):
    assert checkpoint_name(7) == "step-000007" and checkpoint_step("step-000007") == 7
    assert checkpoint_step("step-1234567") == 1234567
    folder = tmp_path / "checkpoint"
    for name in ("step-1000000", "step-000020", "step-000100", ".tmp-step-000200-9", "step-x"):
        (folder / name).mkdir(parents=True)
    (folder / "step-000300").write_text("a file, not a checkpoint")
    assert [p.name for p in checkpoint_dirs(tmp_path)] == [
        "step-000020",
        "step-000100",
        "step-1000000",  # by step, not by name: past a million steps the padding runs out
    ]
    assert run_dir_of(folder / "step-000020") == tmp_path and run_dir_of(tmp_path) == tmp_path


def test_loading_a_model_for_evaluation_does_not_import_the_trainer(tmp_path: Path):
    """The archaudit adapter loads lazily; load it (here on a non-run, which fails after the
    import) and look at what came in."""
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from archaudit.errors import DataError
        from archaudit.evals.models import ADAPTERS
        try:
            ADAPTERS.get("archaudit").load(Path(sys.argv[1]), "cpu")
        except DataError:
            pass
        above = ("archaudit.train", "archaudit.audit")
        print(sorted(m for m in sys.modules if m.startswith(above)))
        print("loaded" if "safetensors" in sys.modules else "the loader did not run")
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "loaded"]
