"""Sizes, durations and rates typed by users, parsed and bounded before use (units in names)."""

from __future__ import annotations

import re

_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE = re.compile(r"^\s*(\d{1,20}(?:\.\d{1,12})?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
MAX_SIZE_BYTES = 1 << 60  # 1 EiB: beyond any device; a bound on what a typo can ask for
_DURATION = re.compile(r"^\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1, "": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION_S = 7 * 86400  # a week: longer is a typo, or a job for several runs


def parse_size(value: object) -> int:
    """'4GiB', '512M', '128k', 4096 -> bytes. Suffixes are binary, as in fio. Bounded; a ValueError names
    anything else (a validator's input is whatever the spec held)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"a size is a number or a string like 512MiB, not {type(value).__name__}")
    if isinstance(value, (int, float)):
        if value != value or value < 0 or value > MAX_SIZE_BYTES:
            raise ValueError(f"a size is between 0 and {MAX_SIZE_BYTES} bytes (1 EiB), not {value!r}")
        return int(value)
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"{value[:60]!r} is not a size; write e.g. 4096, 128k, 512MiB, 4GiB")
    return parse_size(float(m.group(1)) * _BINARY[m.group(2).lower()])


def parse_duration(value: int | float | str) -> float:
    """'30', '30s', '2m', '1h', '500ms', 30 -> seconds. Bounded to a week."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"a duration is a number of seconds or a string like 2m, not {type(value).__name__}")
    if isinstance(value, str):
        m = _DURATION.match(value)
        if not m:
            raise ValueError(f"{value[:60]!r} is not a duration; write e.g. 30, 30s, 2m, 1h")
        value = float(m.group(1)) * _SECONDS[(m.group(2) or "").lower()]
    if value != value or value < 0 or value > MAX_DURATION_S:
        raise ValueError(f"a duration is between 0 and {MAX_DURATION_S} s (a week), not {value!r}")
    return float(value)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
