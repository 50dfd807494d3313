"""Parameter pieces every server workload's spec shares: durations, `none`, a script of the user's own
(`file:PATH`), and the path of its own a server's log may go on.

Written for the server template (workloads/server/): pgbench's and ycsb's parameters have their own
copies of the first three, and the PostgreSQL workload's WAL path has the same shape as `log_field` here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from strata.core.params import PATHS, path_kind
from strata.core.units import parse_duration

DIR_PATHS = tuple(p for p in PATHS if p != "device")  # a log is a directory


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


def log_field(what: str) -> Any:
    """The key of a server workload's parameters that puts its log on a path of its own (validate it with
    `log_name`, mode="before")."""
    return Field(
        default=None,
        description=f"a path of its own for the {what} (none: with the data): volume, bind, tmpfs or layer in a "
        "container, bind natively (a directory of its own on the file system under test), hostpath or local in "
        "a pod, where the runtime gives a server's log a path; a list is a sweep",
    )


def log_name(v: Any) -> str | None:
    """The log's path as the spec writes it: a path of the vocabulary, or none."""
    if v is None or (isinstance(v, str) and v.strip().lower() == "none"):
        return None
    if not isinstance(v, str) or path_kind(v) not in DIR_PATHS:
        raise ValueError(f"{str(v)[:40]!r} is not a path for a server's log: one of {', '.join(DIR_PATHS)}, or none")
    return v


def log_impossible(path: str | None, what: str, runtime: Any) -> str | None:
    """Why `runtime` (the plugin) cannot give the log `path` of its own, or None. A runtime gives a server's
    log a path of its own when it declares the paths it can give (`log_paths`)."""
    if path is None:
        return None
    have = getattr(runtime, "log_paths", ())
    if path_kind(path) not in have:
        where = f"only {', '.join(have)}" if have else "none"
        return f"the {runtime.name} runtime gives the {what} no {path} path of its own ({where})"
    return None
