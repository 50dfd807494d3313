"""Latency, CPU and disk against the container count or the offered rate (seed study 003, Figures
6b-6d and 7b-7c; study 001, CPU and mean latency against the rate)."""

from __future__ import annotations

from strata.analysis.analyse import Analysis
from strata.analysis.cells.cells import Cell
from strata.report.names import figure_id, short_labels, with_shared
from strata.report.parts import MAX_LINES, Figure, Table
from strata.report.parts import mean as mean_of

DETAIL_PANELS = (
    ("p99_ms", "p99 latency (ms)"),
    ("mean_ms", "mean latency (ms)"),
    ("cpu_busy_percent", "host CPU busy (%)"),
    ("disk_mb_s", "device MB/s (read + write)"),
)


def detail_figures(a: Analysis) -> list[Figure]:
    """Against the container count or the offered rate: p99 and mean latency, host CPU, device bandwidth
    (seed study 003, Figures 6b-6d and 7b-7c; study 001, CPU and mean latency against the rate)."""
    out = []
    for s in a.sweeps:
        if not s.axis.detail:
            continue
        labels = short_labels([ln.stack for ln in s.lines])
        rows, lines = [], []
        for ln in s.lines:
            pts = [(x, detail(c)) for x, c in ln.measured]
            if not any(v is not None for _, d in pts for v in d.values()):
                continue
            rows += [
                [ln.stack, x, *(d[k] for k, _ in DETAIL_PANELS), c.reps] for (x, d), (_, c) in zip(pts, ln.measured)
            ]
            lines.append({"label": labels[ln.stack], "points": [[x, d] for x, d in pts]})
        if not lines:
            continue
        lines = lines[:MAX_LINES]
        title = with_shared(f"latency, CPU and disk against {s.axis.label}: {s.context}", [ln.stack for ln in s.lines])
        fid = figure_id(f"detail-{s.dim}", s.context)
        out.append(
            Figure(
                fid,
                "detail",
                title,
                "Means over repetitions: p99 and mean latency (histograms merged across instances), the host's CPU "
                "busy share and the device's bandwidth in the measured window (seed study 003, Figures 6b-6d; "
                "study 001, Figures 4-6).",
                Table(fid, title, ["stack", s.axis.label, *(k for k, _ in DETAIL_PANELS), "n"], rows),
                {"lines": lines, "xlabel": s.axis.label, "panels": list(DETAIL_PANELS)},
            )
        )
    return out


def detail(c: Cell) -> dict[str, float | None]:
    """A cell's p99 and mean latency (ms), host CPU busy (%) and device MB/s, means over its repetitions."""
    p99, mean = c.latency(None, "p99").mean, c.latency(None, "mean").mean
    cpu: list[float | None] = []
    disk: list[float | None] = []
    for r in c.ok:
        idle = r.collected.cpu_idle_percent
        if idle is not None:
            cpu.append(100.0 - idle)
        if (mb_s := r.collected.device_mb_s) is not None:
            disk.append(mb_s)
    return {
        "p99_ms": p99 / 1e6 if p99 is not None else None,
        "mean_ms": mean / 1e6 if mean is not None else None,
        "cpu_busy_percent": mean_of(cpu),
        "disk_mb_s": mean_of(disk),
    }
