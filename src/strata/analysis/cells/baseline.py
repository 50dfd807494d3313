"""Throughput relative to the raw device (raw = 1.0), as in Figure 3 of seed study 003.

The baseline of a cell is the cell on the same device with filesystem raw,
runtime native and path device, the same workload parameters and the same
load (validity.raw_baseline_key). A cell above its baseline, as validity judges it
(validity.above_raw_repeated: beyond the intervals with repetitions, by the single-trial tolerance
without), cannot be device performance (study 003, section 5.2): its repetitions are drawn apart, as
unconfirmed unless the bytes show a cache, in the cell, with the judgement.
"""

from __future__ import annotations

from strata.analysis.cells.cells import Apart, Cell, add_ok
from strata.analysis.cells.query import summary_of
from strata.analysis.decisions.stats import Ratio, ratio, summarize
from strata.results import validity
from strata.results.flags import AboveRaw, Flag


def baseline_key(c: Cell) -> tuple[object, ...]:
    return c.raw_key


def raw_index(cells: list[Cell]) -> dict[tuple[object, ...], Cell]:
    return {baseline_key(c): c for c in cells if c.is_raw and c.values}


def raw_of(c: Cell, index: dict[tuple[object, ...], Cell]) -> Cell | None:
    return None if c.is_raw else index.get(baseline_key(c))


def ratio_to_raw(c: Cell, index: dict[tuple[object, ...], Cell]) -> Ratio | None:
    raw = raw_of(c, index)
    if raw is None or not c.values:
        return None
    return ratio(summary_of(c), summary_of(raw))


def apart_ratio(c: Cell, index: dict[tuple[object, ...], Cell], values: list[float]) -> float | None:
    """The mean of values drawn apart (cache or unconfirmed) relative to the raw device."""
    raw = raw_of(c, index)
    if raw is None or not values or not summary_of(raw).mean:
        return None
    return (sum(values) / len(values)) / summary_of(raw).mean


def above_raw(c: Cell, raw: Cell, values: list[float]) -> AboveRaw | None:
    """validity's judgement of a cell's results (`values`: not byte-flagged as a cache) against its raw
    baseline, by the interval of their ratio where both have repetitions."""
    s = summarize(values)
    r = ratio(s, summary_of(raw))
    raw_id = raw.ok[0].trial_id if raw.ok else None
    return validity.above_raw_repeated(s.mean, summary_of(raw).mean, raw_id, r.value, r.low, r.high)


def apply_above_raw(cells: list[Cell]) -> list[Cell]:
    """Judge each cell against its raw device once repetitions exist: beyond the intervals, its results
    are unconfirmed (drawn apart); within them, trials a single comparison flagged go back to the device
    numbers. Returns the cells judged above the raw device."""
    index = raw_index(cells)
    above = []
    for c in cells:
        raw = raw_of(c, index)
        unconfirmed = c.apart[Flag.ABOVE_RAW]
        pool = list(zip(c.ok, c.values)) + list(zip(unconfirmed.results, unconfirmed.values))
        if raw is None or not pool:
            continue
        judged = above_raw(c, raw, [v for _, v in pool])
        repeated = len(pool) >= 2 and raw.reps >= 2
        if judged:
            c.above_raw = judged
            c.apart[Flag.ABOVE_RAW] = Apart([r for r, _ in pool], [v for _, v in pool])
            c.ok, c.values, c.steady = [], [], []
            above.append(c)
        elif repeated and unconfirmed.results:  # the intervals say: not above; the single-trial flags are dismissed
            for r, v in zip(unconfirmed.results, unconfirmed.values):
                add_ok(c, r, v)
            c.apart[Flag.ABOVE_RAW] = Apart()
        c.summary = summarize(c.values)
    return above
