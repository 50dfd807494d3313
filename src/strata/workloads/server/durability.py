"""The durability a database server ran under: the settings that decide when a commit reaches the device.

A commit that waits on its log's flush measures storage; one the server acknowledges before (PostgreSQL's
`synchronous_commit=off` or `fsync=off`, InnoDB's `innodb_flush_log_at_trx_commit` 0 or 2, Cassandra's
`commitlog_sync: periodic`) measures memory for its writes, and a stack compared under it is not the stack a
durable application gets. Each server workload states its settings in force, default or not (`Durability`,
stored as `metrics.durability` with every trial): `strata show` and the report show them in a column, and the
advice line that compares a non-durable run says so (`lax_of`, `shown`).

Each value is the server's own, read back from it where it said (the settings in force of its facts or
counters), else the value strata gave it, else the server's documented default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from strata.core.jsondoc import JsonObject


@dataclass(frozen=True)
class Setting:
    """One durability setting in force: its name, its value, the short form the column shows ("sc=on"), and
    `lax`: why a commit under it returns before its log reaches the device ("": it waits)."""

    name: str
    value: str
    short: str
    lax: str = ""


@dataclass(frozen=True)
class Durability:
    """A trial's durability settings, in the server's order (`metrics.durability`)."""

    settings: tuple[Setting, ...]

    @property
    def durable(self) -> bool:
        return not any(s.lax for s in self.settings)

    def to_json(self) -> JsonObject:
        return {
            "durable": self.durable,
            "settings": {s.name: s.value for s in self.settings},
            "lax": {s.name: s.lax for s in self.settings if s.lax},
            "shown": " ".join(s.short for s in self.settings),
        }


def value_of(name: str, *sources: Mapping[str, object], default: str) -> str:
    """A setting's value from the first source that holds it (the server's own first), else its default."""
    for src in sources:
        v = src.get(name)
        if v is not None and v != "":
            return str(v)
    return default


def of_metrics(metrics: Mapping[str, object]) -> JsonObject | None:
    """A stored result's `metrics.durability`, or None (a workload with no server, a result before it)."""
    d = metrics.get("durability")
    return d if isinstance(d, dict) else None


def lax_of(metrics: Mapping[str, object]) -> dict[str, str]:
    """The non-durable settings of a stored result, {"name=value": why}; {} when durable or unstated."""
    d = of_metrics(metrics) or {}
    lax, values = d.get("lax"), d.get("settings")
    if not isinstance(lax, dict) or not isinstance(values, dict):
        return {}
    return {f"{k}={values.get(k)}": str(why) for k, why in lax.items()}


def shown(metrics: Mapping[str, object]) -> str:
    """The column's text: "durable: sc=on fsync=on ..." or "NOT durable: sc=off ..."; "" when unstated."""
    d = of_metrics(metrics)
    if d is None:
        return ""
    return f"{'durable' if d.get('durable') else 'NOT durable'}: {d.get('shown', '')}".rstrip(": ")
