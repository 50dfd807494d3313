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
from typing import Any

from strata.core.errors import TrialFailure

# metrics.clients (`phases`): each phase's client wall and CPU time; the run's CPU share is what the analysis reads
CLIENT_CPU = ("metrics", "clients", "run", "client_cpu_share")


def read(art: Path, clients_dir: str, what: str) -> dict[str, Any]:
    """One host's record; a `parse` failure naming it when it cannot be read."""
    path = art / clients_dir / "clients.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TrialFailure("parse", f"the {what} trial's record {path} cannot be read: {e}")
    if not isinstance(record, dict) or not isinstance(record.get("phases"), dict):
        raise TrialFailure("parse", f"the {what} trial's record {path} holds no phases")
    return record


def of_trial(arts: list[Path], clients_dir: str, what: str) -> tuple[list[dict[str, Any]], list[Path]]:
    """Every host's record (`read`), and the measured run's client directories host after host."""
    recs = [read(a, clients_dir, what) for a in arts]
    return recs, client_dirs(arts, recs)


def client_dirs(arts: list[Path], records: list[dict[str, Any]], phase: str = "run") -> list[Path]:
    """Every client directory of `phase`, host after host, each under its host's artifacts."""
    return [a / c for a, r in zip(arts, records) for c in (r["phases"].get(phase) or {}).get("clients", [])]


def phases(records: list[dict[str, Any]], hosts: list[str] | None = None) -> dict[str, Any]:
    """Each phase's client wall and CPU time (the clients run outside the stack under test), host after host: its
    wall time the longest, its CPU share the largest (each of its host's own cores); with `hosts` (each record's
    host directory), each client named by its host's directory."""
    out: dict[str, Any] = {}
    for name in records[0]["phases"]:
        ph = [r["phases"][name] for r in records if name in r["phases"]]
        shares = [p.get("client_cpu_share") for p in ph]
        named = zip(hosts, ph) if hosts else (("", p) for p in ph)
        out[name] = {
            "wall_s": max(p["wall_s"] for p in ph),
            "clients": [f"{h}/{c}" if h else c for h, p in named for c in p["clients"]],
            "client_cpu_s": [c for p in ph for c in p["client_cpu_s"]],
            "client_cpu_share": max(shares) if None not in shares else None,
        }
    return out


def observed(records: list[dict[str, Any]], point: str) -> list[dict[str, Any]]:
    """Every server's counters at `point` ("before", "after" the measured run), host after host."""
    return [c for r in records for c in (r.get("observed") or {}).get(point) or []]


def deltas(records: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, int] | None:
    """What the measured run made the servers do: each counter after it less before it, summed over the
    servers; None when a server's counters could not be read on either side."""
    before, after = observed(records, "before"), observed(records, "after")
    if not before or len(before) != len(after) or any("error" in c for c in before + after):
        return None
    try:
        return {k: sum(int(a[k]) - int(b[k]) for a, b in zip(after, before)) for k in names}
    except (KeyError, TypeError, ValueError):
        return None


def ready_s(records: list[dict[str, Any]]) -> list[float]:
    """Every server's seconds from its launch to ready, host after host."""
    return [s for r in records for s in (r.get("node_ready_s") or [])]


def servers(records: list[dict[str, Any]]) -> int:
    return sum(r.get("servers") or 0 for r in records)


def data_set_bytes(records: list[dict[str, Any]], key: str = "data_set_bytes") -> int | None:
    """The servers' data set after the measured run (each server's counter `key`), or None when one is unknown."""
    sizes = [c.get(key) for c in observed(records, "after")]
    return sum(s for s in sizes if isinstance(s, int)) if sizes and None not in sizes else None


def usable_memory(records: list[dict[str, Any]]) -> tuple[int | None, str]:
    """The memory every host's servers could use (memory.usable), and what bounds it."""
    mems = [(r.get("memory") or {}).get("bytes") for r in records]
    mem = sum(m for m in mems if isinstance(m, int)) if mems and all(isinstance(m, int) for m in mems) else None
    return mem, "; ".join(dict.fromkeys(str((r.get("memory") or {}).get("of", "")) for r in records))


def added(per_client: list[list[float]]) -> list[float]:
    """The clients' per-second figures added second by second, over the seconds every one of them reported."""
    seconds = min((len(x) for x in per_client), default=0)
    return [sum(x[i] for x in per_client) for i in range(seconds)]
