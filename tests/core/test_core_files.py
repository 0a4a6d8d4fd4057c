"""Atomic writes: the new content appears whole, and with the mode a plain open() gives."""

import os
import stat

import pytest

from archaudit.files import atomic_write, atomic_write_text


def test_an_atomic_write_has_the_mode_of_a_plain_write(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    atomic = tmp_path / "atomic.txt"
    atomic_write_text(atomic, "y")
    assert stat.S_IMODE(os.stat(atomic).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)
    assert atomic.read_text() == "y"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "f.json"
    target.write_text("old")

    def fail(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        atomic_write(target, fail)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
