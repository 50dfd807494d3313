"""Placement advice from measured placements: the same load on one host and across hosts (study 003,
section 6.3, assigns Cassandra containers to one server or to two: 6 on one server with two disks against
4 on each of two servers with a disk each, its Figure 8c).

When the results hold cells that differ only in their placement (hosts/: `placement: [{a: 2}, {a: 1,
b: 1}]`), at least one with every instance on one host and one spread over several, the advice
compares them as measured: each placement's aggregate throughput and p99 latency (means over the
repetitions, with their 95% intervals), and each spread placement against the one-host one
(Welch's interval of the difference, the rule of advice.py: better or worse beyond the interval,
tied within +-5%, else undecided). advice.py's prediction from a single host's containers curve
stays only where no such measured placement exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from strata.analysis.cells.cells import Cell, direction
from strata.analysis.cells.query import fmt, summary_of
from strata.analysis.decisions.stats import Change, Summary, change

TIE = 0.05
MEASURED = "measured"


@dataclass
class Placed:
    """One placement of the group: its cell and what was measured."""

    cell: Cell
    name: str
    per_host: dict[str, int]  # host -> instances
    aggregate: Summary
    p99_ns: Summary
    vs_one_host: Change | None = None  # aggregate throughput relative to the one-host placement
    direction: str = "read"  # of the latency (cells.direction: read unless the workload only writes)

    @property
    def hosts(self) -> int:
        return sum(1 for n in self.per_host.values() if n)


@dataclass
class MeasuredPlacement:
    stack: str
    workload: str
    load: str
    instances: int
    unit: str
    one_host: Placed
    spread: list[Placed] = field(default_factory=list)  # over 2 or more hosts
    source = MEASURED

    @property
    def placements(self) -> list[Placed]:
        return [self.one_host, *self.spread]

    def verdict(self, p: Placed) -> str:
        """Spreading `p` against one host: gains, loses, tied (within +-5%), or undecided."""
        ch = p.vs_one_host
        if ch is None or ch.rel_low is None or ch.rel_high is None:
            return "undecided"
        if ch.rel_low >= -TIE and ch.rel_high <= TIE:
            return "tied"
        if ch.rel_low > 0:
            return "gains"
        if ch.rel_high < 0:
            return "loses"
        return "undecided"

    def entry_text(self, p: Placed) -> str:
        lat = "" if p.p99_ns.n == 0 else f", {p.direction} p99 {_ms(p.p99_ns)}"
        head = f"{_split(p)} {fmt(p.aggregate.mean, self.unit)}{_interval(p.aggregate, self.unit)}{lat}"
        ch = p.vs_one_host
        if p is self.one_host or ch is None:  # every spread placement is compared with the one-host one
            return f"{head} (n={p.aggregate.n})"
        low, high = ch.rel_low, ch.rel_high
        ratio = f"{1 + ch.rel:.2f}x" + (
            f" [{max(0.0, 1 + low):.2f}, {1 + high:.2f}]" if low is not None and high is not None else ""
        )
        return f"{head} ({ratio} of one host, n={p.aggregate.n}: {self.verdict(p)})"

    def short_text(self) -> str:
        """The placement part of a containers advice: measured figures instead of the prediction."""
        return f"; placing {self.instances} instances (measured): " + ", ".join(
            self.entry_text(p) for p in self.placements
        )

    def text(self) -> str:
        need = ""
        if any(self.verdict(p) == "undecided" for p in self.spread):
            reps = min(p.aggregate.n for p in self.placements)
            need = (
                ": repeat each placement (2 or more repetitions, 3 recommended) to decide"
                if reps < 2
                else f": the intervals do not decide at n={reps}; add repetitions"
            )
        return (
            f"{self.workload} at load {self.load} on {self.stack}, {self.instances} instances placed (measured): "
            + "; ".join(self.entry_text(p) for p in self.placements)
            + need
        )


def _split(p: Placed) -> str:
    counts = "+".join(f"{n}" for n in p.per_host.values() if n)
    where = "one host" if p.hosts == 1 else f"{p.hosts} hosts"
    return f"{counts} on {where} ({p.name})"


def _interval(s: Summary, unit: str) -> str:
    """The 95% interval as shown: a rate or a time is never below zero (t intervals of 2-3 noisy
    repetitions reach below it; the stored numbers keep the interval as computed)."""
    if s.ci_low is None or s.ci_high is None:
        return ""
    return f" [{fmt(max(0.0, s.ci_low), unit)}, {fmt(s.ci_high, unit)}]"


def _ms(s: Summary) -> str:
    text = f"{s.mean / 1e6:.2f} ms"
    if s.ci_low is None or s.ci_high is None:
        return text
    return f"{text} [{max(0.0, s.ci_low) / 1e6:.2f}, {s.ci_high / 1e6:.2f}]"


def _p99(c: Cell) -> Summary:
    """p99 of the whole latency the workload declares, else of the part of it nearest the whole."""
    p99s = [c.latency(kind, "p99") for kind in reversed(c.schema.breakdown)]
    return next((s for s in p99s if s.n), p99s[0] if p99s else c.latency(None, "p99"))


def _without_placement(c: Cell) -> str:
    return json.dumps({k: v for k, v in c.trial.items() if k not in ("placement", "repetition")}, sort_keys=True)


def measured(cells: list[Cell]) -> list[MeasuredPlacement]:
    """Every group of cells that differ only in placement and hold a one-host and a spread placement."""
    groups: dict[str, list[Cell]] = {}
    for c in cells:
        if c.values and not c.emulated and c.placement.instances:
            groups.setdefault(_without_placement(c), []).append(c)
    out = []
    for group in groups.values():
        placed = [_placed(c) for c in group]
        ones = sorted((p for p in placed if p.hosts == 1), key=lambda p: -p.aggregate.mean)
        spread = [p for p in placed if p.hosts > 1]
        if not ones or not spread:
            continue
        one = ones[0]  # the best single host, when several were measured alone
        for p in spread:
            p.vs_one_host = change(one.aggregate, p.aggregate)
        c0 = one.cell
        out.append(
            MeasuredPlacement(
                c0.stack,
                c0.labels["workload"],
                c0.labels["load"],
                sum(one.per_host.values()),
                c0.unit,
                one,
                sorted(spread, key=lambda p: (p.hosts, p.name)),
            )
        )
    return sorted(out, key=lambda m: (m.workload, m.stack, m.load))


def _placed(c: Cell) -> Placed:
    way = direction(c.ok[0]) if c.ok else "read"
    per_host = dict(c.placement.instances or {})
    return Placed(c, c.placement.name, per_host, summary_of(c), _p99(c), direction=way)


def for_stack(found: list[MeasuredPlacement], stack: str, workload: str) -> MeasuredPlacement | None:
    """The measured placement of a containers advice's stack and workload (the most instances), if any."""
    mine = [m for m in found if m.stack == stack and m.workload == workload]
    return max(mine, key=lambda m: m.instances) if mine else None
