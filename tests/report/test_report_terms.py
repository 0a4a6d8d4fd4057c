"""The report defines the words it uses (issue 57 finding 6): a Terms section with the
glossary's entry of each term on the page, and every use of a term links to its entry."""

from __future__ import annotations

import html
import re

from archaudit.glossary import term


def test_every_term_link_lands_on_an_entry(audit_report):
    page = audit_report.html()
    links = set(re.findall(r'href="#(term-[a-z-]+)"', page))
    entries = set(re.findall(r'<dt id="(term-[a-z-]+)"', page))
    assert links, "no term is linked"
    assert links <= entries, links - entries
    for anchor in ("calibrated-level", "noise-panel", "grade", "mde"):
        assert term(anchor).html_id in links


def test_the_terms_section_closes_the_page_and_its_contents(audit_report):
    assert audit_report.sections[-1].key == "terms"
    page = audit_report.html()
    assert '<a href="#terms">Terms</a>' in page
    assert html.escape(term("calibrated-level").definition) in page


def test_the_markdown_twin_lists_the_terms(audit_report):
    text, _ = audit_report.markdown("figures")
    assert "## Terms" in text and "**calibrated level α′**" in text
