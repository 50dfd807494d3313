"""JSON documents at strata's boundaries: what a file, a process or a parsed spec hands strata before it is
read into typed values (stored results, fio's output, an agent's reply, kubectl's objects).

`JsonValue` is exactly what `json.loads` returns, so mypy makes every reader say the shape it expects instead
of trusting a `dict[str, Any]`: `obj`, `arr`, `text`, `num`, `whole`, `flag` read one member and raise
`ShapeError` (a ValueError: the loaders of stored results already turn those into "cannot read ...") when
the document holds something else. Inside strata, values live in dataclasses; these types are for the edges.
"""

from __future__ import annotations

from typing import TypeAlias, Union

JsonValue: TypeAlias = Union[str, int, float, bool, None, list["JsonValue"], dict[str, "JsonValue"]]
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]


class ShapeError(ValueError):
    """A document member is missing or of another type than its reader expects."""


def _member(d: JsonObject, key: str, default: JsonValue) -> JsonValue:
    return d.get(key, default)


def _wrong(key: str, want: str, got: JsonValue) -> ShapeError:
    return ShapeError(f"{key!r} should be {want}, not {type(got).__name__}")


def obj(d: JsonObject, key: str, default: JsonObject | None = None) -> JsonObject:
    """d[key] as an object; a missing or null member is `default` (an empty object unless given)."""
    v = _member(d, key, None)
    if v is None:
        return {} if default is None else default
    if not isinstance(v, dict):
        raise _wrong(key, "an object", v)
    return v


def arr(d: JsonObject, key: str) -> JsonArray:
    """d[key] as an array; a missing or null member is empty."""
    v = _member(d, key, None)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _wrong(key, "an array", v)
    return v


def text(d: JsonObject, key: str, default: str = "") -> str:
    """d[key] as a string; a missing or null member is `default`."""
    v = _member(d, key, None)
    if v is None:
        return default
    if not isinstance(v, str):
        raise _wrong(key, "a string", v)
    return v


def num(d: JsonObject, key: str, default: float | None = None) -> float | None:
    """d[key] as a number (an int or a float, not a bool); a missing or null member is `default`."""
    v = _member(d, key, None)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _wrong(key, "a number", v)
    return float(v)


def whole(d: JsonObject, key: str, default: int | None = None) -> int | None:
    """d[key] as an integer (not a bool; a float with no fraction is taken); missing or null is `default`."""
    v = _member(d, key, None)
    if v is None:
        return default
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _wrong(key, "an integer", v)
    return v


def flag(d: JsonObject, key: str, default: bool = False) -> bool:
    """d[key] as a boolean; a missing or null member is `default`."""
    v = _member(d, key, None)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise _wrong(key, "true or false", v)
    return v


def as_obj(v: JsonValue, what: str = "the document") -> JsonObject:
    """A value read as an object (the top of a document, an array's member)."""
    if not isinstance(v, dict):
        raise _wrong(what, "an object", v)
    return v
