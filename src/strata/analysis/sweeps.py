"""Sweeps and scaling: one parameter varied, everything else the same.

Study 003 sweeps the number of jobs (Figure 3e), the block size (Figure 3g)
and the number of concurrent containers (Figure 6a: "the aggregate throughput
... first increases, peaks at about four instances and then decreases"); study
004 runs 1, 2 and 3 containers (Tables 2 to 5). A sweep is found, not
declared: cells that differ only in one of SWEEP_DIMS form a line per stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.cells import Cell

# dimension -> (section of the resolved trial, key); the name of that section changes with it
SWEEP_DIMS = {
    "bs": ("workload", "bs"),
    "numjobs": ("load", "numjobs"),
    "iodepth": ("load", "iodepth"),
    "containers": ("load", "containers"),
    "target": ("workload", "target"),  # an offered rate (ycsb's `target`)
}
MIN_POINTS = {"bs": 3, "numjobs": 3, "iodepth": 3, "containers": 2, "target": 2}
DIM_LABEL = {
    "bs": "block size (KiB)",
    "numjobs": "jobs",
    "iodepth": "I/O depth",
    "containers": "containers",
    "target": "offered rate (ops/s)",
}


@dataclass
class Line:
    stack: str
    points: list = field(default_factory=list)  # (x, Cell), x ascending

    @property
    def measured(self) -> list:
        """Points with device numbers (cache-flagged cells drawn apart, never part of the line)."""
        return [(x, c) for x, c in self.points if c.values]

    @property
    def xs(self) -> list:
        return [x for x, _ in self.measured]


@dataclass
class Sweep:
    dim: str
    context: str
    unit: str
    lines: list = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{DIM_LABEL[self.dim]} sweep: {self.context}"


def _without(c: Cell, dim: str) -> tuple[tuple, tuple]:
    """(line key, figure key): the cell's trial without `dim`, with and without the stack."""
    section, key = SWEEP_DIMS[dim]
    wl, ld = c.workload_key, c.load_key  # sorted already: dropping an item keeps them canonical
    if section == "workload":
        wl = tuple(kv for kv in wl if kv[0] != key)
    else:
        ld = tuple(kv for kv in ld if kv[0] != key)
    return (c.stack, c.tag, wl, ld), (wl, ld)


def _context(c: Cell, dim: str) -> str:
    wl = c.workload
    what = wl.get("rw") or wl.get("name", "")
    if dim != "bs" and wl.get("bs"):
        what += f" {wl['bs'] // 1024} KiB" if wl["bs"] % 1024 == 0 else f" {wl['bs']} B"
    ld = c.load
    parts = [
        f"{ld.get(k)} {k}"
        for k in ("numjobs", "iodepth", "containers")
        if k != dim and not (k == "containers" and ld.get(k) == 1)
    ]
    return f"{what}, " + ", ".join(parts)


def find(cells: list[Cell], dims=tuple(SWEEP_DIMS)) -> list[Sweep]:
    out = []
    for dim in dims:
        section, key = SWEEP_DIMS[dim]
        figures: dict[tuple, dict[tuple, list]] = {}
        for c in cells:
            if not (c.values or c.apart_values):
                continue
            x = c.trial[section].get(key)
            if x is None:  # not swept in this cell (a flat-out run has no offered rate)
                continue
            line_key, fig_key = _without(c, dim)
            figures.setdefault(fig_key, {}).setdefault(line_key, []).append((x, c))
        for fig_key in sorted(figures, key=repr):
            lines = []
            for line_key in sorted(figures[fig_key], key=repr):
                pts = sorted(figures[fig_key][line_key], key=lambda p: p[0])
                if (
                    len({x for x, c in pts if c.values}) >= min(2, MIN_POINTS[dim])
                    and len({x for x, _ in pts}) >= MIN_POINTS[dim]
                ):
                    lines.append(Line(pts[0][1].stack, pts))
            if lines:
                first = lines[0].points[0][1]
                out.append(Sweep(dim, _context(first, dim), first.unit, sorted(lines, key=lambda ln: ln.stack)))
    return out


FALL = 0.10  # the aggregate at the largest count this far below the peak: "then falls"


@dataclass
class Peak:
    x: int
    aggregate: float
    per_container: float
    last_x: int
    falls_after: bool  # the largest count is at least FALL below the peak
    drop: float  # 1 - last / peak
    significant: bool | None  # the fall beyond both 95% intervals (None: too few repetitions)


def peak(line: Line) -> Peak:
    """The container count with the highest mean aggregate, and whether throughput falls after it."""
    best_x, best = max(line.measured, key=lambda p: p[1].summary.mean)
    last_x, last = line.measured[-1]
    drop = 1 - last.summary.mean / best.summary.mean if best.summary.mean else 0.0
    falls = best_x != last_x and drop >= FALL
    sig = None
    if last.summary.ci_high is not None and best.summary.ci_low is not None:
        sig = last.summary.ci_high < best.summary.ci_low
    return Peak(best_x, best.summary.mean, best.summary.mean / best_x, last_x, falls, drop, sig)
