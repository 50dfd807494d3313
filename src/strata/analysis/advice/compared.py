"""What an advice group compares: the values, their unit and which way is better, chosen before the group analysis.

A group's stacks (analysis/cells/query.py `by_context`: one workload, load and device) are compared on the
workload's headline (`metrics.primary`: fio's IOPS, pgbench's tx/s), in the direction its declaration gives
(`Metric.better` of the headline field; higher when none says). Under an absolute offered rate
(`MetricSchema.offered`: ycsb's `target`, pgbench's `rate`) the throughput is the rate the clients offered,
the same for every stack that keeps up with it, so it decides nothing: the group compares the latency the
workload declares as its whole (the breakdown's last), at the statistic the spec names (`latency_stat`,
stored in each result's design; p99 by default), lower being better. A rate offered as a share of each
stack's own peak (ycsb's `target_share`) is not the same rate for every stack: those groups compare the
headline, whose differences are the peaks'.

This module only chooses; the comparisons themselves are analysis/decisions/groups.py's, given the values and the
direction chosen here (`Compared.runs`, `higher_is_better`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from strata.analysis.cells.cells import Cell
from strata.analysis.decisions.answer import Answer
from strata.analysis.decisions.groups import Runs
from strata.core.metrics import Metric

DEFAULT_LATENCY_STAT = "p99"
LATENCY_STATS = ("mean", "p50", "p90", "p95", "p99", "p99_9")
NS_PER_MS = 1e6


@dataclass
class Compared:
    """The values an advice group compares, per cell, their unit, and which way is better."""

    metric: str  # "" for the headline; else what is compared, in words: "p99 latency"
    unit: str
    higher_is_better: bool
    runs_of: dict[str, Runs] = field(default_factory=dict)  # cell key -> its values, with their rounds
    intended: bool = False  # the latency is timed from each operation's intended start (ycsb's, under a target)
    why: str = "under the offered rate"  # why a latency is compared, in words (the spec's `compare:` otherwise)

    @property
    def headline(self) -> bool:
        return not self.metric

    def runs(self, c: Cell) -> Runs:
        return self.runs_of.get(c.key) or Runs.of(())

    def mean(self, c: Cell) -> float:
        """The cell's mean of what is compared (the headline's: its summary's, as the report shows it)."""
        return c.summary.mean if self.headline else self.runs(c).mean

    def ranked(self, cells: list[Cell]) -> list[Cell]:
        """Best first, by mean."""
        return sorted(cells, key=self.mean, reverse=self.higher_is_better)

    def words(self) -> str:
        """What the group compares when it is not the headline, for the advice line ("" otherwise)."""
        if self.headline:
            return ""
        timed = ", timed from each operation's intended start" if self.intended else ""
        return f" (on {self.metric}, lower is better, {self.why}{timed})"

    def gap(self, a: Answer) -> float:
        """How far the leader is ahead of another, from the other's Answer against it. An interval's ratio is
        already in the direction of better (decisions/groups.py: the other's value over the leader's where higher
        is better, the leader's over the other's where lower is), so its gap is Answer.ahead; a ratio without an
        interval is the plain ratio of means, B/A, whose gap is B/A - 1 where lower is better."""
        return a.ahead if self.higher_is_better or a.known else a.ratio - 1


def of(group: list[Cell]) -> Compared:
    """What `group` (one advice group) compares: the latency the spec names (`compare:`), else latency under an
    absolute offered rate, else the headline."""
    first = group[0]
    chosen = design_of(group).get("compare")
    named = first.schema.field("latency", chosen) if isinstance(chosen, str) else None
    if named is not None:
        stat = latency_stat(group)
        runs = {c.key: _latency_runs(c, stat, named) for c in group}
        return Compared(f"{stat} {named.label or named.name} latency", "ms", False, runs, why="as the spec compares")
    offered = first.schema.offered
    total = first.schema.field("latency", first.schema.total_latency or "")
    if offered is not None and offered.absolute(first.workload) is not None and total is not None:
        stat = latency_stat(group)
        intended = all(r.metrics.get("latency_timed_from") == "intended" for c in group for r in c.ok)
        runs = {c.key: _latency_runs(c, stat, total) for c in group}
        return Compared(f"{stat} latency", "ms", False, runs, intended=intended and any(c.ok for c in group))
    return Compared("", first.unit, higher_is_better(first), {c.key: c.runs for c in group})


def design_of(group: list[Cell]) -> Mapping[str, object]:
    """The design stored with the group's first result that has one (the spec's choices: {} when none)."""
    return next((r.design for c in group for r in c.ok if r.design), {})


def latency_stat(group: list[Cell]) -> str:
    """The latency statistic the spec names for comparisons under an offered rate (its design's `latency_stat`)."""
    for c in group:
        for r in c.ok:
            stat = None if r.design is None else r.design.get("latency_stat")
            if stat in LATENCY_STATS:
                return str(stat)
    return DEFAULT_LATENCY_STAT


def _latency_runs(c: Cell, stat: str, m: Metric) -> Runs:
    """A cell's latency `m` at `stat`, in ms, with the round of each repetition that stored it."""
    vals, rounds = [], []
    for r in c.ok:
        v = m.value(r, c.schema.direction(r), stat)
        if isinstance(v, (int, float)) and v > 0:
            vals.append(float(v) / NS_PER_MS)
            rounds.append(-1 if (n := r.layers.repetition) is None else n)
    return Runs.of(vals, rounds)


def higher_is_better(c: Cell) -> bool:
    """The direction the workload declares for its headline (`Metric.better`); higher when it declares none."""
    name = next((r.primary.metric for r in c.ok), "")
    fields = [f for f in c.schema.fields if f.headline and f.kind == "total"]
    m = next((f for f in fields if f.name == name), None)
    return m is None or m.better != "lower"
