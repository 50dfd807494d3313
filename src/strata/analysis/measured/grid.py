"""Tables by file system x volume/bind x containers, as Tables 2 to 5 of seed study 004.

One table per workload run in containers (and per load without the container count): a row
per number of concurrent containers, a column per (file system, path) pair,
each cell the throughput per container (MB/s for Filebench, as the study
reports; the workload's own unit otherwise), mean over repetitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import device_name, summary_of
from strata.core.params import LoadCounts

GRID_PATHS = ("volume", "bind", "layer", "tmpfs")


@dataclass
class Grid:
    workload: str
    context: str
    unit: str
    columns: list[tuple[str, str, str]] = field(default_factory=list)  # (filesystem, runtime, path)
    rows: list[int] = field(default_factory=list)  # containers
    # (containers, column) -> (per-container mean, Cell)
    values: dict[tuple[int, tuple[str, str, str]], tuple[float, Cell]] = field(default_factory=dict)

    @property
    def column_labels(self) -> list[str]:
        """Unique column names: "fs path", with the runtime when two runtimes share a file system and path."""
        clash = {
            (fs, p) for fs, rt, p in self.columns if sum(1 for f2, _, p2 in self.columns if (f2, p2) == (fs, p)) > 1
        }
        return [f"{fs} {p}" + (f" ({rt})" if (fs, p) in clash else "") for fs, rt, p in self.columns]

    @property
    def title(self) -> str:
        return f"{self.workload}: {self.unit} per container ({self.context})"


def _key(c: Cell) -> tuple[object, ...]:
    ld = tuple(kv for kv in c.load_key if kv[0] != "containers")
    return (device_name(c), c.labels["workload"], c.workload_key, ld)


def grids(cells: list[Cell]) -> list[Grid]:
    groups: dict[tuple[object, ...], list[Cell]] = {}
    for c in cells:
        if c.values and c.path in GRID_PATHS:
            groups.setdefault(_key(c), []).append(c)
    out = []
    for key in sorted(groups, key=repr):
        g = groups[key]
        cols = sorted({(c.labels["filesystem"], c.labels["runtime"], c.path) for c in g})
        rows = sorted({c.containers for c in g})
        if (len(cols) < 2 and len(rows) < 2) or all(c.baseline for c in g):
            continue
        counts = LoadCounts.of(g[0].load)
        grid = Grid(
            g[0].labels["workload"],
            f"{counts.numjobs} jobs x iodepth {counts.iodepth}, device {g[0].labels['device']}",
            g[0].unit,
            cols,
            rows,
        )
        for c in g:
            col = (c.labels["filesystem"], c.labels["runtime"], c.path)
            grid.values.setdefault((c.containers, col), (summary_of(c).mean / c.containers, c))
        out.append(grid)
    return out
