"""Steady-state detection over a per-second series, as in SNIA's Solid State
Storage Performance Test Specification (PTS) v2.0.2, section 2.1.24 and 3.5
("Steady State"): over a measurement window of `window` rounds,

- the range of the values (max - min) is within 20% of the window's mean, and
- the excursion of the least-squares line over the window (slope x (window - 1))
  is within 10% of the window's mean.

strata applies it to the per-second series of a trial's headline (the series the
workload names in `metrics.primary.series`, in workload-series.json), one round
per second, over the last `window` seconds; fio's own `--steadystate=iops_slope`
uses the same idea (fio(1) "steadystate"). validity.py decides which samples
count (the partial last second does not).
"""

from __future__ import annotations

MAX_RANGE_PCT = 20.0
MAX_SLOPE_PCT = 10.0


def detect(values: list[float], window: int = 5) -> dict:
    """Is the tail of `values` steady? Returns steady, window_s, mean, range_pct, slope_pct, reason."""
    if window < 2:
        raise ValueError("a steady-state window needs at least 2 samples")
    tail = [float(v) for v in values[-window:]]
    if len(tail) < window:
        return {
            "steady": False,
            "window_s": len(tail),
            "mean": None,
            "range_pct": None,
            "slope_pct": None,
            "judged": False,
            "reason": f"only {len(tail)} per-second sample(s), {window} needed: run at least "
            f"{window + 2} s (runtime) to judge steady state",
        }
    mean = sum(tail) / window
    if mean <= 0:
        return {
            "steady": False,
            "window_s": window,
            "mean": mean,
            "range_pct": None,
            "slope_pct": None,
            "judged": True,
            "reason": "no I/O in the last window: the workload stalled",
        }
    range_pct = 100.0 * (max(tail) - min(tail)) / mean
    slope_pct = 100.0 * abs(_slope(tail)) * (window - 1) / mean
    steady = range_pct <= MAX_RANGE_PCT and slope_pct <= MAX_SLOPE_PCT
    if steady:
        reason = (
            f"steady over the last {window} s: range {range_pct:.1f}% <= {MAX_RANGE_PCT:.0f}%, "
            f"slope excursion {slope_pct:.1f}% <= {MAX_SLOPE_PCT:.0f}% of the mean"
        )
    else:
        parts = []
        if range_pct > MAX_RANGE_PCT:
            parts.append(f"range {range_pct:.1f}% > {MAX_RANGE_PCT:.0f}%")
        if slope_pct > MAX_SLOPE_PCT:
            parts.append(f"slope excursion {slope_pct:.1f}% > {MAX_SLOPE_PCT:.0f}%")
        reason = f"not steady over the last {window} s: " + ", ".join(parts) + " of the mean"
    return {
        "steady": steady,
        "window_s": window,
        "mean": mean,
        "range_pct": range_pct,
        "slope_pct": slope_pct,
        "judged": True,
        "reason": reason,
    }


def _slope(ys: list[float]) -> float:
    """Least-squares slope of ys against 0, 1, 2, ..."""
    n = len(ys)
    mx = (n - 1) / 2.0
    my = sum(ys) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den
