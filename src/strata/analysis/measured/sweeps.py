"""Sweeps and scaling: one parameter varied, everything else the same.

Study 003 sweeps the number of jobs (Figure 3e), the block size (Figure 3g)
and the number of concurrent containers (Figure 6a: "the aggregate throughput
... first increases, peaks at about four instances and then decreases"); study
004 runs 1, 2 and 3 containers (Tables 2 to 5). A sweep is found, not
declared: cells that differ only in one dimension form a line per stack. The
dimensions are the sweep axes the registered workloads declare among their
parameters (`Workload.metrics`), then the load's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import summary_of
from strata.core.jsondoc import ShapeError
from strata.core.metrics import Axis, merged
from strata.core.params import DEPTH, JOBS


@dataclass(frozen=True)
class Dim:
    """A sweep dimension: a key of one section of the resolved trial ("workload" or "load")."""

    name: str
    section: str
    axis: Axis


LOAD_DIMS = (
    Dim(JOBS, "load", Axis("jobs", 3)),
    Dim(DEPTH, "load", Axis("I/O depth", 3)),
    Dim("containers", "load", Axis("containers", 2, detail=True)),
)


def dims() -> list[Dim]:
    """Every sweep dimension, in the order of the report's figures: the registered workloads' axes (each
    name once, in the registry's order), the load's, then the workloads' load levels (an offered rate)."""
    from strata.workloads import declared

    axes = [Dim(m.name, "workload", m.axis) for m in merged(declared(), "parameter") if m.axis is not None]
    return [d for d in axes if not d.axis.detail] + list(LOAD_DIMS) + [d for d in axes if d.axis.detail]


Point = tuple[float, Cell]  # a swept value (as stored: a number) and its cell


@dataclass
class Line:
    stack: str
    points: list[Point] = field(default_factory=list)  # x ascending

    @property
    def measured(self) -> list[Point]:
        """Points with device numbers (cache-flagged cells drawn apart, never part of the line)."""
        return [(x, c) for x, c in self.points if c.values]

    @property
    def xs(self) -> list[float]:
        return [x for x, _ in self.measured]


@dataclass
class Sweep:
    dim: str
    axis: Axis
    context: str
    unit: str
    lines: list[Line] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.axis.label} sweep: {self.context}"


def _without(c: Cell, dim: Dim) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(line key, figure key): the cell's trial without `dim`, with and without the stack."""
    wl, ld = c.workload_key, c.load_key  # sorted already: dropping an item keeps them canonical
    if dim.section == "workload":
        wl = tuple(kv for kv in wl if kv[0] != dim.name)
    else:
        ld = tuple(kv for kv in ld if kv[0] != dim.name)
    return (c.stack, c.tag, wl, ld), (wl, ld)


def _context(c: Cell, dim: str) -> str:
    """What the cells of a sweep ran, in the words the workload declares, and the load but `dim`."""
    what = c.schema.context(c.workload, without=dim)
    ld = c.load
    parts = [
        f"{ld.get(k)} {k}"
        for k in (d.name for d in LOAD_DIMS)
        if k != dim and not (k == "containers" and ld.get(k) == 1)
    ]
    return f"{what}, " + ", ".join(parts)


def find(cells: list[Cell]) -> list[Sweep]:
    out = []
    for dim in dims():
        figures: dict[tuple[object, ...], dict[tuple[object, ...], list[Point]]] = {}
        for c in cells:
            if not (c.values or c.apart_values):
                continue
            x = c.layers.section(dim.section).get(dim.name)
            if x is None:  # not swept in this cell (a flat-out run has no offered rate)
                continue
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ShapeError(f"{dim.section}.{dim.name} should be a number, not {x!r}")
            line_key, fig_key = _without(c, dim)
            figures.setdefault(fig_key, {}).setdefault(line_key, []).append((x, c))
        need = dim.axis.min_points
        for fig_key in sorted(figures, key=repr):
            lines = []
            for line_key in sorted(figures[fig_key], key=repr):
                pts = sorted(figures[fig_key][line_key], key=lambda p: p[0])
                if len({x for x, c in pts if c.values}) >= min(2, need) and len({x for x, _ in pts}) >= need:
                    lines.append(Line(pts[0][1].stack, pts))
            if lines:
                first = lines[0].points[0][1]
                lines.sort(key=lambda ln: ln.stack)
                out.append(Sweep(dim.name, dim.axis, _context(first, dim.name), first.unit, lines))
    return out


FALL = 0.10  # the aggregate at the largest count this far below the peak: "then falls"


@dataclass
class Peak:
    x: float  # a container count
    aggregate: float
    per_container: float
    last_x: float
    falls_after: bool  # the largest count is at least FALL below the peak
    drop: float  # 1 - last / peak
    significant: bool | None  # the fall beyond both 95% intervals (None: too few repetitions)


def scaling(sweeps: list[Sweep], min_points: int = 2) -> list[Line]:
    """The lines of the sweeps over the container count with at least `min_points` measured counts."""
    return [ln for s in sweeps if s.dim == "containers" for ln in s.lines if len(ln.measured) >= min_points]


def peak(line: Line) -> Peak:
    """The container count with the highest mean aggregate, and whether throughput falls after it."""
    best_x, best_cell = max(line.measured, key=lambda p: summary_of(p[1]).mean)
    last_x, last_cell = line.measured[-1]
    best, last = summary_of(best_cell), summary_of(last_cell)
    drop = 1 - last.mean / best.mean if best.mean else 0.0
    falls = best_x != last_x and drop >= FALL
    sig = None
    if last.ci_high is not None and best.ci_low is not None:
        sig = last.ci_high < best.ci_low
    return Peak(best_x, best.mean, best.mean / best_x, last_x, falls, drop, sig)
