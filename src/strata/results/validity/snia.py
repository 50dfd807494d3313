"""Steady-state detection over a per-second series, as in SNIA's Solid State
Storage Performance Test Specification (PTS) v2.0.2, section 2.1.24 and 3.5
("Steady State"): over a measurement window of `window` rounds,

- the range of the values (max - min) is within 20% of the window's mean, and
- the excursion of the least-squares line over the window (slope x (window - 1))
  is within 10% of the window's mean.

strata applies it to the per-second series of a trial's headline (the series the
workload names in `metrics.primary.series`, in workload-series.json), one round
per second, over the last `window` seconds; fio's own `--steadystate=iops_slope`
uses the same idea (fio(1) "steadystate"). series.py decides which samples
count (the partial last second does not).
"""

from __future__ import annotations

from typing import TypedDict


class Verdict(TypedDict):
    """SNIA's verdict over the last window (the steady flag's fields of the same names)."""

    steady: bool
    window_s: int
    mean: float | None
    range_pct: float | None
    slope_pct: float | None
    judged: bool  # False: too few samples to judge
    reason: str


class Drift(TypedDict):
    """The trend over the whole window: its excursion as a share of the mean, and its slope's t statistic."""

    drift_pct: float | None
    drift_t: float | None


MAX_RANGE_PCT = 20.0
MAX_SLOPE_PCT = 10.0
# A trend is a drift when its slope is beyond the per-second noise at 1% (two-sided), as well as beyond the
# 10% excursion: 1% keeps a run of 60 short trials to about one false call. Student's t quantiles at 0.995,
# by degrees of freedom (a df between two keys takes the lower key's, the wider); the normal's past 120.
T995 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250, 10: 3.169,
        12: 3.055, 15: 2.947, 20: 2.845, 30: 2.750, 40: 2.704, 60: 2.660, 120: 2.617}  # fmt: skip
Z995 = 2.576


def drift_t_critical(df: int) -> float:
    if df < 1:
        raise ValueError("a trend needs at least 3 seconds (1 degree of freedom)")
    if df > max(T995):
        return Z995
    return T995[max(k for k in T995 if k <= df)]


def detect(values: list[float], window: int = 5) -> Verdict:
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


def drift(values: list[float]) -> Drift:
    """The trend over the whole measured window: the least-squares line's excursion (slope x (n - 1)) as a
    share of the mean, and the slope's t statistic against the scatter around the line. What a short trial
    can show: a warm-up or a filling cache moves the line beyond its noise; per-second noise alone does not.
    `drift_pct`/`drift_t` are None where fewer than 3 seconds or no I/O leave nothing to fit."""
    n = len(values)
    mean = sum(values) / n if n else 0.0
    if n < 3 or mean <= 0:
        return {"drift_pct": None, "drift_t": None}
    ys = [float(v) for v in values]
    b = _slope(ys)
    mx = (n - 1) / 2.0
    a = mean - b * mx
    resid = sum((y - (a + b * i)) ** 2 for i, y in enumerate(ys))
    sxx = sum((i - mx) ** 2 for i in range(n))
    se = (resid / (n - 2) / sxx) ** 0.5
    t = b / se if se > 0 else (0.0 if b == 0 else 1e9 if b > 0 else -1e9)  # a perfect line (JSON has no inf)
    return {"drift_pct": 100.0 * abs(b) * (n - 1) / mean, "drift_t": t}


def _slope(ys: list[float]) -> float:
    """Least-squares slope of ys against 0, 1, 2, ..."""
    n = len(ys)
    mx = (n - 1) / 2.0
    my = sum(ys) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den
