"""Parameter pieces every server workload's spec shares: durations, `none`, a script of the user's own
(`file:PATH`), and the path of its own a server's log may go on.

Written for the server template (workloads/server/): pgbench's and ycsb's parameters have their own
copies of the first three, and the PostgreSQL workload's WAL path has the same shape as `log_field` here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strata.core.units import parse_duration


def seconds(v: Any) -> int:
    """A `mode="before"` validator for whole seconds: 60, '90s', '2m'."""
    return int(parse_duration(v))


def none_word(v: Any) -> Any:
    """A `mode="before"` validator that reads the word `none` (any case) as None, for optional numbers."""
    return None if isinstance(v, str) and v.strip().lower() == "none" else v


def resolve_script(raw: dict[str, Any], base_dir: Path, key: str, what: str, max_bytes: int) -> dict[str, Any]:
    """A spec whose `key` says `file:PATH`: the path relative to the spec's folder, checked to be a file of at
    most `max_bytes`, as the parameters' `file`."""
    raw = dict(raw)
    value = raw.get(key)
    if isinstance(value, str) and value.startswith("file:"):
        p = Path(value[len("file:") :])
        p = p if p.is_absolute() else base_dir / p
        if not p.is_file():
            raise ValueError(f"no {what} at {p} ({key}: {value})")
        if p.stat().st_size > max_bytes:
            raise ValueError(f"the {what} {p} is above {max_bytes >> 20} MiB: is it a {what}?")
        raw["file"] = str(p.resolve())
    return raw
