"""A server workload's latency summary (the shape workloads/latency.py gives fio's: n, mean, min, max and its
percentiles) from the histograms of many clients and servers merged, never from averaged percentiles: an
HdrHistogram's (workloads/hdr.py: pgbench's per-transaction logs, YCSB's `.hdr` files), or a tool's own
histogram on one bucket grid, added bucket by bucket (sysbench's).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from strata.core.jsondoc import JsonObject
from strata.workloads import hdr
from strata.workloads.latency import PERCENTILES


def empty() -> JsonObject:
    return {"n": 0, "mean": None, "min": None, "max": None, **{k: None for k in PERCENTILES}}


def of_hdr(h: hdr.Histogram | None, unit: float) -> JsonObject:
    """The summary of an HdrHistogram, each value times `unit` (1000.0: from us to ns; 1: as recorded)."""
    if h is None or h.total == 0:
        return empty()
    out: JsonObject = {"n": h.total, "mean": h.mean() * unit, "min": h.min() * unit, "max": h.max() * unit}
    return out | {k: h.value_at_percentile(pct) * unit for k, pct in PERCENTILES.items()}


def merge(histograms: Iterable[Counter[float]]) -> Counter[float]:
    """Histograms on one bucket grid, added bucket by bucket."""
    total: Counter[float] = Counter()
    for h in histograms:
        total.update(h)
    return total


def of_buckets(
    counts: Counter[float],
    percentile: Callable[[Counter[float], float], float | None],
    unit_ns: float,
    mean: float | None,
    low: float | None,
    high: float | None,
) -> JsonObject:
    """The summary of a merged histogram whose values are in units of `unit_ns` (1e6: ms), with the tool's own
    mean, min and max (exact where the histogram's buckets are not) and each percentile by the tool's rule."""
    if sum(counts.values()) == 0:
        return empty()

    def ns(v: float | None) -> float | None:
        return None if v is None else v * unit_ns

    out: JsonObject = {"n": sum(counts.values()), "mean": ns(mean), "min": ns(low), "max": ns(high)}
    return out | {k: ns(percentile(counts, pct)) for k, pct in PERCENTILES.items()}
