"""What the lifecycle recorded of one trial (`<art>/<clients_dir>/clients.json`, lifecycle.write_record), read
back for the parser: the clients of each phase, their wall and CPU time host after host, the servers' seconds
to ready, the memory they could use, and their counters before and after the measured run.

Where a result stores its clients' share of the host's CPUs in the measured run is declared with the workload's
metrics (`MetricSchema.client_cpu`, `CLIENT_CPU`): the analysis takes it from the servers' CPU
(analysis/cells/usage.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from strata.core.errors import TrialFailure
from strata.core.jsondoc import JsonObject, JsonValue, ShapeError, arr, as_obj, obj
from strata.workloads.latency import number

# metrics.clients (`phases`): each phase's client wall and CPU time; the run's CPU share is what the analysis reads
CLIENT_CPU = ("metrics", "clients", "run", "client_cpu_share")


def read(art: Path, clients_dir: str, what: str) -> JsonObject:
    """One host's record; a `parse` failure naming it when it cannot be read."""
    path = art / clients_dir / "clients.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TrialFailure("parse", f"the {what} trial's record {path} cannot be read: {e}")
    if not isinstance(record, dict) or not isinstance(record.get("phases"), dict):
        raise TrialFailure("parse", f"the {what} trial's record {path} holds no phases")
    return record


def of_trial(arts: list[Path], clients_dir: str, what: str) -> tuple[list[JsonObject], list[Path]]:
    """Every host's record (`read`), and the measured run's client directories host after host."""
    recs = [read(a, clients_dir, what) for a in arts]
    return recs, client_dirs(arts, recs)


def _str(v: JsonValue, what: str) -> str:
    if not isinstance(v, str):
        raise ShapeError(f"{what} should be a string, not {type(v).__name__}")
    return v


def _phases(record: JsonObject) -> JsonObject:
    return obj(record, "phases")


def client_dirs(arts: list[Path], records: list[JsonObject], phase: str = "run") -> list[Path]:
    """Every client directory of `phase`, host after host, each under its host's artifacts."""
    return [
        a / _str(c, "a client directory")
        for a, r in zip(arts, records)
        for c in arr(as_obj(_phases(r).get(phase) or {}, phase), "clients")
    ]


def phases(records: list[JsonObject], hosts: list[str] | None = None) -> JsonObject:
    """Each phase's client wall and CPU time (the clients run outside the stack under test), host after host: its
    wall time the longest, its CPU share the largest (each of its host's own cores); with `hosts` (each record's
    host directory), each client named by its host's directory."""
    out: JsonObject = {}
    for name in _phases(records[0]):
        ph = [obj(_phases(r), name) for r in records if name in _phases(r)]
        shares = [p.get("client_cpu_share") for p in ph]
        named = zip(hosts, ph) if hosts else (("", p) for p in ph)
        out[name] = {
            "wall_s": max(number(p.get("wall_s"), "wall_s") for p in ph),
            "clients": [f"{h}/{_str(c, 'a client')}" if h else c for h, p in named for c in arr(p, "clients")],
            "client_cpu_s": [c for p in ph for c in arr(p, "client_cpu_s")],
            "client_cpu_share": max(number(s, "client_cpu_share") for s in shares) if None not in shares else None,
        }
    return out


def observed(records: list[JsonObject], point: str) -> list[JsonObject]:
    """Every server's counters at `point` ("before", "after" the measured run), host after host."""
    return [as_obj(c, "a server's counters") for r in records for c in arr(as_obj(r.get("observed") or {}), point)]


def deltas(records: list[JsonObject], names: tuple[str, ...]) -> dict[str, int] | None:
    """What the measured run made the servers do: each counter after it less before it, summed over the
    servers; None when a server's counters could not be read on either side."""
    before, after = observed(records, "before"), observed(records, "after")
    if not before or len(before) != len(after) or any("error" in c for c in before + after):
        return None
    try:
        return {k: sum(int(_counter(a[k])) - int(_counter(b[k])) for a, b in zip(after, before)) for k in names}
    except (KeyError, TypeError, ValueError):
        return None


def _counter(v: JsonValue) -> float | str:
    """A counter as recorded, for int(): a number or its digits (anything else: a TypeError, as int() gives)."""
    if isinstance(v, (int, float, str)):
        return v
    raise TypeError(f"a counter should be a number, not {type(v).__name__}")


def ready_s(records: list[JsonObject]) -> list[float]:
    """Every server's seconds from its launch to ready, host after host."""
    return [number(s, "node_ready_s") for r in records for s in as_list(r.get("node_ready_s") or [])]


def as_list(v: JsonValue) -> list[JsonValue]:
    if not isinstance(v, list):
        raise ShapeError(f"should be an array, not {type(v).__name__}")
    return v


def servers(records: list[JsonObject]) -> int:
    return sum(int(number(r.get("servers") or 0, "servers")) for r in records)


def data_set_bytes(records: list[JsonObject], key: str = "data_set_bytes") -> int | None:
    """The servers' data set after the measured run (each server's counter `key`), or None when one is unknown."""
    sizes = [c.get(key) for c in observed(records, "after")]
    return sum(s for s in sizes if isinstance(s, int)) if sizes and None not in sizes else None


def usable_memory(records: list[JsonObject]) -> tuple[int | None, str]:
    """The memory every host's servers could use (memory.usable), and what bounds it."""
    mems = [as_obj(r.get("memory") or {}, "memory").get("bytes") for r in records]
    ints = [m for m in mems if isinstance(m, int)]
    mem = sum(ints) if mems and len(ints) == len(mems) else None
    return mem, "; ".join(dict.fromkeys(str(as_obj(r.get("memory") or {}, "memory").get("of", "")) for r in records))


def added(per_client: list[list[float]]) -> list[float]:
    """The clients' per-second figures added second by second, over the seconds every one of them reported."""
    seconds = min((len(x) for x in per_client), default=0)
    return [sum(x[i] for x in per_client) for i in range(seconds)]
