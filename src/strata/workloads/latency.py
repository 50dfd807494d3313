"""Latency statistics merged from histograms, never from averaged percentiles.

fio's json+ output carries, for slat/clat/lat, a `bins` map {latency_ns: count}
on its own bucket grid (the same grid in every fio process), so histograms of
several jobs or containers add bucket by bucket and percentiles of the merged
histogram are exact to fio's bucket resolution.
"""

from __future__ import annotations

from collections import Counter

from strata.core.jsondoc import JsonObject, JsonValue, ShapeError, as_obj

# The percentiles of every latency summary: fio's and Filebench's from their bins, the server workloads' from their
# histograms (workloads/server/latency.py).
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}


def number(v: JsonValue, what: str) -> float:
    """A tool's figure as it wrote it (an integer stays one, as stored before); another type is a ShapeError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ShapeError(f"{what} should be a number, not {type(v).__name__}")
    return v


def figure(d: JsonObject, key: str) -> float:
    """d[key] as the number the tool wrote; missing is a ShapeError: a tool's own figure, always there."""
    return number(d.get(key), repr(key))


def merge_bins(bin_maps: list[JsonValue]) -> Counter[int]:
    """Histograms {value: count} added up (a missing or null one is empty)."""
    total: Counter[int] = Counter()
    for bins in bin_maps:
        for k, v in as_obj(bins or {}, "bins").items():
            total[int(k)] += int(_count(v))
    return total


def _count(v: JsonValue) -> float | str:
    if isinstance(v, (int, float, str)):
        return v
    raise ShapeError(f"a bin's count should be a number, not {type(v).__name__}")


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


def summarize(given: list[JsonValue]) -> JsonObject:
    """Merge fio latency dicts (min/max/mean/N/bins) into one summary in ns (a missing one is skipped)."""
    parts = [p for p in (as_obj(g, "a latency") for g in given if g) if "N" in p and figure(p, "N") > 0]
    n = sum(figure(p, "N") for p in parts)
    if n == 0:
        return {"n": 0, "mean": None, "min": None, "max": None, **{k: None for k in PERCENTILES}}
    bins = merge_bins([p.get("bins") for p in parts])
    out: JsonObject = {
        "n": n,
        "mean": sum(figure(p, "mean") * figure(p, "N") for p in parts) / n,
        "min": float(min(figure(p, "min") for p in parts)),
        "max": float(max(figure(p, "max") for p in parts)),
    }
    for key, pct in PERCENTILES.items():
        out[key] = percentile(bins, pct) if bins else None
    return out
