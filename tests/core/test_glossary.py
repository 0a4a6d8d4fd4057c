"""Every term the console and the report use is defined once (issue 57 finding 6):
src/archaudit/glossary.py is the registry, docs/glossary.md its page, the report's Terms section
its entries, and `stats` ends with a pointer to the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archaudit.errors import ConfigError
from archaudit.glossary import DOC, POINTER, TERMS, link_terms, markdown, term, used_in

REPO = Path(__file__).resolve().parents[2]

NAMED_BY_THE_ISSUE = {
    "calibrated level α′ = 0.00243": "calibrated-level",
    "over the noise panel and this audit's own profile": "noise-panel",
    "noise panel's worst 0.037 (hetero:6, 4000 audits each)": "noise-models",
    "own profile (profile:24:5)": "profile",
    "the robust σ, 1.4826·MAD of the family": "outlier",
    "R7: train it at 2+ scales": "rules",
    "drift √τ_b 0.012": "drift",
    "the mean Δ̂²/Var(Δ̂) is 1.1": "quiet-ladder",
    "prediction: stack": "stack",
    "limits of softpick: grade B (missing: 3+ seeds)": "grade",
    "p_adj 0.00039": "p-adj",
    "MDE 7.8 σ = 0.074 at 80% power": "mde",
}


def test_the_glossary_page_is_current():
    page = (REPO / DOC).read_text(encoding="utf-8")
    assert page == markdown(), "regenerate: python -m archaudit.glossary > docs/glossary.md"


@pytest.mark.parametrize(("text", "anchor"), NAMED_BY_THE_ISSUE.items())
def test_each_word_of_the_issue_has_its_entry(text, anchor):
    assert term(anchor) in used_in([text]), text


def test_anchors_and_names_are_unique_and_links_point_at_them():
    anchors = [t.anchor for t in TERMS]
    assert len(set(anchors)) == len(anchors)
    assert len({t.name for t in TERMS}) == len(TERMS)
    linked = link_terms("welch test; holm at α = 0.05; p_adj is compared with α′")
    targets = re.findall(r'href="#(term-[a-z-]+)"', linked)
    assert targets == ["term-welch", "term-holm", "term-p-adj", "term-calibrated-level"]
    assert (
        re.sub(r"<[^>]+>", "", linked) == "welch test; holm at α = 0.05; p_adj is compared with α′"
    )


def test_every_more_page_exists():
    for t in TERMS:
        assert not t.more or (REPO / t.more).is_file(), (t.anchor, t.more)


def test_an_unknown_term_is_refused_with_a_suggestion():
    with pytest.raises(ConfigError, match="did you mean 'grade'"):
        term("grades")


def test_the_pointer_names_the_page():
    assert POINTER == "terms: docs/glossary.md"
