"""The saturated flag: was the host's CPU busy all through the trial? Then the number measures the CPU as
much as the storage, and two stacks compared there differ in what they cost the CPU, not only in what
their storage gives.

Judged from the host collector's totals over the collectors' window (collectors/host.py): busy is every
tick but idle and iowait. A run that measures memory by design (a tmpfs path; a tool's buffered I/O: the cache
flag is *expected*) is CPU-bound by nature: its flag is raised and expected, and does not warn. A database's
is never: its clients and servers share the CPU, however buffered its I/O (Cassandra's).
"""

from __future__ import annotations

from strata.core.jsondoc import JsonObject
from strata.results.flags import Flag, Judgement
from strata.results.flags.codec import Saturated

# The host's CPU busy this share of its ticks over the trial (all cores together) is saturated.
MIN_BUSY_PERCENT = 95.0


def saturated(collectors: JsonObject, memory_by_design: bool) -> Saturated | None:
    """None when the host's CPU was not sampled (a trial too short for two samples, a result without it)."""
    host = collectors.get("host")
    shares: dict[str, float] = {}
    for k in ("user", "system", "iowait", "idle"):
        v = host.get(f"cpu_{k}_percent") if isinstance(host, dict) else None
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        shares[k] = float(v)
    busy = 100.0 - shares["idle"] - shares["iowait"]
    evidence: JsonObject = {f"cpu_{k}_percent": round(v, 1) for k, v in shares.items()}
    evidence |= {"cpu_busy_percent": round(busy, 1), "threshold_percent": MIN_BUSY_PERCENT}
    if busy < MIN_BUSY_PERCENT:
        return Judgement(Flag.SATURATED, False, f"the host's CPU was {busy:.0f}% busy", evidence=evidence)
    said = (
        f"the host's CPU was {busy:.0f}% busy over the trial (user {shares['user']:.0f}%, system "
        f"{shares['system']:.0f}%; {MIN_BUSY_PERCENT:.0f}% is saturated)"
    )
    if memory_by_design:
        why = f"{said}, as a run that measures memory by design is"
        return Judgement(Flag.SATURATED, True, why, expected=True, evidence=evidence)
    why = f"{said}: the result measures the CPU as much as the storage"
    return Judgement(Flag.SATURATED, True, why, evidence=evidence)
