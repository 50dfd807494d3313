"""Sweeps and scaling: one parameter varied, everything else the same.

Study 003 sweeps the number of jobs (Figure 3e), the block size (Figure 3g)
and the number of concurrent containers (Figure 6a: "the aggregate throughput
... first increases, peaks at about four instances and then decreases"); study
004 runs 1, 2 and 3 containers (Tables 2 to 5). A sweep is found, not
declared: cells that differ only in one of SWEEP_DIMS form a line per stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from strata.analysis.cells import Cell

# dimension -> (section of the resolved trial, key); the name of that section changes with it
SWEEP_DIMS = {"bs": ("workload", "bs"), "numjobs": ("load", "numjobs"), "iodepth": ("load", "iodepth"),
              "containers": ("load", "containers")}
MIN_POINTS = {"bs": 3, "numjobs": 3, "iodepth": 3, "containers": 2}
DIM_LABEL = {"bs": "block size (KiB)", "numjobs": "jobs", "iodepth": "I/O depth", "containers": "containers"}


@dataclass
class Line:
    stack: str
    points: list = field(default_factory=list)  # (x, Cell), x ascending

    @property
    def xs(self) -> list:
        return [x for x, _ in self.points]


@dataclass
class Sweep:
    dim: str
    context: str
    unit: str
    lines: list = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{DIM_LABEL[self.dim]} sweep: {self.context}"


def _without(c: Cell, dim: str) -> tuple[str, str]:
    section, key = SWEEP_DIMS[dim]
    t = {k: v for k, v in c.trial.items() if k != "repetition"}
    t[section] = {k: v for k, v in t[section].items() if k not in (key, "name")}
    rest = {k: t[k] for k in ("workload", "load")}
    return json.dumps(t, sort_keys=True, default=str), json.dumps(rest, sort_keys=True, default=str)


def _context(c: Cell, dim: str) -> str:
    wl = c.workload
    what = wl.get("rw") or wl.get("name", "")
    if dim != "bs" and wl.get("bs"):
        what += f" {wl['bs'] // 1024} KiB" if wl["bs"] % 1024 == 0 else f" {wl['bs']} B"
    ld = c.load
    parts = [f"{ld.get(k)} {k}" for k in ("numjobs", "iodepth", "containers") if k != dim and not (k == "containers" and ld.get(k) == 1)]
    return f"{what}, " + ", ".join(parts)


def find(cells: list[Cell], dims=tuple(SWEEP_DIMS)) -> list[Sweep]:
    out = []
    for dim in dims:
        section, key = SWEEP_DIMS[dim]
        figures: dict[str, dict[str, list]] = {}
        for c in cells:
            if not c.values:
                continue
            line_key, fig_key = _without(c, dim)
            figures.setdefault(fig_key, {}).setdefault(line_key, []).append((c.trial[section].get(key), c))
        for fig_key in sorted(figures):
            lines = []
            for line_key in sorted(figures[fig_key]):
                pts = sorted(figures[fig_key][line_key], key=lambda p: p[0])
                if len({x for x, _ in pts}) >= MIN_POINTS[dim]:
                    lines.append(Line(pts[0][1].stack, pts))
            if lines:
                first = lines[0].points[0][1]
                out.append(Sweep(dim, _context(first, dim), first.unit, sorted(lines, key=lambda l: l.stack)))
    return out


@dataclass
class Peak:
    x: int
    aggregate: float
    per_container: float
    last_x: int
    falls_after: bool  # the aggregate at the largest count is below the peak, beyond the intervals


def peak(line: Line) -> Peak:
    """The container count with the highest mean aggregate, and whether throughput falls after it."""
    best_x, best = max(line.points, key=lambda p: p[1].summary.mean)
    last_x, last = line.points[-1]
    falls = best_x != last_x and _below(last, best)
    return Peak(best_x, best.summary.mean, best.summary.mean / best_x, last_x, falls)


def _below(a: Cell, b: Cell) -> bool:
    sa, sb = a.summary, b.summary
    if sa.ci_high is not None and sb.ci_low is not None:
        return sa.ci_high < sb.ci_low
    return sa.mean < sb.mean * 0.95
