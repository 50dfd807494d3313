"""Advice: the best stack per workload, stacks equivalent within a margin, and containers per host.

"Which host file system, which storage driver, volume or bind mount or writable layer, how many containers
per host" (docs/architecture.md): among the configurations measured as device performance (cache-flagged,
unconfirmed and emulated ones excluded, the raw device too: it is the baseline, not a place for a
container's files), the leader is compared with every other (analysis/groups.py): each is *worse*,
*equivalent within +-margin* (the spec's `margin`, 5% by default), or not decided at the margin. Every
line then ends with an answer:

- *best*: every other stack is decidedly worse: "A is best: 12% [6%, 19%] ahead of the next, B";
- *equivalent*: the others are equivalent or worse: "equivalent within +-5%: A, B - choose on other
  grounds";
- *equivalent within the margin the data support*, when some comparison is not decided at the margin:
  "equivalent within +-14% (not decided at +-5%): A, B, C", the smallest margin within which every stack
  not decided worse lies of the leader, and what would decide the closest one.

One convention for every percentage of a line: how far the leader A is ahead of another B, A/B - 1 (so
that +-5% means the same in "ahead", "leads by" and "equivalent within"). The intervals stay valid for
`repetitions: auto` runs and across the group's comparisons (analysis/decide.py). Containers per host: study
003, section 6.3, "assign the number of containers that maximize the throughput", with the same rule for
the peak. Placement over hosts: measured where the results hold the same load on one host and across
hosts (analysis/placement.py), else predicted from the containers curve (`placement` below).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.analysis import compared
from strata.analysis.cells import Cell
from strata.analysis.decide import EQUIVALENT, WORSE, Answer, answer, repetitions_for, within_text
from strata.analysis.groups import compare
from strata.analysis.placement import MeasuredPlacement, for_stack
from strata.analysis.query import by_context, fmt
from strata.analysis.sweeps import Sweep, peak

BEST, EQUIVALENT_GROUP, UNDECIDED_GROUP = "best", "equivalent", "undecided"
MAX_USEFUL_REPETITIONS = 200  # beyond this, "add repetitions" is no advice


@dataclass
class Best:
    workload: str
    load: str
    unit: str
    best: Cell
    runner_up: Cell | None
    lead: Answer | None  # the runner-up relative to the best
    equivalent: list[Cell] = field(default_factory=list)
    worse: list[Cell] = field(default_factory=list)
    undecided: list[Cell] = field(default_factory=list)  # not decided at the margin, closest first
    answers: dict[str, Answer] = field(default_factory=dict)  # stack -> Answer (other relative to the best)
    candidates: int = 0
    need: str = ""
    method: str = ""  # where the intervals' variance came from (analysis/groups.py)
    by_cell: dict[str, Answer] = field(default_factory=dict)  # cell key -> Answer (two cells may share a stack: hosts)
    on: compared.Compared | None = None  # what the group compared, and which way is better (analysis/compared.py)

    def answer_of(self, c: Cell) -> Answer:
        return self.by_cell.get(c.key) or self.answers[c.stack]

    @property
    def margin(self) -> float:
        return self.best.margin

    @property
    def value(self) -> float:
        """The best stack's mean of what the group compared (its headline's, or its latency under a rate)."""
        return self.on.mean(self.best) if self.on is not None else self.best.summary.mean

    def _gap(self, c: Cell) -> float:
        a = self.answer_of(c)
        return self.on.gap(a) if self.on is not None else a.ahead

    @property
    def status(self) -> str:
        """best: ahead of every other beyond the intervals; equivalent: the others are worse or within
        +-margin; undecided: some difference the intervals do not decide at the margin (the line then says
        the margin they do support)."""
        if self.runner_up is None:
            return BEST
        return UNDECIDED_GROUP if self.undecided else EQUIVALENT_GROUP if self.equivalent else BEST

    @property
    def supported(self) -> float | None:
        """The smallest margin within which every stack not decided worse lies of the best (the whole
        interval, at the group's level); None when one of them has no interval."""
        vals = [self.answer_of(c).supported for c in self.equivalent + self.undecided]
        known = [v for v in vals if v is not None]
        return max(known) if vals and len(known) == len(vals) else None

    def text(self) -> str:
        on = self.on.words() if self.on is not None else ""
        where = f"{self.workload} at load {self.load} on {self.best.labels['device']}{on}"
        head = f"{self.best.stack} ({fmt(self.value, self.unit)}, n={self.best.reps})"
        if self.runner_up is None:
            return f"{where}: {head} is the only stack measured"
        worse = f"; worse: {', '.join(c.stack for c in self.worse)}" if self.worse else ""
        if self.status == BEST:
            assert self.lead is not None  # set with the runner-up (best_stacks)
            lead = self.on.lead_text(self.lead) if self.on is not None else self.lead.ahead_text()
            return f"{where}: {head} is best: {lead} ahead of the next, {self.runner_up.stack}"
        if self.status == EQUIVALENT_GROUP:
            names = ", ".join([self.best.stack] + [c.stack for c in self.equivalent])
            return f"{where}: equivalent within +-{self.margin:.0%}: {names} - choose on other grounds{worse}"
        sup = self.supported
        close = sorted(self.equivalent + self.undecided, key=self._gap)
        gaps = ", ".join(f"{c.stack} by {self._gap(c):.1%}" for c in close)
        answer_ = (
            f"equivalent within {within_text(sup)} (not decided at +-{self.margin:.0%}): {head} leads {gaps}"
            if sup is not None
            else f"undecided (no interval): {head} leads {gaps}"
        )
        return f"{where}: {answer_}{worse}" + (f"; {self.need}" if self.need else "")


def best_stacks(cells: list[Cell]) -> list[Best]:
    out: list[Best] = []
    for group in by_context([c for c in cells if c.values and not c.is_raw and not c.emulated]).values():
        on = compared.of(group)  # the values compared and their direction: the headline, or latency under a rate
        group = [c for c in group if on.runs(c).n] or group
        by_key = {c.key: c for c in group}
        top = group[0]
        cmp = compare({k: on.runs(c) for k, c in by_key.items()}, top.margin, top.design, on.higher_is_better)
        top = by_key[cmp.leader] if cmp.leader else on.ranked(group)[0]
        b = Best(top.labels["workload"], top.labels["load"], on.unit, top, None, None, candidates=len(group), on=on)
        others = on.ranked([c for c in group if c is not top])
        if others:
            b.runner_up, b.method = others[0], cmp.method
            for c in others:
                a = cmp.answers[c.key]
                b.answers[c.stack] = b.by_cell[c.key] = a
                {EQUIVALENT: b.equivalent, WORSE: b.worse}.get(a.outcome, b.undecided).append(c)
            b.lead = cmp.lead or b.by_cell[others[0].key]
            b.need = _need(top, b.undecided, b.by_cell, cmp.pairs)
        out.append(b)
    return sorted(out, key=lambda b: (b.workload, b.best.outstanding, b.load))


def _need(top: Cell, undecided: list[Cell], answers: dict[str, Answer], pairs: int) -> str:
    """What would decide the closest undecided comparison: repetitions of each, in a fixed design at the same
    error guarantee, at the observed spread."""
    if not undecided:
        return ""
    c = undecided[0]
    if top.reps < 2 or c.reps < 2:
        return "needs 2 or more repetitions of each (3 recommended)"
    n = repetitions_for(answers[c.key], 0.05 / max(pairs, 1), cap=MAX_USEFUL_REPETITIONS + 1)
    if n is None or n > MAX_USEFUL_REPETITIONS:
        return f"no affordable number of repetitions decides {c.stack} at +-{top.margin:.0%} at this spread"
    return f"about {n} repetitions of each would decide {c.stack} at +-{top.margin:.0%} (now {min(top.reps, c.reps)})"


@dataclass
class ContainersAdvice:
    stack: str
    workload: str
    best_x: int
    aggregate: float
    unit: str
    falls_after: bool
    counts: list[int]
    undecided: list[int] = field(default_factory=list)  # counts the intervals do not tell from the peak
    placement: list[dict[str, Any]] = field(
        default_factory=list
    )  # [{"hosts", "per_host", "aggregate", "vs_one_host"}] (003 6.3)
    measured: MeasuredPlacement | None = None  # the same load measured on one host and across hosts

    @property
    def status(self) -> str:
        return UNDECIDED_GROUP if self.undecided else BEST

    def text(self) -> str:
        tail = (
            "throughput falls beyond it"
            if self.falls_after
            else f"still not falling at {self.counts[-1]}: measure more containers to find the peak"
            if self.best_x == self.counts[-1]
            else "no fall of 10% beyond it"
        )
        head = (
            f"{self.workload} on {self.stack}: {self.best_x} container(s) per host give the most aggregate "
            f"throughput ({fmt(self.aggregate, self.unit)}; measured {', '.join(map(str, self.counts))}); {tail}"
        )
        head += self.placement_text()
        if self.undecided:
            return (
                f"undecided: {head}; the intervals do not tell it from "
                f"{', '.join(map(str, self.undecided))} container(s): add repetitions"
            )
        return head

    def placement_text(self) -> str:
        if self.measured is not None:
            return self.measured.short_text()
        if not self.placement:
            return ""
        one = self.placement[0]
        parts = [
            f"{'+'.join(map(str, p['per_host']))} on {p['hosts']} hosts {fmt(p['aggregate'], self.unit)} "
            f"({p['vs_one_host']:.2f}x)"
            for p in self.placement[1:]
        ]
        return (
            f"; placing {sum(one['per_host'])} instances (predicted from this curve): one host "
            f"{fmt(one['aggregate'], self.unit)}, " + ", ".join(parts)
        )


def containers(sweeps: list[Sweep], measured: Sequence[MeasuredPlacement] = ()) -> list[ContainersAdvice]:
    """Per containers sweep line: the peak, and the placement over hosts, measured when `measured` holds
    one for the line's stack and workload, else predicted from the line."""
    out: list[ContainersAdvice] = []
    for s in sweeps:
        if s.dim != "containers":
            continue
        for ln in s.lines:
            p = peak(ln)
            c0 = ln.points[0][1]
            best = dict(ln.measured)[p.x]
            undecided = [
                x
                for x, c in ln.measured
                if c is not best and answer(best.summary, c.summary, best.margin).outcome != WORSE
            ]
            out.append(
                ContainersAdvice(
                    ln.stack,
                    c0.labels["workload"],
                    int(p.x),  # a sweep's x is any number; along containers, a count
                    p.aggregate,
                    c0.unit,
                    p.falls_after,
                    [int(x) for x in ln.xs],
                    [int(x) for x in undecided],
                    placement({int(x): c.summary.mean for x, c in ln.measured}),
                    for_stack(list(measured), ln.stack, c0.labels["workload"]),
                )
            )
    return out


def placement(curve: dict[int, float], hosts: tuple[int, ...] = (1, 2, 3, 4)) -> list[dict[str, Any]]:
    """003 section 6.3: the largest measured count N spread evenly over H hosts, each host's throughput read
    from the measured throughput-versus-instances curve (linear between measured counts), beside N on one
    host. Predicted, not measured: it assumes the hosts are alike and do not share a bottleneck."""
    if len(curve) < 2:
        return []
    xs = sorted(curve)
    n = xs[-1]

    def f(k: int) -> float:
        if k in curve:
            return curve[k]
        lo = max((x for x in xs if x < k), default=xs[0])
        hi = min((x for x in xs if x > k), default=xs[-1])
        if lo == hi:
            return curve[lo] * k / lo
        return curve[lo] + (curve[hi] - curve[lo]) * (k - lo) / (hi - lo)

    out: list[dict[str, Any]] = []
    for h in hosts:
        if h > n:
            break
        per = [n // h + (1 if i < n % h else 0) for i in range(h)]
        agg = sum(f(k) for k in per)
        out.append({"hosts": h, "per_host": per, "aggregate": agg, "vs_one_host": agg / curve[n] if curve[n] else 0.0})
    return out
