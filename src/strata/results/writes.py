"""A result's `writes`: what the workload wrote and synced by its own count, and what each layer below wrote.

Stored with every trial (an addition within schema 2: a result stored before it has none):

    "writes": {
      "syncs": {"count", "streams", "what", "by_writes"} | null,   the syncs the workload asked for
      "direct": {"count", "bytes", "random"} | null,               the O_DIRECT writes it issued
      "workload_bytes": int, "basis": str,                         the bytes it says it wrote (basis: not
                                                                   O_DIRECT I/O, as pgbench's "as WAL")
      "window": "measured" | "trial",                              what the layers' bytes were counted over
      "amplification": {disk: float} | null                        per layer, the device under test first
    }

Write amplification is the bytes a layer wrote per byte the workload says it wrote: what a file
system's journal, a copy-on-write tree, a layer's metadata add. The layers' bytes are counted over
the workload's measured window (the per-second series prorated at its edges: collectors/diskstats.py
`within`), not over the whole trial, whose ramp the workload does not count; `window` says "trial"
where the series could not say. Below MIN_AMPLIFIED_BYTES written by the workload it is not given:
a journal commit or a file system's background work would decide it.
"""

from __future__ import annotations

from typing import TypedDict

from strata.core.jsondoc import JsonObject
from strata.results.flags import number
from strata.results.validity.evidence import LayerCounters
from strata.workloads.base import Parsed

# The workload must have written this much for its write amplification to be given.
MIN_AMPLIFIED_BYTES = 4 << 20


class Writes(TypedDict, total=False):
    """A result's `writes` (the form above); across hosts `hosts` (each host's), `workload_bytes` summed and
    `amplification` by `host:disk`."""

    syncs: JsonObject | None  # the workload's `Syncs`, as it stores them
    direct: JsonObject | None  # its `DirectWrites`
    workload_bytes: int
    basis: str
    window: str
    amplification: dict[str, float] | None
    hosts: dict[str, Writes]


def record(parsed: Parsed, layers: dict[str, LayerCounters], window: str) -> Writes:
    """The `writes` of a trial: the workload's declarations, and each layer's bytes written (`layers`: the
    disks' counters, the device under test first) per byte the workload wrote."""
    wrote = int(parsed.moved_bytes.get("write", 0) or 0)
    return {
        "syncs": parsed.syncs.to_json() if parsed.syncs is not None else None,
        "direct": parsed.direct_writes.to_json() if parsed.direct_writes is not None else None,
        "workload_bytes": wrote,
        "basis": parsed.moved_basis,
        "window": window,
        "amplification": amplification(wrote, layers),
    }


def amplification(workload_bytes: int, layers: dict[str, LayerCounters]) -> dict[str, float] | None:
    """Each layer's bytes written per byte the workload wrote (None: it wrote too little to say)."""
    if workload_bytes < MIN_AMPLIFIED_BYTES:
        return None
    return {name: round(float(number(d, "write_bytes") or 0) / workload_bytes, 4) for name, d in layers.items()}


def amplification_of(stored: Writes | None) -> dict[str, float] | None:
    """A result's write amplification per layer (the device under test first), from its `writes`, or None: not
    given, or stored before it was. (An older result's disks were counted over the whole trial, ramp included,
    which the workload's bytes leave out: no amplification is derived from them.)"""
    amp = stored.get("amplification") if isinstance(stored, dict) else None
    if not isinstance(amp, dict) or not amp:
        return None
    return {k: v for k, v in amp.items() if isinstance(v, (int, float))}  # numbers, as record() stores them


def across_hosts(per_host: dict[str, Writes | None]) -> Writes:
    """A trial's `writes` from its parts' (each host's instances against its own disks, judged there): each
    host's kept, the workload's bytes summed, each host's layers as `host:disk`."""
    parts = {h: w for h, w in per_host.items() if isinstance(w, dict)}
    amp = {f"{h}:{d}": v for h, w in parts.items() for d, v in (w.get("amplification") or {}).items()}
    return {
        "hosts": parts,
        "workload_bytes": sum(int(w.get("workload_bytes") or 0) for w in parts.values()),
        "amplification": amp or None,
    }


def device(stored: Writes | None) -> float | None:
    """The write amplification of the device under test (the first layer), from a result's `writes`, or None."""
    amp = amplification_of(stored)
    return next(iter(amp.values()), None) if amp else None
