"""Advice: the best stack per workload, ties, and containers per host.

"Which host file system, which storage driver, volume or bind mount or writable
layer, how many containers per host" (docs/architecture.md): the best stack is the one with
the highest mean throughput among configurations measured as device
performance (cache-flagged ones excluded, the raw device itself excluded as it
is the baseline, not a place for a container's files). Stacks whose difference
to the best is not significant (Welch 95% interval includes 0, analysis/stats)
are reported as tied with it. Containers per host: study 003, section 6.3,
"assign the number of containers that maximize the throughput".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.cells import Cell
from strata.analysis.query import by_context, fmt
from strata.analysis.stats import Change, change
from strata.analysis.sweeps import peak


@dataclass
class Best:
    workload: str
    load: str
    unit: str
    best: Cell
    runner_up: Cell | None
    margin: Change | None
    tied: list = field(default_factory=list)
    candidates: int = 0

    def text(self) -> str:
        head = (
            f"{self.workload} at load {self.load} on {self.best.labels['device']}: best {self.best.stack} "
            f"({fmt(self.best.summary.mean, self.unit)}"
        )
        head += f", n={self.best.reps})"
        if self.runner_up is None:
            return head + " (the only stack measured)"
        if self.tied:
            names = ", ".join(c.stack for c in self.tied)
            return head + f", statistically tied with {names}"
        m = self.margin
        conf = (
            ("significant at 95%" if m.significant else "not significant")
            if m.known
            else "no confidence: too few repetitions"
        )
        lo = f" [{-m.rel_high:.1%}, {-m.rel_low:.1%}]" if m.known else ""
        return head + f"; next, {self.runner_up.stack}, is {-m.rel:.1%}{lo} lower ({conf})"


@dataclass
class ContainersAdvice:
    stack: str
    workload: str
    best_x: int
    aggregate: float
    unit: str
    falls_after: bool
    counts: list

    def text(self) -> str:
        tail = (
            "throughput falls beyond it"
            if self.falls_after
            else f"still not falling at {self.counts[-1]}: measure more containers to find the peak"
            if self.best_x == self.counts[-1]
            else "no significant fall beyond it"
        )
        return (
            f"{self.workload} on {self.stack}: {self.best_x} container(s) per host maximize aggregate throughput "
            f"({fmt(self.aggregate, self.unit)}; measured {', '.join(map(str, self.counts))}); {tail}"
        )


def best_stacks(cells: list[Cell]) -> list[Best]:
    out = []
    for group in by_context([c for c in cells if c.values and not c.is_raw]).values():
        ranked = sorted(group, key=lambda c: c.summary.mean, reverse=True)
        top = ranked[0]
        b = Best(top.labels["workload"], top.labels["load"], top.unit, top, None, None, candidates=len(ranked))
        if len(ranked) > 1:
            b.runner_up = ranked[1]
            b.margin = change(top.summary, ranked[1].summary)
            b.tied = [c for c in ranked[1:] if change(top.summary, c.summary).significant is False]
        out.append(b)
    return sorted(out, key=lambda b: (b.workload, b.best.outstanding, b.load))


def containers(sweeps) -> list[ContainersAdvice]:
    out = []
    for s in sweeps:
        if s.dim != "containers":
            continue
        for ln in s.lines:
            p = peak(ln)
            c0 = ln.points[0][1]
            out.append(
                ContainersAdvice(ln.stack, c0.labels["workload"], p.x, p.aggregate, c0.unit, p.falls_after, ln.xs)
            )
    return out
