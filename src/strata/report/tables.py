"""The report's tables: the container-count grids and each workload's per-operation results; and the
cells by workload on a device, as the report's figures and tables group them."""

from __future__ import annotations

from strata.analysis.analyse import Analysis
from strata.analysis.cells.cells import Cell, Frozen
from strata.analysis.measured.grid import Grid
from strata.report.names import figure_id
from strata.report.parts import Table
from strata.report.parts import mean as _mean


def report_tables(a: Analysis) -> list[Table]:
    return [_grid_table(g, i) for i, g in enumerate(a.grids)] + _operations_tables(a)


def workload_groups(a: Analysis) -> list[tuple[str, list[Cell]]]:
    """Cells by device and workload parameters, named "<workload> on <device>" (+ experiment if ambiguous)."""
    groups: dict[tuple[str, Frozen], list[Cell]] = {}
    for c in a.cells:
        groups.setdefault((c.labels["device"], c.workload_key), []).append(c)
    named: dict[str, list[list[Cell]]] = {}
    for (dev, _), cells in groups.items():
        named.setdefault(f"{cells[0].labels['workload']} on {dev}", []).append(cells)
    out: list[tuple[str, list[Cell]]] = []
    for name in sorted(named):
        for cells in named[name]:
            tag = ", ".join(sorted({c.experiment for c in cells})) if len(named[name]) > 1 else ""
            out.append((name + (f" [{tag}]" if tag else ""), cells))
    return out


def _grid_table(g: Grid, i: int) -> Table:
    cols = g.column_labels
    rows = []
    for n in g.rows:
        rows.append([n] + [g.values[(n, col)][0] if (n, col) in g.values else None for col in g.columns])
    return Table(figure_id("table", f"{g.workload} {i}"), g.title, ["containers"] + cols, rows)


def _operations_tables(a: Analysis) -> list[Table]:
    """Per workload that declares per-operation results (`MetricSchema.operations`, Filebench's flowops):
    each operation's columns, mean over repetitions."""
    out = []
    for name, cells in workload_groups(a):
        ops_of = cells[0].schema.operations if cells else None
        if ops_of is None:
            continue
        rows: list[list[object]] = []
        for c in cells:
            ops: dict[str, list[list[float | None]]] = {}  # each operation's columns, by repetition
            for r in c.ok:
                for e in ops_of.of(r):
                    ops.setdefault(str(e.get("name", "?")), []).append(
                        [ops_of.value(e, path) for _, path in ops_of.columns]
                    )
            for op, vals in ops.items():
                width = len(ops_of.columns)
                rows.append(
                    [c.stack, c.labels["load"], op, *(_mean([v[i] for v in vals]) for i in range(width)), len(vals)]
                )
        if rows:
            out.append(
                Table(
                    figure_id(ops_of.key[-1], name),
                    f"{name}: operations (mean over repetitions)",
                    ["stack", "load", ops_of.word] + [h for h, _ in ops_of.columns] + ["n"],
                    rows,
                )
            )
    return out
