"""The pieces a Report is made of (figures, each with the table behind it) and the limits every
figure builder shares; report/model.py and the builders in their own modules (remote, runtimes,
detail) import them from here."""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.analyse import Analysis

MAX_LINES = 8  # lines per sweep or scaling figure
MAX_STACKS = 12  # stacks per latency panel
LAT_STATS = ("mean", "p99")


@dataclass
class Table:
    id: str
    title: str
    columns: list
    rows: list


@dataclass
class Figure:
    id: str
    kind: str
    title: str
    caption: str
    table: Table
    data: dict = field(default_factory=dict)
    drawn: bool = True


@dataclass
class Report:
    title: str
    analysis: Analysis
    figures: list = field(default_factory=list)
    tables: list = field(default_factory=list)


def mean(vals: list):
    """The mean of the values that exist, or None."""
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None
