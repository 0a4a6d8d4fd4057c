"""The HTML report is self-contained: no URL of any kind, no script, no font, no stylesheet or
image from elsewhere. The figures are inline SVG whose `xmlns` declarations (namespace names
that look like URLs but are never fetched) are dropped, since the HTML parser puts <svg> in the
SVG namespace by itself; so the scan below can forbid every "http:" with no exception."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from archaudit.report import Report

FORBIDDEN = {
    "an http(s) URL": re.compile(r"\bhttps?:", re.I),
    "another URL scheme": re.compile(r"\b(?:ftp|file|wss?)://|\bjavascript:", re.I),
    "a protocol-relative URL": re.compile(r"""(?:^|[\s"'(=])//[^\s/]""", re.M),
    "an @import": re.compile(r"@import", re.I),
    "a font": re.compile(r"@font-face|\.woff2?\b|\.ttf\b|\.otf\b", re.I),
    "a url() that is not a fragment": re.compile(r"url\(\s*['\"]?(?!#)", re.I),
    "a namespace declaration": re.compile(r"\bxmlns\b", re.I),
}
LINKING_TAGS = {"script", "link", "iframe", "object", "embed", "img", "base", "meta"}
URL_ATTRIBUTES = {"href", "src", "srcset", "action", "formaction", "poster", "data", "background"}


class _References(HTMLParser):
    """Every tag that can load something and every URL-valued attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in LINKING_TAGS and not (tag == "meta" and _harmless_meta(attrs)):
            self.tags.append(tag)
        for name, value in attrs:
            if name.split(":")[-1] in URL_ATTRIBUTES:
                self.urls.append(value or "")


def _harmless_meta(attrs: list[tuple[str, str | None]]) -> bool:
    names = {name for name, _ in attrs}
    return names in ({"charset"}, {"name", "content"}) and dict(attrs).get("name") != "refresh"


def external_references(html: str) -> list[str]:
    """What in `html` could make a browser reach outside the file (empty when nothing)."""
    found = [f"{what}: {m.group(0)!r}" for what, rx in FORBIDDEN.items() for m in rx.finditer(html)]
    parser = _References()
    parser.feed(html)
    found += [f"a <{tag}> tag" for tag in parser.tags]
    found += [f"a link to {url!r}" for url in parser.urls if not url.startswith("#")]
    return found


@pytest.mark.parametrize(
    "bad",
    [
        '<img src="https://example.org/x.png">',
        '<img src="x.png">',
        '<a href="//cdn.example.org/x">x</a>',
        "<style>@import 'x.css';</style>",
        "<style>@font-face { font-family: f; src: local(f); }</style>",
        "<style>body { background: url(x.png); }</style>",
        '<svg xmlns="http://www.w3.org/2000/svg"></svg>',
        '<link rel="stylesheet" href="#x">',
        "<script>1</script>",
        '<a href="HTTP://example.org">x</a>',
        '<use href="data:image/svg+xml,abc"/>',
    ],
)
def test_the_scan_catches_every_kind_of_reference(bad: str) -> None:
    assert external_references(f"<p>ok</p>{bad}")


def test_the_scan_allows_in_page_links_and_fragment_urls() -> None:
    ok = '<a href="#forest">x</a><g clip-path="url(#f-p1)"><use href="#f-g1"/></g>'
    assert external_references(ok) == []


@pytest.mark.parametrize("name", ["csv_report", "audit_report"])
def test_report_html_has_no_external_reference(name: str, request) -> None:
    report: Report = request.getfixturevalue(name)
    html = report.html()
    assert html.count("<svg") >= 6  # the figures are there, inline
    assert external_references(html) == []


def test_figure_ids_are_unique_and_every_reference_resolves(audit_report: Report) -> None:
    html = audit_report.html()
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    targets = re.findall(r'href="#([^"]+)"', html) + re.findall(r"url\(#([^)]+)\)", html)
    assert targets and set(targets) <= set(ids)
