"""What every flag shares: its name (`Flag`, the key of `flags` in a stored result), and the lenient reading
of its stored form (`split`: the keys its type knows, and the rest, kept and written back; `number`: a number
as stored, so that a result is written back as it was read)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from strata.core.jsondoc import JsonObject, ShapeError


class Flag(str, Enum):
    """The validity flags a result can carry (the keys of `flags` in a stored result)."""

    CACHE = "cache"
    ABOVE_RAW = "above_raw"
    SYNC = "sync"
    STEADY = "steady"
    SPREAD = "spread"
    EMULATED = "emulated"
    FLUSH = "flush"
    ABSORBED = "absorbed"
    SATURATED = "saturated"
    FAILED = "failed"


def split(doc: JsonObject, known: tuple[str, ...]) -> tuple[JsonObject, JsonObject]:
    """(the known keys of a stored flag, the rest)."""
    return {k: v for k, v in doc.items() if k in known}, {k: v for k, v in doc.items() if k not in known}


def number(d: Mapping[str, object], key: str) -> float | None:
    """d[key] as stored, an int staying an int (a flag's field, a layer's counter); None when absent or null."""
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ShapeError(f"{key!r} should be a number, not {type(v).__name__}")
    return v
