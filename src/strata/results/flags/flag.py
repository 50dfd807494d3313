"""What every flag shares: its name (`Flag`, the key of `flags` in a stored result), and the lenient reading
of its stored form (`split`: the keys its type knows, and the rest, kept and written back)."""

from __future__ import annotations

from enum import Enum
from typing import Any


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
    FAILED = "failed"


def split(doc: dict[str, Any], known: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the known keys of a stored flag, the rest)."""
    return {k: v for k, v in doc.items() if k in known}, {k: v for k, v in doc.items() if k not in known}
