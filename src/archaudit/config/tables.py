"""TOML tables into typed, frozen configs: `build`, `--set` overrides, dotted paths.

Generic over dataclasses, so the model's per-slot tables, the recipe and an audit file's
sections share one loader: every key is checked against the class's fields (a table field
recurses into its own class), every value against the field's type hint, and a mistake is a
`ConfigError` naming the dotted key with a did-you-mean. A class may list keys that moved
(`MOVED`, old key → new dotted key) so that an old spelling is refused with its new name.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import sys
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, did_you_mean, did_you_mean_path

MAX_FLOAT = sys.float_info.max


def build(cls: type, values: Mapping[str, Any], *, section: str) -> Any:
    """Construct `cls` from a mapping, checking every key and type; errors name `section.key`.
    A field whose type is itself a config class takes a table, built the same way."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{section} = {values!r} must be a table ([{section}] with its keys)")
    names = {f.name for f in dataclasses.fields(cls)}
    hints = type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in names:
            raise unknown_key(cls, key, section)
        hint = hints[key]
        if _is_config(hint):
            if not isinstance(raw, Mapping):
                raise _not_a_table(hint, f"{section}.{key}", raw)
            kwargs[key] = build(hint, raw, section=f"{section}.{key}")
        else:
            kwargs[key] = _coerce(raw, hint, f"{section}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as err:  # pragma: no cover - all keys were checked above
        raise ConfigError(f"{section}: {err}") from None


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """`typing.get_type_hints`, once per class: it evaluates every annotation anew on each
    call, and configs are built thousands of times when a plan resolves many arms."""
    return typing.get_type_hints(cls)


def unknown_key(cls: type, key: str, section: str) -> ConfigError:
    """`unknown key model.score (it moved: did you mean 'model.attention.score'?)`; a name from
    another trainer (`KNOWN_AS`) or a near miss gets its did-you-mean, anything else the whole
    list of keys (never cut short: the key wanted may be the one left out)."""
    moved: Mapping[str, str] = getattr(cls, "MOVED", {})
    if key in moved:
        return ConfigError(
            f"unknown key {section}.{key} (it moved: did you mean {section + '.' + moved[key]!r}?)"
        )
    known: Mapping[str, str] = getattr(cls, "KNOWN_AS", {})
    if key in known:
        ours, _, note = known[key].partition(": ")
        hint = f" {note}" if note else ""
        return ConfigError(f"unknown key {section}.{key} (did you mean {ours!r}?{hint})")
    names = sorted(f.name for f in dataclasses.fields(cls))
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return ConfigError(f"unknown key {section}.{key} (did you mean {close[0]!r}?)")
    return ConfigError(f"unknown key {section}.{key}; the keys of [{section}]: {', '.join(names)}")


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, JSON-ready dict of a config (nested configs and Mappings become dicts)."""
    return {f.name: _plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: the same bytes in every process (no hash-order dependence)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def merge_tables(*tables: Mapping[str, Any]) -> dict[str, Any]:
    """Later tables win key by key, recursing into sub-tables: a scale's `attention.window` on
    top of a preset keeps the preset's other attention keys."""
    merged: dict[str, Any] = {}
    for table in tables:
        for key, value in table.items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = merge_tables(merged[key], value)
            else:
                merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


# ---------------------------------------------------------------------------------------------
# dotted paths: `attention.score` addresses a field of a nested config


def flatten(cls: type, tree: Mapping[str, Any], *, section: str) -> dict[str, Any]:
    """{"attention": {"score": "x"}} or {"attention.score": "x"} → {"attention.score": "x"},
    each path checked against `cls`. Free mappings (`extra`) flatten to one path per key."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        _flatten_into(cls, key.split("."), value, section, out)
    return out


def replace_paths(cfg: Any, changes: Mapping[str, Any], *, section: str) -> Any:
    """`cfg` with `changes` set: dotted paths or nested tables, as `flatten` reads them, each
    value checked against its field's type. Every config on the way is rebuilt, so each
    validates itself again."""
    return _replace(cfg, flatten(type(cfg), changes, section=section), section)


def _replace(cfg: Any, changes: Mapping[str, Any], section: str) -> Any:
    grouped: dict[str, dict[str, Any]] = {}
    for path, value in changes.items():
        head, _, rest = path.partition(".")
        grouped.setdefault(head, {})[rest] = value
    cls: type = type(cfg)
    hints = type_hints(cls)
    updates: dict[str, Any] = {}
    for head, items in grouped.items():
        current, key = getattr(cfg, head), f"{section}.{head}"
        if _is_config(hints[head]):
            updates[head] = _replace(current, items, key)
        elif isinstance(current, Mapping):
            updates[head] = {**current, **items}
        else:
            updates[head] = _coerce(items[""], hints[head], key)
    return dataclasses.replace(cfg, **updates)


def _flatten_into(
    cls: type,
    parts: list[str],
    value: Any,
    section: str,
    out: dict[str, Any],
    path: tuple[str, ...] = (),
) -> None:
    head, rest = parts[0], parts[1:]
    where = ".".join((section, *path))
    if head not in {f.name for f in dataclasses.fields(cls)}:
        raise unknown_key(cls, head, where)
    hint, path = type_hints(cls)[head], (*path, head)
    key = ".".join((section, *path))
    if _is_config(hint) and rest:
        _flatten_into(hint, rest, value, section, out, path)
    elif _is_config(hint):
        if not isinstance(value, Mapping):
            raise _not_a_table(hint, key, value)
        for sub, sub_value in value.items():
            _flatten_into(hint, sub.split("."), sub_value, section, out, path)
    elif _is_mapping(hint):
        items = {".".join(rest): value} if rest else value
        if not isinstance(items, Mapping):
            raise ConfigError(f"{key} = {value!r} must be a table")
        out.update({".".join((*path, k)): v for k, v in items.items()})
    elif rest:
        raise ConfigError(f"{key} is a value, not a table: {key}.{'.'.join(rest)} does not exist")
    else:
        out[".".join(path)] = value


def _not_a_table(cls: type, key: str, value: Any) -> ConfigError:
    first = dataclasses.fields(cls)[0].name
    return ConfigError(
        f"{key} = {value!r}: {key} is a table now; write {key}.{first} = {value!r} "
        f"(or a [{key}] table)"
    )


def _is_config(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _is_mapping(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# files and overrides


def load_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error names the file and line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist{did_you_mean_path(path)}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: malformed TOML: {err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {err.start}); TOML files are UTF-8"
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: arrays or tables nested too deep to read") from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """`model.d_model=128` → (["model", "d_model"], 128). The value is parsed as a TOML value
    when it can be, else kept as a string (so `--set recipe.corpus=data/x.txt` works)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    if any(char in text for char in "\r\n\x00"):
        # TOML would read a second line as a second key and drop it without a word
        raise ConfigError(
            f"override {text!r} holds a line break or NUL: one --set is one key=value line"
        )
    key, _, raw = text.partition("=")
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        value = raw.strip()
    return path, value


def apply_overrides(
    tree: Mapping[str, Any], overrides: Sequence[str], *, sections: Sequence[str]
) -> dict[str, Any]:
    """Apply `--set` overrides to a nested config mapping; the top-level key must be a section."""
    result = merge_tables(tree)
    for text in overrides:
        path, value = parse_override(text)
        if len(path) < 2 or path[0] not in sections:
            head = path[0] if path else ""
            raise ConfigError(
                f"override {text!r}: the key must start with a section "
                f"({', '.join(sections)}){did_you_mean(head, sections) if head else ''}"
            )
        node = result
        for depth, part in enumerate(path[:-1], start=1):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                where = ".".join(path[:depth])
                raise ConfigError(f"override {text!r}: {where} is a value, not a table")
        node[path[-1]] = value
    return result


def check_sections(tree: Mapping[str, Any], allowed: Sequence[str], *, where: str) -> None:
    for key in tree:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown section [{key}]{did_you_mean(key, allowed)}")


def positive(cfg: Any, *names: str) -> None:
    """Each named field is >= 1; the error names the key under the class's `SECTION`."""
    for name in names:
        value = getattr(cfg, name)
        if value < 1:
            raise ConfigError(f"{cfg.SECTION}.{name} = {value} must be >= 1")


def _finite(value: int | float, key: str) -> float:
    """A float field's value: NaN, ±inf and numbers past float range are refused here, at the
    boundary, so no component sees them (a capacity factor of inf overflowed `ceil`, a NaN
    loss coefficient trained to "diverged" instead of being refused)."""
    number = float(value) if abs(value) <= MAX_FLOAT else math.inf
    if not math.isfinite(number):
        raise ConfigError(f"{key} = {value!r} must be a finite number")
    return number


def _coerce(value: Any, hint: Any, key: str) -> Any:
    """Check `value` against a field's type hint; ints are accepted for floats."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if errors else f"{key}: bad value {value!r}")
    if _is_mapping(hint):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key} = {value!r} must be a table")
        return dict(value)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _finite(value, key)
    elif hint is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - every field uses one of the hints above
        return value
    raise ConfigError(f"{key} = {value!r} must be of type {hint.__name__}")
