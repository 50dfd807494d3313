"""What the server template's lifecycle recorded of one trial (`<art>/<clients_dir>/clients.json`), read back
for the parser: the clients of each phase, their wall and CPU time host after host, and the servers'
counters before and after the measured run.

Written for the server template (workloads/server/): pgbench's metrics and ycsb's `merged_record` each
read the same record in their own copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strata.core.errors import TrialFailure


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


def client_dirs(arts: list[Path], records: list[dict[str, Any]], phase: str = "run") -> list[Path]:
    """Every client directory of `phase`, host after host, each under its host's artifacts."""
    return [a / c for a, r in zip(arts, records) for c in (r["phases"].get(phase) or {}).get("clients", [])]


def phases(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each phase's client wall and CPU time (the clients run outside the stack under test), host after host."""
    out: dict[str, Any] = {}
    for name in records[0]["phases"]:
        ph = [r["phases"][name] for r in records if name in r["phases"]]
        shares = [p.get("client_cpu_share") for p in ph]
        out[name] = {
            "wall_s": max(p["wall_s"] for p in ph),
            "clients": [c for p in ph for c in p["clients"]],
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
    return [s for r in records for s in (r.get("node_ready_s") or [])]
