"""Advice: the best stack per workload, ties, and containers per host.

"Which host file system, which storage driver, volume or bind mount or writable
layer, how many containers per host" (docs/architecture.md): among the configurations measured as
device performance (cache-flagged, unconfirmed and emulated ones excluded, the raw device too: it is
the baseline, not a place for a container's files), the leader is *best* only when the Welch 95%
interval of its difference to every other lies above zero, *tied* with those whose difference lies
within +-5%, and *inconclusive* otherwise, with what would decide it (the rule of the findings,
analysis/verdict.py). Containers per host: study 003, section 6.3, "assign the number of containers
that maximize the throughput", with the same rule for the peak. Placement over hosts: measured where
the results hold the same load on one host and across hosts (analysis/placement.py), else predicted
from the containers curve (`placement` below).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.cells import Cell
from strata.analysis.placement import MeasuredPlacement, for_stack
from strata.analysis.query import by_context, fmt
from strata.analysis.stats import Change, change
from strata.analysis.sweeps import peak
from strata.analysis.verdict import need_repetitions

TIE = 0.05  # two stacks are tied when the 95% interval of their difference lies within +-5%
BEST, TIED, INCONCLUSIVE = "best", "tied", "inconclusive"


def standing(ch: Change) -> str:
    """Where another stack stands against the leader, by the interval of the difference (other vs leader):
    behind (decidedly lower), tied (within +-TIE), or undecided."""
    if not ch.known:
        return "undecided"
    if ch.rel_high < 0:
        return "behind"
    if ch.rel_low >= -TIE and ch.rel_high <= TIE:
        return "tied"
    return "undecided"


@dataclass
class Best:
    workload: str
    load: str
    unit: str
    best: Cell
    runner_up: Cell | None
    margin: Change | None  # the runner-up relative to the best
    tied: list = field(default_factory=list)
    undecided: list = field(default_factory=list)
    candidates: int = 0
    need: str = ""

    @property
    def status(self) -> str:
        """best: ahead of every other beyond the intervals; tied: the others are behind or within +-5%;
        inconclusive: some difference the intervals do not decide (or no intervals at all)."""
        if self.runner_up is None:
            return BEST
        return INCONCLUSIVE if self.undecided else TIED if self.tied else BEST

    def text(self) -> str:
        head = (
            f"{self.workload} at load {self.load} on {self.best.labels['device']}: "
            f"{self.best.stack} ({fmt(self.best.summary.mean, self.unit)}, n={self.best.reps})"
        )
        if self.runner_up is None:
            return head + " is the only stack measured"
        m = self.margin
        lead = f"{-m.rel:.1%}" + (f" [{-m.rel_high:.1%}, {-m.rel_low:.1%}]" if m.known else " (no interval)")
        if self.status == BEST:
            return f"{head} is best: {lead} ahead of the next, {self.runner_up.stack}"
        if self.status == TIED:
            names = ", ".join(c.stack for c in self.tied)
            return f"{head} is tied with {names} (differences within +-{TIE:.0%}): pick among them on other grounds"
        names = ", ".join(c.stack for c in self.undecided)
        return f"inconclusive: {head} leads {names} by {lead}, which the intervals do not decide" + (
            f"; {self.need}" if self.need else ""
        )


@dataclass
class ContainersAdvice:
    stack: str
    workload: str
    best_x: int
    aggregate: float
    unit: str
    falls_after: bool
    counts: list
    undecided: list = field(default_factory=list)  # counts the intervals do not tell from the peak
    placement: list = field(default_factory=list)  # [{"hosts", "per_host", "aggregate", "vs_one_host"}] (003 6.3)
    measured: MeasuredPlacement | None = None  # the same load measured on one host and across hosts

    @property
    def status(self) -> str:
        return INCONCLUSIVE if self.undecided else BEST

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
                f"inconclusive: {head}; the intervals do not tell it from "
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


def best_stacks(cells: list[Cell]) -> list[Best]:
    out = []
    for group in by_context([c for c in cells if c.values and not c.is_raw and not c.emulated]).values():
        ranked = sorted(group, key=lambda c: c.summary.mean, reverse=True)
        top = ranked[0]
        b = Best(top.labels["workload"], top.labels["load"], top.unit, top, None, None, candidates=len(ranked))
        if len(ranked) > 1:
            b.runner_up = ranked[1]
            b.margin = change(top.summary, ranked[1].summary)
            for c in ranked[1:]:
                where = standing(change(top.summary, c.summary))
                if where == "tied":
                    b.tied.append(c)
                elif where == "undecided":
                    b.undecided.append(c)
            b.need = _need(top, b.undecided)
        out.append(b)
    return sorted(out, key=lambda b: (b.workload, b.best.outstanding, b.load))


def _need(top: Cell, undecided: list[Cell]) -> str:
    if not undecided:
        return ""
    ch = change(top.summary, undecided[0].summary)
    if not ch.known:
        return "needs 2 or more repetitions of each (3 recommended)"
    bound = 0.0 if ch.rel < -TIE else -TIE
    return need_repetitions(ch.rel, ch.rel_low, ch.rel_high, bound, min(top.reps, undecided[0].reps), log=False)


def containers(sweeps, measured: list[MeasuredPlacement] = ()) -> list[ContainersAdvice]:
    """Per containers sweep line: the peak, and the placement over hosts, measured when `measured` holds
    one for the line's stack and workload, else predicted from the line."""
    out = []
    for s in sweeps:
        if s.dim != "containers":
            continue
        for ln in s.lines:
            p = peak(ln)
            c0 = ln.points[0][1]
            best = dict(ln.measured)[p.x]
            undecided = [
                x for x, c in ln.measured if c is not best and standing(change(best.summary, c.summary)) != "behind"
            ]
            out.append(
                ContainersAdvice(
                    ln.stack,
                    c0.labels["workload"],
                    p.x,
                    p.aggregate,
                    c0.unit,
                    p.falls_after,
                    ln.xs,
                    undecided,
                    placement({x: c.summary.mean for x, c in ln.measured}),
                    for_stack(list(measured), ln.stack, c0.labels["workload"]),
                )
            )
    return out


def placement(curve: dict[int, float], hosts: tuple[int, ...] = (1, 2, 3, 4)) -> list[dict]:
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

    out = []
    for h in hosts:
        if h > n:
            break
        per = [n // h + (1 if i < n % h else 0) for i in range(h)]
        agg = sum(f(k) for k in per)
        out.append({"hosts": h, "per_host": per, "aggregate": agg, "vs_one_host": agg / curve[n] if curve[n] else 0.0})
    return out
