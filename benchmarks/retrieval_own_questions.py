"""Does a model trained on the retrieval stream answer the stream's own questions?

OlmPool's pilots (docs/replications.md): the greedy answer at each "? key xy is _" in the last
`--chars` characters of a run's training text, whose fact lies inside one context window before
it, counted by the distance from the fact to the answer (16-byte bins). Chance is 0.1 (ten
digits). A diagnostic of whether in-context retrieval formed at all, in distribution, beside
the needle task's accuracy (which measures it on the eval's own haystacks):

    python benchmarks/retrieval_own_questions.py RUN/checkpoint/step-001000 CORPUS.txt
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import torch

from archaudit.model.load import load_model

QUESTION = re.compile(r"\? key (\w\w) is (\d)")
BIN = 16


def own_questions(checkpoint: Path, corpus: Path, chars: int, lines: int) -> dict[int, list[int]]:
    """{distance bin start: [answered, asked]} over the questions of the corpus's tail."""
    model, tokenizer = load_model(checkpoint)
    model.eval()
    context = int(model.cfg.context_length)
    tail = [line for line in corpus.read_text()[-chars:].split("\n") if len(line) > 80][:lines]
    counts: dict[int, list[int]] = {}
    for line in tail:
        for found in QUESTION.finditer(line):
            key, value = found.groups()
            answer = found.end() - 1
            start = max(0, answer - context + 1)
            fact = line.rfind(f"key {key} is {value}.", 0, found.start())
            if fact < start:
                continue  # the fact is outside the window the model sees
            ids = torch.tensor([tokenizer.encode(line[start:answer])])
            with torch.no_grad():
                logits = model.head(model.hidden(ids)[:, -1:])[0, 0]
            bin_ = (answer - fact) // BIN * BIN
            cell = counts.setdefault(bin_, [0, 0])
            cell[0] += tokenizer.decode([int(logits.argmax())]) == value
            cell[1] += 1
    return dict(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--chars", type=int, default=60_000)
    parser.add_argument("--lines", type=int, default=120)
    args = parser.parse_args()
    torch.set_num_threads(1)
    counts = own_questions(args.checkpoint, args.corpus, args.chars, args.lines)
    hit = sum(c[0] for c in counts.values())
    asked = sum(c[1] for c in counts.values())
    bins = ", ".join(f"{b}-{b + BIN - 1} bytes back {h}/{n}" for b, (h, n) in counts.items())
    print(f"own questions answered: {hit}/{asked} = {hit / max(asked, 1):.3f} ({bins})")


if __name__ == "__main__":
    main()
