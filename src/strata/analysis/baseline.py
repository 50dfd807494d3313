"""Throughput relative to the raw device (raw = 1.0), as in Figure 3 of seed study 003.

The baseline of a cell is the cell on the same device with filesystem raw,
runtime native and path device, the same workload parameters and the same
load (validity.raw_baseline_key). A cell above its baseline (beyond the
intervals with repetitions, by validity.ABOVE_RAW_TOLERANCE without) cannot be device performance (study 003, section
5.2: loop-lvm "1.4x the IOPS of a RAW block device" because "dm-loop does not
respect the O_DIRECT flag"): its repetitions are drawn apart, as unconfirmed unless the bytes show a cache, in the
cell, with the evidence.
"""

from __future__ import annotations

from strata.analysis.cells import Cell, add_ok
from strata.analysis.stats import Ratio, ratio, summarize
from strata.results import validity

# With repetitions: above the raw device when the ratio's 95% interval lies above 1.0 and the
# mean is this far above (a few percent over raw is filesystem readahead or noise, not a cache).
MIN_ABOVE = 1.10


def baseline_key(c: Cell) -> tuple:
    key = c.__dict__.get("_baseline_key")
    if key is None:
        key = c.__dict__["_baseline_key"] = validity.raw_baseline_key({"trial": c.trial})
    return key


def raw_index(cells: list[Cell]) -> dict[tuple, Cell]:
    return {baseline_key(c): c for c in cells if c.is_raw and c.values}


def raw_of(c: Cell, index: dict[tuple, Cell]) -> Cell | None:
    return None if c.is_raw else index.get(baseline_key(c))


def ratio_to_raw(c: Cell, index: dict[tuple, Cell]) -> Ratio | None:
    raw = raw_of(c, index)
    if raw is None or not c.values:
        return None
    return ratio(c.summary, raw.summary)


def apart_ratio(c: Cell, index: dict[tuple, Cell], values: list) -> float | None:
    """The mean of values drawn apart (cache or unconfirmed) relative to the raw device."""
    raw = raw_of(c, index)
    if raw is None or not values or not raw.summary.mean:
        return None
    return (sum(values) / len(values)) / raw.summary.mean


def above_raw_evidence(c: Cell, raw: Cell, values: list) -> dict | None:
    """Evidence that a cell's results (`values`: not byte-flagged as a cache) beat its raw baseline: by the
    intervals when both have repetitions (the ratio's interval lies above 1.0 and its mean above
    MIN_ABOVE), else by validity's single-trial tolerance."""
    s = summarize(values)
    r = ratio(s, raw.summary)
    raw_id = raw.ok[0]["trial_id"] if raw.ok else None
    if r.low is not None:
        if r.low > 1.0 and r.value > MIN_ABOVE:
            return {
                "reason": f"{s.mean:.0f} is {r.value:.2f}x [{r.low:.2f}, {r.high:.2f}] the raw device's "
                f"{raw.summary.mean:.0f} for the same workload, although the device moved the workload's bytes: "
                "unconfirmed as device performance (a cache below the device, or the raw baseline)",
                "raw_value": raw.summary.mean,
                "raw_trial": raw_id,
                "ratio": r.value,
            }
        return None
    judged = validity.above_raw(s.mean, raw.summary.mean, raw_id, True)
    return {"reason": judged.reason, **judged.evidence} if judged else None


def apply_above_raw(cells: list[Cell]) -> list[Cell]:
    """Judge each cell against its raw device once repetitions exist: beyond the intervals, its results
    are unconfirmed (drawn apart); within them, trials a single comparison flagged go back to the device
    numbers. Returns the cells judged above the raw device."""
    index = raw_index(cells)
    above = []
    for c in cells:
        raw = raw_of(c, index)
        pool = list(zip(c.ok, c.values)) + list(zip(c.unconfirmed, c.unconfirmed_values))
        if raw is None or not pool:
            continue
        ev = above_raw_evidence(c, raw, [v for _, v in pool])
        repeated = len(pool) >= 2 and raw.reps >= 2
        if ev:
            c.above_raw = ev
            c.unconfirmed, c.unconfirmed_values = [r for r, _ in pool], [v for _, v in pool]
            c.ok, c.values, c.steady = [], [], []
            above.append(c)
        elif repeated and c.unconfirmed:  # the intervals say: not above; the single-trial flags are dismissed
            for r, v in zip(c.unconfirmed, c.unconfirmed_values):
                add_ok(c, r, v)
            c.unconfirmed, c.unconfirmed_values = [], []
        c.summary = summarize(c.values)
    return above
