"""A server's log on a path of its own: PostgreSQL's WAL, InnoDB's redo log, Cassandra's commit log.

Where the log lives beside the data is the most common storage layout question for a database. A server
workload reads the key of its parameters that says it (its server's `log`, facts.py: pgbench's `wal_path`),
whose value is a path of the stack's runtime (`log_field`): `volume`, `bind`, `tmpfs`, the container's `layer`, natively
`bind` (a directory of its own on the file system under test), in a pod `hostpath` or `local`; none keeps
the log with the data. The runtime prepares that path beside the data's (stack/runtimes/base.py LogPaths,
LogSession: a second named volume, a second bind mount...) and the instance finds it at `Target.log_path`;
the workload puts its log there (PostgreSQL: `initdb --waldir`). A runtime that cannot give the log that
path is ruled out for the trial with the reason (`impossible`), before anything is built.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from strata.core.params import DEVICE_PATHS, PATHS, path_kind
from strata.stack.runtimes.base import LogPaths
from strata.workloads.base import RuntimeTraits

DIR_PATHS = tuple(p for p in PATHS if p not in DEVICE_PATHS)  # a log is a directory


def log_field(what: str) -> Any:  # what pydantic's Field returns
    """The log path key of a server workload's parameters (validate it with `name`, mode="before")."""
    return Field(
        default=None,
        description=f"a path of its own for the {what} (none: with the data): volume, bind, tmpfs or layer in a "
        "container, bind natively (a directory of its own on the file system under test), hostpath or local in "
        "a pod; a list is a sweep",
    )


def name(v: object) -> str | None:
    """The log path as the spec writes it: a path of the vocabulary, or none."""
    if v is None or (isinstance(v, str) and v.strip().lower() == "none"):
        return None
    if not isinstance(v, str) or path_kind(v) not in DIR_PATHS:
        raise ValueError(f"{str(v)[:40]!r} is not a path for a server's log: one of {', '.join(DIR_PATHS)}, or none")
    return v


def impossible(path: str | None, what: str, runtime: RuntimeTraits) -> str | None:
    """Why `runtime` (the plugin) cannot give the log `path` of its own, or None."""
    if path is None:
        return None
    have = runtime.log_paths if isinstance(runtime, LogPaths) else ()
    if path_kind(path) not in have:
        where = f"only {', '.join(have)}" if have else "none"
        return f"the {runtime.name} runtime gives the {what} no {path} path of its own ({where})"
    return None
