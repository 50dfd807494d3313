"""Native against containers against VMs in the report (seed study 001).

Per workload and device: each container and VM stack's throughput, and its mean latency,
relative to the same work run natively on the same file system (analysis/measured/runtimes.py pairs
them), with Welch's 95% interval, drawn like `strata compare`. VMs under emulation are left out
and the caption says how many.
"""

from __future__ import annotations

from strata.analysis.analyse import Analysis
from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import summary_of
from strata.analysis.compare import status
from strata.analysis.decisions.answer import answer
from strata.analysis.decisions.stats import Summary
from strata.analysis.measured.runtimes import native_pairs
from strata.report.names import figure_id, row_label, row_labels, titled
from strata.report.parts import ChangeRow, Figure, Table

COLUMNS = ["stack", "load", "native", "value", "unit", "change", "ci_low", "ci_high", "status", "n"]


def runtime_figures(a: Analysis) -> list[Figure]:
    groups: dict[tuple[object, ...], list[tuple[Cell, Cell]]] = {}
    for native, other in native_pairs(a.cells):
        groups.setdefault((other.labels["workload"], other.labels["device"], other.workload_key), []).append(
            (native, other)
        )
    emulated = sum(1 for c in a.cells if c.emulated)
    out = []
    for (workload, device, _), prs in sorted(groups.items(), key=lambda kv: kv[0][:2]):
        prs.sort(key=lambda p: (p[1].isolation, p[1].stack, p[1].outstanding, p[1].labels["load"]))
        name = f"{workload} on {device}"
        out.append(_figure(name, prs, "throughput", emulated))
        if all(n.latency(None, "mean").n and o.latency(None, "mean").n for n, o in prs):
            out.append(_figure(name, prs, "latency", emulated))
    return out


def _figure(name: str, prs: list[tuple[Cell, Cell]], what: str, emulated: int) -> Figure:
    labels, common = row_labels([o.stack for _, o in prs])
    margin = prs[0][1].margin
    rows: list[list[object]] = []
    data: list[ChangeRow] = []
    for native, other in prs:
        a, b = (summary_of(native), summary_of(other)) if what == "throughput" else _lat(native, other)
        ch = answer(a, b, other.margin)
        st = status(ch)
        data.append(
            {
                "label": row_label(labels[other.stack], other.labels["load"], min(a.n, b.n)),
                "rel": ch.rel,
                "low": ch.rel_low,
                "high": ch.rel_high,
                "status": st,
            }
        )
        unit = other.unit if what == "throughput" else "us (mean lat)"
        scale = 1 if what == "throughput" else 1e-3
        rows.append(
            [
                other.stack,
                other.labels["load"],
                a.mean * scale,
                b.mean * scale,
                unit,
                ch.rel,
                ch.rel_low,
                ch.rel_high,
                st,
                min(a.n, b.n),
            ]
        )
    fid = figure_id(f"runtimes-{what}", name)
    title = titled(f"{name}: {what} of containers and VMs relative to native", common)
    caption = (
        f"Each container and VM stack's {'mean throughput' if what == 'throughput' else 'mean total latency'} "
        "against the same work natively on the same file system (seed study 001), with the 95% interval of the ratio "
        "(log scale, so never below -100%): "
        f"higher or lower when the interval excludes zero, the same within +-{margin:.0%}, "
        "grey when it decides neither."
        + (" For latency, lower is better." if what == "latency" else "")
        + (f" Left out: {emulated} configuration(s) measured under emulation (TCG)." if emulated else "")
    )
    return Figure(
        fid,
        "compare",
        title,
        caption,
        Table(fid, title, COLUMNS, rows),
        {"rows": data, "xlabel": f"{what} relative to native (%), 95% interval", "lower_is_better": what == "latency"},
    )


def _lat(native: Cell, other: Cell) -> tuple[Summary, Summary]:
    return native.latency(None, "mean"), other.latency(None, "mean")
