"""The pieces a Report is made of (figures, each with the table behind it) and the limits every
figure builder shares; report/model.py and the builders in their own modules (remote, runtimes,
detail) import them from here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from strata.analysis.analyse import Analysis
from strata.analysis.cells.cells import Cell
from strata.core.metrics import MetricSchema

MAX_LINES = 8  # lines per sweep or scaling figure
MAX_STACKS = 12  # stacks per latency panel
LAT_STATS = ("mean", "p99")
# (latency, statistic, mean over repetitions in us or None, repetitions): a row of a latency breakdown
LatencyRow = tuple[str | None, str, float | None, int]


SMOKE_MARK = "[SMOKE SCALE: not a measurement]"
SMOKE_BANNER = (
    "SMOKE SCALE: {n} of these trials ran at the smoke scale (strata run --scale smoke: one repetition of "
    "seconds-long, small trials). They show that every stack and report section of the spec runs here; "
    "they are not measurements of anything."
)


@dataclass
class Table:
    id: str
    title: str
    columns: list[str]
    rows: Sequence[Sequence[object]]  # the cells as stored values: numbers, text, None


class ChangeRow(TypedDict):
    """One row of a compare figure (report/figures.py `_compare`): B relative to A, with its 95% interval."""

    label: str
    rel: float
    low: float | None
    high: float | None
    status: str  # higher, lower, same, undecided (analysis/compare.py status)


# A stack's bars in a latency breakdown panel: its label, whether it is drawn, and breakdown_entry's values.
StackBars = dict[str, str | bool | float | None]


class LatencyPanel(TypedDict):
    """One panel of a latency breakdown figure (report/figures.py `_latency`): a load and its stacks' bars."""

    load: str
    outstanding: int | None  # the I/Os in flight, where the workload counts them
    stacks: list[StackBars]


@dataclass
class Figure:
    id: str
    kind: str
    title: str
    caption: str
    table: Table
    data: dict[str, Any] = field(default_factory=dict)
    drawn: bool = True


@dataclass
class Report:
    title: str
    analysis: Analysis
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def mean(vals: list[float | None]) -> float | None:
    """The mean of the values that exist, or None."""
    have = [v for v in vals if v is not None]
    return sum(have) / len(have) if have else None


def latencies(c: Cell, kinds: Iterable[str | None]) -> list[LatencyRow]:
    """(latency, statistic, mean over repetitions in us or None, repetitions) of a cell, for each of the
    latencies `kinds` and each of LAT_STATS, or of the statistics the workload declares for it when they hold
    LAT_STATS and more (pgbench's p50, p95, p99 and p99.9): the rows of a latency breakdown's table."""
    out = []
    for kind in kinds:
        m = c.schema.field("latency", kind or c.schema.total_latency or "")
        declared = m.stats if m is not None else ()
        for stat in declared if set(LAT_STATS) <= set(declared) else LAT_STATS:
            s = c.latency(kind, stat)
            out.append((kind, stat, s.mean / 1000 if s.n else None, s.n))
    return out


def breakdown_entry(rows: list[LatencyRow]) -> dict[str, float | None]:
    """A stack's bars in a latency breakdown figure (report/figures.py `_latency`), from `latencies`."""
    return {f"{kind}_{stat}_us": us for kind, stat, us, _ in rows}


def breakdown_caption(schema: MetricSchema) -> str:
    """The latencies of a workload's breakdown in words, each by its label and name, the whole last."""
    parts = []
    for kind in schema.breakdown:
        m = schema.field("latency", kind)
        parts.append(f"{m.label} ({kind})" if m is not None and m.label else kind)
    words = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{words[:1].upper()}{words[1:]} latency"


# a point of a sweep or scaling line: (x, mean, ci_low, ci_high, the group it is drawn apart in)
Point = tuple[float, float, float | None, float | None, str | None]

SeriesPoints = list[tuple[float, float]]  # a per-second series: (t_s, value)


class Bar(TypedDict):
    """One bar of a throughput or ratio figure (report/figures.py `_bars`), and its table row."""

    label: str  # the stack, as short_labels names it
    load: str
    value: float  # the ratio to the raw device, or the throughput without one
    low: float | None  # its 95% interval, where it has one
    high: float | None
    apart: str | None  # the group its results are drawn apart in (cache, unconfirmed, emulated), or None
    note: str
    raw: float | None  # the raw device's mean, where the bar is a ratio to it
    n: int
    mean: float  # the throughput's mean
