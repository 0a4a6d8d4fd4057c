"""JSON output for result dataclasses: NaN and infinities become null, tuples become lists."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Plain JSON types for dataclasses, mappings, sequences, numpy scalars and floats.

    A dataclass gives its fields (less those named `_x` or marked `metadata={"json": False}`;
    under the key `metadata={"json_name": ...}` names, else the field's name), then the derived
    properties its class lists in `JSON_PROPERTIES`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        keys = {
            f.metadata.get("json_name", f.name): f.name
            for f in dataclasses.fields(value)
            if not f.name.startswith("_") and f.metadata.get("json", True)
        }
        keys |= {name: name for name in getattr(type(value), "JSON_PROPERTIES", ())}
        return {key: to_jsonable(getattr(value, name)) for key, name in keys.items()}
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class JsonResult:
    """Mixin for result dataclasses: `to_dict()` for embedding, `to_json()` for printing."""

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_frame(self) -> Any:
        """A pandas DataFrame (the `frames` extra) with pandas' nullable dtypes: one row per
        record of the result's first field that holds records (a judgement's arms, ...), else
        one row of the whole result; nested fields become dotted columns."""
        from archaudit.stats.records.frames import typed_frame

        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
                return typed_frame([to_jsonable(v) for v in value], type(value[0]))
        return typed_frame([self.to_dict()], type(self))
