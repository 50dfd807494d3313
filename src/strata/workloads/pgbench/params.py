"""The `pgbench` workload's spec: PostgreSQL 15 servers on the path under test, pgbench on the host.

`pgbench: {script: tpcb-like, scale: 10, clients: [1, 8, 32], threads: 2, runtime: 60, warmup: 10,
rate: none, synchronous_commit: on, fsync: true, shared_buffers: 128MiB, wal_level: replica,
full_page_writes: true}`. Every number is bounded; a list of any key is a sweep (experiment/load.py).
`script` is one of pgbench's built-in scripts or `file:PATH`, a pgbench script of your own run as it
is (against the tables `pgbench -i` made). The server settings are those that decide what reaches
the device: each is passed to the server as it is (`postgres -c NAME=VALUE`).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.params import Strict, size_field
from strata.core.units import parse_duration

MiB = 1 << 20
BUILTIN = ("tpcb-like", "simple-update", "select-only")
WRITING_BUILTINS = ("tpcb-like", "simple-update")
MAX_SCRIPT_BYTES = 1 << 20
# A script that names one of these writes (its transactions' WAL must reach the device); one that names
# none reads only (each transaction must read at least one block). Comments are left out first.
WRITE_WORDS = re.compile(r"\b(insert|update|delete|merge|copy|create|drop|alter|truncate|vacuum|cluster)\b", re.I)
COMMENT = re.compile(r"--[^\n]*")


def _seconds(v: Any) -> int:
    return int(parse_duration(v))


class PgbenchParams(Strict):
    """PostgreSQL 15 servers (one per container) on the path under test, each driven by pgbench on the host."""

    type: Literal["pgbench"] = "pgbench"
    name: str = Field(
        default="",
        description="default: pgbench-<script>-s<scale>-c<clients>[-j<threads>][-r<rate>] and the server "
        "settings that differ from PostgreSQL's defaults",
    )
    script: str = Field(
        default="tpcb-like",
        description="tpcb-like, simple-update, select-only (pgbench's built-in scripts), or file:PATH (a pgbench "
        "script of your own, run as it is)",
    )
    scale: int = Field(
        default=10, ge=1, le=100_000, description="pgbench -i -s: 100,000 accounts (16 MiB) per unit; 1 to 100000"
    )
    clients: int = Field(default=1, ge=1, le=1000, description="pgbench -c: database sessions per server, 1 to 1000")
    threads: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="pgbench -j: client threads per server, 1 to 1000 (at most `clients` of them run)",
    )
    runtime: int = Field(default=60, ge=1, le=86400, description="seconds of the measured run (pgbench -T), 1 to 86400")
    warmup: int = Field(
        default=0, ge=0, le=86400, description="seconds of unmeasured transactions before the run, 0 to 86400"
    )
    rate: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="pgbench --rate: offered transactions per second of each server, 1 to 10000000 (a list "
        "is a sweep); none: flat out",
    )
    max_tries: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="pgbench --max-tries: tries of a transaction that fails to serialize, 1 to 1000",
    )
    synchronous_commit: Literal["on", "off", "local", "remote_write", "remote_apply"] = Field(
        default="on", description="whether a commit waits for its WAL to be flushed"
    )
    fsync: bool = Field(default=True, description="whether PostgreSQL forces its writes to the device")
    shared_buffers: int = Field(
        default=128 * MiB,
        ge=128 << 10,
        le=1 << 40,
        description="PostgreSQL's own cache, bytes or e.g. 256MiB, 128KiB to 1TiB (the rest of a read is the "
        "page cache's)",
    )
    wal_level: Literal["minimal", "replica", "logical"] = Field(
        default="replica", description="how much the WAL records (minimal: no replication)"
    )
    full_page_writes: bool = Field(
        default=True, description="whether the first change of a page after a checkpoint writes the whole page"
    )
    start_timeout: int = Field(
        default=300, ge=10, le=3600, description="seconds a server may take to come up, 10 to 3600"
    )
    file: str | None = Field(default=None, description="(set from `script: file:PATH`)")

    _times = field_validator("runtime", "warmup", mode="before")(lambda v: _seconds(v))
    _sizes = field_validator("shared_buffers", mode="before")(size_field)

    @field_validator("rate", mode="before")
    @classmethod
    def _none(cls, v: Any) -> Any:
        return None if isinstance(v, str) and v.strip().lower() == "none" else v

    @field_validator("script")
    @classmethod
    def _script(cls, v: str) -> str:
        if v in BUILTIN or v.startswith("file:"):
            return v
        raise ValueError(f"unknown pgbench script {v[:60]!r}: use one of {', '.join(BUILTIN)}, or file:PATH")

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.script.startswith("file:") and not self.file:
            raise ValueError("`script: file:PATH` names a pgbench script that was not found")
        if not self.name:
            object.__setattr__(self, "name", default_name(self))
        return self

    @property
    def builtin(self) -> str | None:
        return self.script if self.script in BUILTIN else None

    @property
    def effective_threads(self) -> int:
        """pgbench -j: one thread runs one client or more, never none."""
        return min(self.threads, self.clients)

    @property
    def writes(self) -> bool:
        """Do its transactions write? The built-in scripts' answer; a user's script by its SQL's words."""
        if self.builtin is not None:
            return self.builtin in WRITING_BUILTINS
        return bool(WRITE_WORDS.search(COMMENT.sub("", self.script_text())))

    def script_text(self) -> str:
        try:
            with open(self.file or "", errors="replace") as f:
                return f.read(MAX_SCRIPT_BYTES)
        except OSError:
            return ""


def default_name(p: PgbenchParams) -> str:
    what = p.builtin or "file-" + (p.file or p.script).rsplit("/", 1)[-1]
    name = f"pgbench-{what}-s{p.scale}-c{p.clients}"
    name += f"-j{p.threads}" if p.threads > 1 else ""
    name += f"-r{p.rate}" if p.rate else ""
    name += f"-w{p.warmup}" if p.warmup else ""
    settings = {
        "sc": (p.synchronous_commit, "on"),
        "fsync": ("on" if p.fsync else "off", "on"),
        "sb": (f"{p.shared_buffers // MiB}MiB" if p.shared_buffers % MiB == 0 else f"{p.shared_buffers}B", "128MiB"),
        "wal": (p.wal_level, "replica"),
        "fpw": ("on" if p.full_page_writes else "off", "on"),
    }
    name += "".join(f"-{key}_{value}" for key, (value, default) in settings.items() if value != default)
    return name
