"""Latency statistics merged from histograms, never from averaged percentiles.

fio's json+ output carries, for slat/clat/lat, a `bins` map {latency_ns: count}
on its own bucket grid (the same grid in every fio process), so histograms of
several jobs or containers add bucket by bucket and percentiles of the merged
histogram are exact to fio's bucket resolution.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

# The percentiles of every latency summary: fio's and Filebench's from their bins, the server workloads' from their
# histograms (workloads/server/latency.py).
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}


def merge_bins(bin_maps: list[dict[str, Any] | None]) -> Counter[int]:
    total: Counter[int] = Counter()
    for bins in bin_maps:
        for k, v in (bins or {}).items():
            total[int(k)] += int(v)
    return total


def percentile(bins: Counter[int], pct: float) -> float | None:
    n = sum(bins.values())
    if n == 0:
        return None
    rank = pct / 100.0 * n
    cum = 0
    for value in sorted(bins):
        cum += bins[value]
        if cum >= rank:
            return float(value)
    return float(max(bins))


def summarize(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge fio latency dicts (min/max/mean/N/bins) into one summary in ns."""
    parts = [p for p in parts if p and p.get("N", 0) > 0]
    n = sum(p["N"] for p in parts)
    if n == 0:
        return {"n": 0, "mean": None, "min": None, "max": None, **{k: None for k in PERCENTILES}}
    bins = merge_bins([p.get("bins") for p in parts])
    out = {
        "n": n,
        "mean": sum(p["mean"] * p["N"] for p in parts) / n,
        "min": float(min(p["min"] for p in parts)),
        "max": float(max(p["max"] for p in parts)),
    }
    for key, pct in PERCENTILES.items():
        out[key] = percentile(bins, pct) if bins else None
    return out
