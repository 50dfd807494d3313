"""Advice: the best stack per workload, stacks equivalent within a margin, and containers per host.

"Which host file system, which storage driver, volume or bind mount or writable layer, how many containers
per host" (docs/architecture.md): among the configurations measured as device performance (cache-flagged,
unconfirmed and emulated ones excluded, the raw device too: it is the baseline, not a place for a
container's files), every stack is compared with the best at once (analysis/decisions/groups.py): each is *worse*
(not the best), *equivalent within +-margin* of the best (the spec's `margin`, 5% by default), or it may be
the best and is not within the margin of it. Every line then ends with an answer a user can act on:

- *best*: every other stack is decidedly below the leader: "A is best: 12.0% ahead of the next, B (at most
  19%)";
- *equivalent*: the others are within the margin of the best, or worse: "equivalent within +-5%: A, B -
  choose on other grounds";
- *undecided*: the stacks that may be the best, the margin within which each lies of the best, the stacks
  that are worse, what choosing the leader costs at most against the best, and the repetitions that would
  decide it: "undecided at +-5%: the best is one of A, B, each within +-14% of it (95%, all lines at once);
  worse: C; choosing A costs at most 6.0% against the best; about 9 repetitions of each would decide it".

One convention for every percentage of a line: how far the leader A is ahead of another B, A/B - 1, and how
far a stack may be below the best, best/B - 1 (so that +-5% means the same in "ahead", "within" and
"costs"). The intervals stay valid for `repetitions: auto` runs and across all of a report's lines of one
group (analysis/decisions/answer.py). Containers per host: study 003, section 6.3, "assign the number of containers
that maximize the throughput", with the same rule for the peak. Placement over hosts: measured where the
results hold the same load on one host and across hosts (analysis/advice/placement.py), else predicted from the
containers curve (`placement` below).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from strata.analysis.advice import amplification, compared
from strata.analysis.advice.placement import MeasuredPlacement, for_stack
from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import by_context, fmt
from strata.analysis.decisions.answer import EQUIVALENT, WORSE, Answer, answer, within_text
from strata.analysis.decisions.criterion import MAX_USEFUL_REPETITIONS
from strata.analysis.decisions.groups import Comparisons, compare, repetitions_to_decide
from strata.analysis.decisions.stats import summarize
from strata.analysis.measured.sweeps import Sweep, peak
from strata.results import flags
from strata.workloads.server import durability

BEST, EQUIVALENT_GROUP, UNDECIDED_GROUP = "best", "equivalent", "undecided"


@dataclass
class Best:
    workload: str
    load: str
    unit: str
    best: Cell
    runner_up: Cell | None
    lead: Answer | None  # the runner-up relative to the best
    equivalent: list[Cell] = field(default_factory=list)  # within the margin of the best
    worse: list[Cell] = field(default_factory=list)  # not the best
    undecided: list[Cell] = field(default_factory=list)  # may be the best, not within the margin of it
    answers: dict[str, Answer] = field(default_factory=dict)  # stack -> Answer (other relative to the best)
    candidates: int = 0
    need: str = ""
    method: str = ""  # where the intervals' variance came from (analysis/decisions/groups.py)
    by_cell: dict[str, Answer] = field(default_factory=dict)  # cell key -> Answer (two cells may share a stack: hosts)
    amplification: str = ""  # a line of its own when the stacks differ in write amplification beyond their noise
    own: Answer | None = None  # the leader's ratio to the best: what choosing it costs at most
    lead_high: float | None = None  # when it alone may be the best: its lead over the next is at most this
    on: compared.Compared | None = None  # what the group compared, and which way is better (compared.py)
    lax: str = ""  # the non-durable settings its stacks ran under, in words ("": every one durable)
    target: str = ""  # a line of its own: each stack's compared latency against the spec's `latency_target`

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
        """best: every other stack decidedly below it; equivalent: the others are worse or within +-margin of
        the best, and so is the leader; undecided: some stack may be the best and is not within the margin of
        it (the leader included: the line then names them, and what choosing the leader costs)."""
        if self.runner_up is None:
            return BEST
        if self.undecided or (self.own is not None and self.own.outcome != EQUIVALENT):
            return UNDECIDED_GROUP
        return EQUIVALENT_GROUP if self.equivalent else BEST

    @property
    def supported(self) -> float | None:
        """The smallest margin within which every stack not decided worse, the leader too, lies of the best (at
        the group's level, all at once); None when one of them has no interval."""
        answers = [self.answer_of(c) for c in self.equivalent + self.undecided] + ([self.own] if self.own else [])
        vals = [a.supported for a in answers]
        known = [v for v in vals if v is not None]
        return max(known) if vals and len(known) == len(vals) else None

    @property
    def cost(self) -> float | None:
        """What choosing the leader costs at most against the best (best/leader - 1), or None."""
        return self.own.supported if self.own is not None else None

    def text(self) -> str:
        return self._answer() + (f"; {self.lax}" if self.lax else "")

    def lines(self) -> list[str]:
        """The group's advice: its answer, then its lines of their own (write amplification, a latency target)."""
        return [t for t in (self.text(), self.amplification, self.target) if t]

    def _answer(self) -> str:
        on = self.on.words() if self.on is not None else ""
        where = f"{self.workload} at load {self.load} on {self.best.labels['device']}{on}"
        head = f"{self.best.stack} ({fmt(self.value, self.unit)}, n={self.best.reps})"
        if self.runner_up is None:
            return f"{where}: {head} is the only stack measured"
        worse = f"; worse: {', '.join(c.stack for c in self.worse)}" if self.worse else ""
        if self.status == BEST:
            assert self.lead is not None  # set with the runner-up (best_stacks)
            most = f" (at most {self.lead_high - 1:.1%})" if self.lead_high is not None else ""
            lead = f"{self.on.gap(self.lead) if self.on is not None else self.lead.ahead:.1%}"
            return f"{where}: {head} is best: {lead} ahead of the next, {self.runner_up.stack}{most}"
        if self.status == EQUIVALENT_GROUP:
            names = ", ".join([self.best.stack] + [c.stack for c in self.equivalent])
            return f"{where}: equivalent within +-{self.margin:.0%}: {names} - choose on other grounds{worse}"
        sup, cost = self.supported, self.cost
        if sup is None or cost is None:
            close = sorted(self.equivalent + self.undecided, key=self._gap)
            gaps = ", ".join(f"{c.stack} by {self._gap(c):.1%}" for c in close)
            return f"{where}: undecided (no interval): {head} leads {gaps}{worse}" + (
                f"; {self.need}" if self.need else ""
            )
        may = [self.best.stack] + [c.stack for c in self.undecided]
        near = [c.stack for c in self.equivalent]
        parts = [
            f"undecided at +-{self.margin:.0%}: the best is one of {head if len(may) > 1 else head + ' alone'}"
            + "".join(f", {m}" for m in may[1:])
            + f", each within {within_text(sup)} of it (95%, all lines at once)",
        ]
        if near:
            parts.append(f"within +-{self.margin:.0%} of the best: {', '.join(near)}")
        if self.worse:
            parts.append(f"worse: {', '.join(c.stack for c in self.worse)}")
        parts.append(f"choosing {self.best.stack} costs at most {_cost_text(cost)} against the best")
        if self.need:
            parts.append(self.need)
        return f"{where}: " + "; ".join(parts)


def _cost_text(cost: float) -> str:
    """A cost best/leader - 1 in words: "6.0%", from 100% on "a factor of 2.3"."""
    return f"{cost:.1%}" if cost < 1 else f"a factor of {1 + cost:.1f}"


def best_stacks(cells: list[Cell]) -> list[Best]:
    out: list[Best] = []
    eligible = [c for c in cells if not c.is_raw and not c.emulated]
    # a cell all of whose trials a flag drew apart: not compared, but named where its group is judged
    drawn_apart = by_context([c for c in eligible if not c.values and any(a.results for a in c.apart.values())])
    for context, group in by_context([c for c in eligible if c.values]).items():
        on = compared.of(group)  # the values compared and their direction: the headline, or latency under a rate
        group = [c for c in group if on.runs(c).n] or group
        by_key = {c.key: c for c in group}
        top = group[0]
        cmp = compare({k: on.runs(c) for k, c in by_key.items()}, top.margin, top.design, on.higher_is_better)
        top = by_key[cmp.leader] if cmp.leader else on.ranked(group)[0]
        b = Best(top.labels["workload"], top.labels["load"], on.unit, top, None, None, candidates=len(group), on=on)
        b.amplification = amplification.advice(group)
        b.lax = not_durable(group)
        b.target = against_target(group, on, b.workload, b.load, drawn_apart.get(context, []))
        others = sorted((c for c in group if c is not top), key=lambda c: on.gap(cmp.answers[c.key]))
        if others:
            b.runner_up, b.method, b.own, b.lead_high = others[0], cmp.method, cmp.own, cmp.lead_high
            for c in others:
                a = cmp.answers[c.key]
                b.answers[c.stack] = b.by_cell[c.key] = a
                {EQUIVALENT: b.equivalent, WORSE: b.worse}.get(a.outcome, b.undecided).append(c)
            b.lead = b.by_cell[others[0].key]
            b.need = _need(top, b, cmp)
        out.append(b)
    return sorted(out, key=lambda b: (b.workload, b.best.outstanding, b.load))


def against_target(
    cells: list[Cell], on: compared.Compared, workload: str, load: str, apart: list[Cell] | None = None
) -> str:
    """Each stack's compared latency against the spec's `latency_target` (etcd's 10 ms for its fdatasync p99),
    on its interval: below when the whole interval is, above when the whole interval is, undecided otherwise;
    the stacks of `apart` (every trial drawn apart by a flag) named as not judged, with the flag's word;
    "" without a target or when the group compares no latency."""
    target = compared.design_of(cells).get("latency_target_ms")
    if not isinstance(target, (int, float)) or on.headline:
        return ""
    verdicts: dict[str, list[str]] = {"above": [], "undecided": [], "below": []}
    for c in sorted(cells, key=lambda c: -on.runs(c).mean if on.runs(c).n else 0):
        s = summarize(list(on.runs(c).values))
        if not s.n:
            continue
        hi = s.ci_high if s.ci_high is not None else s.mean
        lo = max(0.0, s.ci_low if s.ci_low is not None else s.mean)  # a latency is never below 0
        shown = f"{c.stack} {s.mean:.2f} ms" + (f" [{lo:.2f}, {hi:.2f}]" if s.ci_high is not None else " (no interval)")
        kind = (
            "below"
            if hi < target and s.ci_high is not None
            else "above"
            if lo > target and s.ci_low is not None
            else "undecided"
        )
        verdicts[kind].append(shown)
    if not any(verdicts.values()):
        return ""
    head = f"{workload} at load {load}: {on.metric} against {target:g} ms"
    words = [(c.stack, ", ".join(d.word for d in flags.apart() if c.apart[d.flag].results)) for c in apart or []]
    unjudged = (
        "; not judged, every trial drawn apart: " + ", ".join(f"{stack} ({word})" for stack, word in words)
        if words
        else ""
    )
    n = sum(len(v) for v in verdicts.values())
    if len(verdicts["below"]) == n:
        return f"{head}: below it on every stack compared (the highest: {verdicts['below'][0]}){unjudged}"
    parts = [f"{k}{'' if k == 'undecided' else ' it'} on {', '.join(v)}" for k, v in verdicts.items() if v]
    return (
        f"{head}: "
        + "; ".join(parts)
        + (" (undecided: more repetitions narrow the interval)" if verdicts["undecided"] else "")
        + unjudged
    )


def not_durable(cells: list[Cell]) -> str:
    """The settings under which some of the compared stacks' commits returned before their log reached the device
    (workloads/server/durability.py), each with the stacks that ran under it; "" when none did."""
    lax: dict[str, list[str]] = {}
    for c in cells:
        for setting in dict.fromkeys(k for r in c.ok for k in durability.lax_of(r.metrics)):
            lax.setdefault(setting, []).append(c.stack)
    if not lax:
        return ""
    said = ", ".join(
        f"{setting} ({'every stack' if len(stacks) == len(cells) else ', '.join(stacks)})"
        for setting, stacks in lax.items()
    )
    return f"not durable: {said}: commits returned before their log reached the device, so writes measure memory"


def _need(top: Cell, b: Best, cmp: Comparisons) -> str:
    """What would decide the line: repetitions of each, in a fixed design at the same error guarantee, at the
    observed spread."""
    if b.status != UNDECIDED_GROUP:
        return ""
    if top.reps < 2 or any(c.reps < 2 for c in b.undecided):
        return "needs 2 or more repetitions of each (3 recommended)"
    n = repetitions_to_decide(cmp, cap=MAX_USEFUL_REPETITIONS + 1)
    if n is None or n > MAX_USEFUL_REPETITIONS:
        return f"no affordable number of repetitions decides it at +-{top.margin:.0%} at this spread"
    return f"about {n} repetitions of each would decide it at +-{top.margin:.0%} (now {top.reps})"


class Spread(TypedDict):
    """The largest measured count spread evenly over some hosts, predicted from the curve (`placement`)."""

    hosts: int
    per_host: list[int]  # instances on each host
    aggregate: float  # the hosts' throughput together
    vs_one_host: float  # relative to all the instances on one host


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
    placement: list[Spread] = field(default_factory=list)  # (003 6.3)
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


def placement(curve: dict[int, float], hosts: tuple[int, ...] = (1, 2, 3, 4)) -> list[Spread]:
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

    out: list[Spread] = []
    for h in hosts:
        if h > n:
            break
        per = [n // h + (1 if i < n % h else 0) for i in range(h)]
        agg = sum(f(k) for k in per)
        out.append({"hosts": h, "per_host": per, "aggregate": agg, "vs_one_host": agg / curve[n] if curve[n] else 0.0})
    return out
