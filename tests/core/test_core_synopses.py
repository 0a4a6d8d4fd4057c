"""Issue 56 item 5: the synopses of docs/commands are generated from the command tree
(`archaudit.devtools.synopses`), so a flag added to an option class shows on every page whose
commands take it, and a page cannot fall behind its command."""

from __future__ import annotations

import shutil

from archaudit.devtools import synopses


def test_the_committed_synopses_are_the_generated_ones():
    stale = synopses.stale_pages()
    assert not stale, f"regenerate with python -m archaudit.devtools.synopses: {stale}"


def test_every_command_is_on_its_page_with_every_flag():
    blocks = synopses.blocks()
    for path, command in synopses.commands():
        block = blocks[path[0]]
        assert " ".join(("archaudit", *path)) in block, path
        for param in command.params:
            if param.opts[0].startswith("--") and param.opts[0] != "--help":
                assert param.opts[0] in block, (path, param.opts[0])


def test_a_page_behind_its_command_is_named(tmp_path, monkeypatch):
    pages = tmp_path / "commands"
    shutil.copytree(synopses.PAGES, pages)
    page = pages / "simulate-null.md"
    page.write_text(page.read_text(encoding="utf-8").replace("[--effect-arms 0]", ""))
    monkeypatch.setattr(synopses, "PAGES", pages)
    assert synopses.stale_pages() == ["simulate-null"]
    assert synopses.main(["--check"]) == 1
    synopses.write()
    assert synopses.stale_pages() == [] and "[--effect-arms 0]" in page.read_text()
