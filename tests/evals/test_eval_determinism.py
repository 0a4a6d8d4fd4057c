"""Same recipe, same bytes: the embedded corpus, every generated evaluation item and an
evaluation's numbers are identical in processes with different string-hash seeds
(`PYTHONHASHSEED`), so an audit's arms, machines and reruns see the same data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HASH_SEEDS = ("1", "2", "3")

# Runs in a fresh interpreter: sha256 of the corpus, of its BPE tokens, of each probe generator's
# examples, and of the items of every generated task format (a byte-level stand-in model sizes
# the long-context prompts; nothing is scored). Item ids and groups are part of the digest.
DIGESTS = r"""
import hashlib, json, random
from pathlib import Path
from archaudit.data import probes, synthetic
from archaudit.data.tokenizers import ByteTokenizer, load_tokenizer
from archaudit.evals import FORMATS, TaskSpec
from archaudit.evals.suites import TokenizerOnly
from archaudit.evals.tasks import LoadContext, load_items

def sha(obj):
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()

text = synthetic.generate(200_000, 1234)
out = {"corpus": hashlib.sha256(text.encode()).hexdigest()}
bpe = load_tokenizer("bpe:400", lambda: [text[:50_000]])  # Rust hash maps: seeded per process
out["bpe"] = sha(bpe.encode(text[:20_000]))
for name in probes.PROBES:
    rng = random.Random(1234)
    out[f"probe/{name}"] = sha([vars(probes.PROBES.get(name)(rng)) for _ in range(300)])
context = LoadContext(data_root=Path("."), limit=90, model=TokenizerOnly(ByteTokenizer(), 64))
for fmt in FORMATS:
    if not FORMATS.get(fmt).generated or fmt == "lm_eval":
        continue  # lm_eval's items are lm-eval's task over a data file, not a seeded generator
    generators = probes.PROBES if fmt == "probe" else [None]
    for g in generators:
        p = {"seed": 5} if g is None else {"generator": g, "seed": 5}
        items = load_items(TaskSpec(name=fmt, format=fmt, params=p), context)
        key = f"items/{fmt}/{p.get('generator', '')}"
        out[key] = sha([[i.id, i.group, i.contexts, i.continuations, i.gold] for i in items])
print(json.dumps(out))
"""


def in_processes(code: str, *args: str) -> list[str]:
    """Stdout of `code` (or of the CLI with `args`, where "{seed}" is replaced) run at once in
    one fresh interpreter per hash seed, with this source tree."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, *(a.replace("{seed}", seed) for a in args)],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": src},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in HASH_SEEDS
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out)
    return outputs


def test_corpus_and_generated_items_do_not_depend_on_the_hash_seed():
    digests = [json.loads(out) for out in in_processes(DIGESTS)]
    assert {"corpus", "probe/associative_recall", "items/long_context/"} <= set(digests[0])
    for name in digests[0]:
        values = {d[name] for d in digests}
        assert len(values) == 1, f"{name} differs between PYTHONHASHSEED={HASH_SEEDS}: {values}"


CLI = "from archaudit.cli import main; main()"


def test_evaluation_numbers_do_not_depend_on_the_hash_seed(trained_run: Path, tmp_path: Path):
    """Every task's numbers and every item's log-likelihoods, not only the accuracies (which a
    barely trained model can get equal on different items)."""
    out = str(tmp_path / "eval-{seed}.json")
    in_processes(
        CLI, "eval", str(trained_run), "--suite", "demo", "--limit", "8", "--out", out, "-q"
    )
    results = []
    for seed in HASH_SEEDS:
        result = json.loads(Path(out.replace("{seed}", seed)).read_text())
        results.append({"metrics": result["metrics"], "tasks": result["tasks"]})
    assert len(results[0]["tasks"]["associative_recall"]["items"]) == 8
    for result in results[1:]:
        assert result == results[0]
