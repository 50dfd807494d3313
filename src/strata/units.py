"""Sizes and rates with units in their names (STYLE.md item 13)."""

from __future__ import annotations

import re

_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """'4GiB', '512M', '128k', 4096 -> bytes. Suffixes are binary, as in fio."""
    if isinstance(value, bool):
        raise ValueError("a size, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a size; write e.g. 4096, 128k, 512MiB, 4GiB")
    return int(float(m.group(1)) * _BINARY[m.group(2).lower()])


def fio_size(size_bytes: int) -> str:
    """The exact byte count, so fio and strata agree to the byte."""
    return str(size_bytes)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
