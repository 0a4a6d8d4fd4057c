"""SmolLM2-135M (4-bit GGUF) on benchmarks read from their published files, item for item
against lm-evaluation-harness's own task definitions (slow set).

Must-show 1: PIQA from valid.jsonl + valid-labels.lst through the `published` suite, against
lm-eval's piqa.yaml scored by lm-eval's own `hf` model. Must-show 2: TruthfulQA MC1 and MC2
from mc_task.json against lm-eval's truthfulqa_mc1/mc2.yaml (its prompt, choices and
`process_results_mc2`). Must-show 3: held-out loss equals lm-eval's `loglikelihood_rolling`.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from eval_helpers import SHARED_DATA

from archaudit.evals import evaluate, heldout_loss, load_scoring_model, load_suite
from archaudit.evals.suites import Suite

pytestmark = pytest.mark.slow

GGUF = "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"
PIQA_ITEMS, TQA_QUESTIONS = 120, 50


@pytest.fixture(scope="module")
def smollm():
    if not (SHARED_DATA / GGUF).is_file():
        pytest.skip("../shared/data is absent")
    for module in ("transformers", "gguf", "accelerate", "lm_eval"):
        pytest.importorskip(module)
    return load_scoring_model(SHARED_DATA / GGUF)


def _lm_eval_task(folder: Path, name: str, include: str, data: Path) -> None:
    """lm-eval's own task YAML (`include`d from the installed package: prompt, choices,
    target, metrics, process_results) over a local JSON-lines copy of the data."""
    import lm_eval

    tasks = Path(lm_eval.__file__).parent / "tasks"
    (folder / f"{name}.yaml").write_text(
        f"include: {tasks / include}\ntask: {name}\ntag: []\ndataset_path: json\n"
        f"dataset_name: null\ndataset_kwargs:\n  data_files:\n    validation: {data}\n"
        "validation_split: validation\ntraining_split: null\ntest_split: null\n"
    )


def _samples(run: dict, task: str) -> dict[int, dict]:
    return {s["doc_id"]: s for s in run["samples"][task]}


def _published(names: list[str], limit: int) -> Suite:
    suite = load_suite("published")
    tasks = tuple(t for t in suite.tasks if t.name in names)
    return Suite(name="published", tasks=tuple(replace(t, limit=limit) for t in tasks))


@pytest.mark.timeout(1800)  # two model loads and lm-eval's unshared prefixes on a 2-core CPU
def test_piqa_from_its_release_agrees_with_lm_eval_item_for_item(smollm, tmp_path: Path):
    from archaudit.evals.lmeval_adapter import run_local_task

    ours = evaluate(
        smollm, _published(["piqa"], PIQA_ITEMS), data_root=SHARED_DATA, show_progress=False
    ).tasks["piqa"]
    folder = SHARED_DATA / "benchmarks/piqa_ybisk"
    docs = [json.loads(line) for line in (folder / "valid.jsonl").read_text().splitlines()]
    labels = (folder / "valid-labels.lst").read_text().split()
    data = tmp_path / "piqa.jsonl"  # lm-eval's form of the data: the label inside the record
    data.write_text(
        "".join(
            json.dumps({**d, "label": int(x)}) + "\n" for d, x in zip(docs, labels, strict=True)
        )
    )
    _lm_eval_task(tmp_path, "piqa_local", "piqa/piqa.yaml", data)
    hf_args = f"pretrained={(SHARED_DATA / GGUF).parent},gguf_file={Path(GGUF).name},dtype=float32"
    run = run_local_task(
        "hf", "piqa_local", tmp_path, limit=PIQA_ITEMS, model_args=hf_args, device="cpu",
        batch_size=32,
    )  # fmt: skip
    theirs = _samples(run, "piqa_local")
    assert len(theirs) == len(ours.items) == PIQA_ITEMS
    gaps = []
    for k, item in enumerate(ours.items):
        lls = [ll for ll, _ in theirs[k]["filtered_resps"]]
        gaps += [abs(a - b) for a, b in zip(item.logprobs, lls, strict=True)]
        assert bool(item.correct) == bool(theirs[k]["acc"]), k
        assert bool(item.correct_norm) == bool(theirs[k]["acc_norm"]), k
    metrics = run["results"]["piqa_local"]
    assert metrics["acc,none"] == pytest.approx(ours.acc.value, abs=1e-12)
    assert metrics["acc_norm,none"] == pytest.approx(ours.acc_norm.value, abs=1e-12)
    print(
        f"PIQA {PIQA_ITEMS}: acc {ours.acc.value:.3f} acc_norm {ours.acc_norm.value:.3f}, "
        f"max |Δ loglik| {max(gaps):.2e}"
    )
    assert max(gaps) < 5e-3


@pytest.mark.timeout(1800)  # 50 questions × ~17 choices behind a 6-shot primer, twice
def test_truthfulqa_mc1_and_mc2_agree_with_lm_eval_per_question(smollm, tmp_path: Path):
    """lm-eval's task logic (its prompt, choices and process_results_mc2), scored through the
    `archaudit` adapter so both sides read the same log-likelihoods for their own requests."""
    from archaudit.evals.lmeval_adapter import ArchauditHarnessLM, run_local_task

    names = ["truthfulqa_mc1", "truthfulqa_mc2"]
    ours = evaluate(
        smollm, _published(names, TQA_QUESTIONS), data_root=SHARED_DATA, show_progress=False
    ).tasks
    questions = json.loads((SHARED_DATA / "benchmarks/truthfulqa/mc_task.json").read_text())
    data = tmp_path / "tqa.jsonl"  # the Hugging Face dataset's form: {choices, labels} lists
    data.write_text(
        "".join(
            json.dumps(
                {"question": q["question"]}
                | {
                    key: {"choices": list(q[key]), "labels": list(q[key].values())}
                    for key in ("mc1_targets", "mc2_targets")
                }
            )
            + "\n"
            for q in questions[:TQA_QUESTIONS]
        )
    )
    _lm_eval_task(tmp_path, "tqa_mc1_local", "truthfulqa/truthfulqa_mc1.yaml", data)
    _lm_eval_task(tmp_path, "tqa_mc2_local", "truthfulqa/truthfulqa_mc2.yaml", data)
    harness = ArchauditHarnessLM(model=smollm)
    for name, task in (("truthfulqa_mc1", "tqa_mc1_local"), ("truthfulqa_mc2", "tqa_mc2_local")):
        run = run_local_task(harness, task, tmp_path, limit=TQA_QUESTIONS)
        theirs = _samples(run, task)
        mine = ours[name]
        assert len(theirs) == len(mine.items) == TQA_QUESTIONS
        per_question = [
            mine.items[k].mc2 if name.endswith("mc2") else float(mine.items[k].correct)
            for k in range(TQA_QUESTIONS)
        ]
        gaps = [abs(per_question[k] - float(theirs[k]["acc"])) for k in range(TQA_QUESTIONS)]
        score = run["results"][task]["acc,none"]
        print(
            f"{name} {TQA_QUESTIONS}: ours {mine.score:.4f} lm-eval {score:.4f}, "
            f"max per-question |Δ| {max(gaps):.1e}"
        )
        assert max(gaps) < 1e-4, name
        assert mine.score == pytest.approx(score, abs=1e-5)


@pytest.mark.timeout(1800)
def test_heldout_loss_equals_lm_eval_loglikelihood_rolling(smollm, tmp_path: Path):
    """A 256-token window (so the text spans several, and the last one is partial), on both
    sides: lm-eval's `hf` model with max_length=256 and ours at the same length."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    text = (SHARED_DATA / "corpora/tinyshakespeare/input.txt").read_text()[:6000]
    model = copy.copy(smollm)  # the cached model keeps its own length
    model.max_length = 256
    ours = heldout_loss(model, text, token_budget=100_000, show_progress=False)
    assert (ours.window, ours.stride, ours.context) == (256, 256, 1) and ours.windows > 4
    lm = HFLM(
        pretrained=str((SHARED_DATA / GGUF).parent), gguf_file=Path(GGUF).name,
        dtype="float32", max_length=256, batch_size=8, device="cpu",
    )  # fmt: skip
    request = Instance("loglikelihood_rolling", doc={}, arguments=(text,), idx=0)
    (theirs,) = lm.loglikelihood_rolling([request], disable_tqdm=True)
    ours_total = -ours.loss * ours.tokens
    print(
        f"held-out {ours.tokens} tokens, {ours.windows} windows: ours {ours_total:.4f}, "
        f"lm-eval {theirs:.4f} nats"
    )
    assert ours.tokens == len(lm.tok_encode(text))
    assert math.isclose(ours_total, theirs, rel_tol=1e-4)
