"""A latency summary in ns (the shape workloads/latency.py gives fio's: n, mean, min, max, percentiles) from
a histogram of many clients and servers merged bucket by bucket, never from averaged percentiles.

Written for the server template (workloads/server/): pgbench's `summary_ns` (from an HdrHistogram) and ycsb's
parse give the same shape from their own histograms.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}


def merge(histograms: Iterable[Counter[float]]) -> Counter[float]:
    """Histograms on one bucket grid, added bucket by bucket."""
    total: Counter[float] = Counter()
    for h in histograms:
        total.update(h)
    return total


def summary_ns(
    counts: Counter[float],
    percentile: Callable[[Counter[float], float], float | None],
    unit_ns: float,
    mean: float | None,
    low: float | None,
    high: float | None,
) -> dict[str, Any]:
    """The summary of a merged histogram whose values are in units of `unit_ns` (1e6: ms), with the tool's own
    mean, min and max (exact where the histogram's buckets are not) and each percentile by the tool's rule."""
    n = sum(counts.values())
    if n == 0:
        return {"n": 0, "mean": None, "min": None, "max": None, **{k: None for k in PERCENTILES}}

    def ns(v: float | None) -> float | None:
        return None if v is None else v * unit_ns

    out: dict[str, Any] = {"n": n, "mean": ns(mean), "min": ns(low), "max": ns(high)}
    return out | {k: ns(percentile(counts, pct)) for k, pct in PERCENTILES.items()}
