"""Atomic writes, and the rule every writer follows: it owns its output.

Readers (a resumed run, a second worker, the index, `eval`) see the old file or folder or the
new one, never half of one, also when the writer is killed mid-write: a file or a folder is
written under a temporary name unique to the process beside the target, then renamed into place.

Ownership: a command writes only into a folder it creates, an empty one, or one that carries its
own marker file; it never writes through or over a link, never replaces a file it did not write,
and never deletes one (a folder it replaces holds only the files its marker lists). A refusal is
one line naming the path and the option that chooses another.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archaudit.errors import DataError
from archaudit.progress import warn


def cache_dir() -> Path:
    """Where archaudit keeps what it can rebuild (token caches, design error rates)."""
    return Path(os.environ.get("ARCHAUDIT_CACHE", Path.home() / ".cache" / "archaudit"))


KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


def open_regular(path: Path) -> io.BufferedReader:
    """`path` opened for reading when it is a regular file (links followed); a FIFO, device,
    socket or folder is a one-line DataError, raised at once: the open does not wait for a
    FIFO's writer, and the kind is read from the opened descriptor, not looked up before (a FIFO
    swapped in after a check cannot hang the reader either)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = KINDS.get(stat.S_IFMT(mode), "a device")
            raise DataError(f"{path} is {kind}, not a regular file: archaudit reads only files")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: Path) -> bytes:
    """The bytes of the regular file at `path` (`open_regular`: anything else is refused)."""
    with open_regular(path) as handle:
        return handle.read()


def read_regular_text(path: Path) -> str | None:
    """The text of `path` when it is a regular file; None when it is missing or anything else
    (a FIFO, a device, a folder: reading one could block forever or never end)."""
    try:
        return read_regular_bytes(path).decode("utf-8", errors="replace")
    except (OSError, DataError):
        return None


class BadEntry(Exception):
    """A cache entry that is there but does not prove itself; the message says why."""


def load_entry(path: Path, key: str, parse: Callable[[Any], T]) -> T | None:
    """The value of a cache entry written by `store_entry`, or None when there is none. An entry
    is believed only when its key equals `key`, the SHA-256 of its value matches, and `parse`
    accepts the value (it raises ValueError, KeyError or TypeError on a value out of range):
    otherwise `BadEntry`, so that the caller recomputes and says so, never trusts it."""
    text = read_regular_text(path)
    if text is None:
        if path.exists() or path.is_symlink():
            raise BadEntry(f"{path}: not a regular file")
        return None
    try:
        stored = parse_json(text, path)
        if "sha256" not in stored:
            raise BadEntry(f"{path}: written by an older archaudit (no checksum)")
        if stored.get("key") != key:
            raise BadEntry(f"{path}: written for another key")
        if stored.get("sha256") != value_checksum(stored["value"]):
            raise BadEntry(f"{path}: its checksum does not match its value")
        return parse(stored["value"])
    except DataError as error:
        raise BadEntry(str(error)) from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise BadEntry(f"{path}: unreadable or out of range ({error})") from None


def store_entry(path: Path, key: str, value: Any) -> bool:
    """Write a cache entry atomically; False (nothing raised) when the cache folder is read-only,
    full or not a folder: a cache may only cost time."""
    if path.exists() and not path.is_file():
        return False  # a FIFO or folder in the way is left alone
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "sha256": value_checksum(value), "value": value}
        atomic_write_text(path, json.dumps(entry, indent=1))
    except (OSError, DataError):
        return False
    return True


def entry_or_compute(
    path: Path,
    key: str,
    parse: Callable[[Any], T],
    compute: Callable[[], T] | None,
    redone: str = "recomputed",
) -> T | None:
    """The entry at `path` when it proves itself (`load_entry`), else `compute()` stored there
    (one line says why an entry that was there is `redone`); None without `compute`."""
    try:
        value = load_entry(path, key, parse)
        if value is not None:
            return value
    except BadEntry as bad:
        warn(f"{bad}; {redone}")
    if compute is None:
        return None
    value = compute()
    store_entry(path, key, value)
    return value


def value_checksum(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give; read once, at import


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` on a fresh temporary path in `path`'s folder, then rename it to `path`.
    The file gets the mode a plain `open()` would give it, not mkstemp's private 0600, so that
    the other members of a shared results folder can read it. A link at `path` is refused: the
    rename would replace the link, and its target was never ours to change."""
    refuse_link(path, "the output")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def plain_modes(folder: Path) -> None:
    """Give every file in `folder` the mode a plain `open()` would give it (`FILE_MODE`):
    a library that writes through a private temporary file (safetensors: 0600) would otherwise
    leave a file the other members of a shared folder cannot read."""
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            os.chmod(path, FILE_MODE)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text))


T = TypeVar("T")


def refuse_link(path: Path, flag: str) -> None:
    """A one-line refusal when `path` is a symbolic link."""
    if path.is_symlink():
        raise DataError(
            f"{path} is a link (to {os.readlink(path)}); archaudit never writes through or over a "
            f"link: give {flag} a plain path"
        )


def check_output_file(path: Path, flag: str, ours: Callable[[Path], bool]) -> None:
    """Refuse to write `path` when it is a link, or an existing file or folder that `ours` does
    not recognise as this command's earlier output. An empty file holds nothing to lose: it is
    the placeholder `atomic_write`'s mkstemp leaves for the writer it calls."""
    refuse_link(path, flag)
    if path.exists() and not (path.is_file() and (path.stat().st_size == 0 or ours(path))):
        raise DataError(
            f"{path} exists and archaudit did not write it (or not as this output); give {flag} "
            "a new name"
        )


def file_signed(signature: bytes, within: int = 4096) -> Callable[[Path], bool]:
    """An `ours` test for `check_output_file`: the writer's signature is in the file's first
    `within` bytes."""

    def ours(path: Path) -> bool:
        with path.open("rb") as handle:
            return signature in handle.read(within)

    return ours


def check_output_folder(path: Path, flag: str, marker: str | None = None) -> None:
    """Refuse to write into `path` unless it is missing, an empty folder, or a folder whose
    `marker` (a JSON record with a "files" list) names every entry in it."""
    refuse_link(path, flag)
    if path.exists() and not path.is_dir():
        raise DataError(f"{path} is a file, not a folder: give {flag} a new or empty folder")
    if not path.is_dir() or not any(path.iterdir()):
        return
    foreign = _foreign_entries(path, marker) if marker else ["(no marker)"]
    if foreign:
        mark = f"{marker} does not list {foreign[0]!r}" if marker else "it is not empty"
        raise DataError(
            f"{path} holds files archaudit did not write there ({mark}); give {flag} a new or "
            "empty folder"
        )


def _foreign_entries(path: Path, marker: str) -> list[str]:
    record = path / marker
    if record.is_symlink() or not record.is_file():
        return [f"(no {marker})"]
    try:
        listed = json.loads(record.read_text()).get("files")
    except (ValueError, UnicodeDecodeError, AttributeError):
        listed = None
    if not isinstance(listed, list):
        return [f"({marker} lists no files)"]
    allowed = {str(name) for name in listed} | {marker}
    entries = sorted(path.iterdir())
    return [p.name for p in entries if p.name not in allowed or p.is_symlink() or p.is_dir()]


def publish_folder(out: Path, build: Callable[[Path], T], *, flag: str, marker: str) -> T:
    """`build(tmp)` writes and checks the whole output in a fresh temporary sibling of `out`
    (its name holds this process's id); only when it returns is the folder renamed to `out`.
    An earlier output of the same command (all its entries listed by `marker`) is replaced;
    anything else at `out` is refused before work starts. Temporary siblings of dead processes
    (a kill -9) are removed: their names say they are ours."""
    check_output_folder(out, flag, marker)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(out)
    tmp = Path(
        tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.{os.getpid()}.", suffix=".tmp")
    )
    try:
        value = build(tmp)
        os.chmod(tmp, 0o777 & ~_umask())
        check_output_folder(out, flag, marker)  # again: another process may have written there
        if out.is_dir() and any(out.iterdir()):
            old = tmp.with_name(tmp.name.removesuffix(".tmp") + ".old.tmp")
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old)  # every entry listed by our marker: checked above
        else:
            with contextlib.suppress(FileNotFoundError):
                out.rmdir()
            os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return value


def _remove_orphans(out: Path) -> None:
    pattern = re.compile(rf"\.{re.escape(out.name)}\.(\d+)\.\w+(\.old)?\.tmp")
    for path in out.parent.iterdir():
        match = pattern.fullmatch(path.name)
        if match and path.is_dir() and not path.is_symlink() and not _alive(int(match[1])):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_json(path: Path) -> Any:
    """The JSON value in `path`, None when there is no such file; a file that is not UTF-8
    JSON (torn, edited, binary), nested past `MAX_JSON_DEPTH` or not a regular file (a FIFO is
    never waited on) is a one-line DataError naming it."""
    try:
        data = read_regular_bytes(path)
    except FileNotFoundError:
        return None
    return parse_json(data, path)


MAX_JSON_DEPTH = 64
"""Nesting that any JSON file archaudit reads may have: its own files nest under 10 levels,
lm-eval's and Hugging Face's under 20. A deeper file (`[[[[...` thousands deep) would reach
Python's recursion limit in the parser or in whatever walks the value after it."""
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep the arrays and objects in the JSON `text` nest (brackets inside strings left
    out), up to `limit + 1`, counted without parsing it and without recursion: each pass
    deletes the innermost empty pairs (str and bytes methods: 0.1 s for 10 MB). Brackets left
    unpaired count as levels too."""
    unescaped = text.replace("\\\\", "").replace('\\"', "")  # escapes, left to right
    outside = "".join(unescaped.split('"')[::2])  # what lies between the strings
    brackets = outside.encode("utf-8", "replace").translate(None, _NOT_BRACKETS)
    depth = 0
    while depth <= limit:
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(inner) == len(brackets):
            return depth + inner.count(b"[") + inner.count(b"{")
        brackets, depth = inner, depth + 1
    return depth


def parse_json(data: bytes | str, path: Path) -> Any:
    """The JSON value of `data`, read from `path`: the one parser of every JSON file archaudit
    reads (records, claims, caches, configs). Text that is not UTF-8 JSON, or nests past
    `MAX_JSON_DEPTH`, is a one-line DataError naming `path`."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not valid JSON ({err})") from None
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise DataError(
            f"{path} is not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep, the most "
            "archaudit reads)"
        )
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise DataError(f"{path} is not valid JSON ({str(err).splitlines()[0]})") from None


def read_json_object(path: Path) -> dict[str, Any] | None:
    """`read_json` for files that hold one JSON object (records, specs, metadata)."""
    value = read_json(path)
    if value is not None and not isinstance(value, dict):
        raise DataError(f"{path} holds {type(value).__name__} where a JSON object belongs")
    return value
