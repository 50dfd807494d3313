"""Throughput relative to the raw device (raw = 1.0), as in Figure 3 of seed study 003.

The baseline of a cell is the cell on the same device with filesystem raw,
runtime native and path device, the same workload parameters and the same
load (validity.raw_baseline_key). A cell above its baseline (beyond the
intervals with repetitions, by validity.ABOVE_RAW_TOLERANCE without) cannot be device performance (study 003, section
5.2: loop-lvm "1.4x the IOPS of a RAW block device" because "dm-loop does not
respect the O_DIRECT flag"): its repetitions move to the cached side of the
cell, with the evidence.
"""

from __future__ import annotations

from strata import validity
from strata.analysis.cells import Cell
from strata.analysis.stats import Ratio, ratio, summarize

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


def cached_ratio(c: Cell, index: dict[tuple, Cell]) -> float | None:
    raw = raw_of(c, index)
    if raw is None or not c.cached_values:
        return None
    return (sum(c.cached_values) / len(c.cached_values)) / raw.summary.mean


def above_raw_evidence(c: Cell, raw: Cell) -> dict | None:
    """Evidence that a cell beats its raw baseline: by the intervals when both have repetitions
    (the interval of the ratio lies above MIN_ABOVE), else by validity's single-trial tolerance."""
    r = ratio(c.summary, raw.summary)
    raw_id = raw.ok[0]["trial_id"] if raw.ok else None
    if r.low is not None:
        if r.low > 1.0 and r.value > MIN_ABOVE:
            return {
                "reason": f"{c.summary.mean:.0f} is {r.value:.2f}x [{r.low:.2f}, {r.high:.2f}] the raw device's "
                f"{raw.summary.mean:.0f} for the same workload: a cache answered, this is not device "
                "performance",
                "raw_value": raw.summary.mean,
                "raw_trial": raw_id,
                "ratio": r.value,
            }
        return None
    judged = validity.above_raw(c.summary.mean, raw.summary.mean, raw_id, None)
    return {"reason": judged.reason, **judged.evidence} if judged else None


def apply_above_raw(cells: list[Cell]) -> list[Cell]:
    """Move cells whose mean beats the raw device to the cached side; return them."""
    index = raw_index(cells)
    moved = []
    for c in cells:
        raw = raw_of(c, index)
        if raw is None or not c.values:
            continue
        ev = above_raw_evidence(c, raw)
        if ev:
            c.above_raw = ev
            c.cached.extend(c.ok)
            c.cached_values.extend(c.values)
            c.ok, c.values, c.steady = [], [], []
            c.summary = summarize([])
            moved.append(c)
    return moved
