"""What the report shows, as plain data: figures (each with the table behind it),
tables, warnings, findings and advice, built from an Analysis of stored results.

Figures are chosen from what the results contain (docs/architecture.md "Flow of one
report"): throughput relative to the raw device per workload (seed study 003,
Figure 3), the latency breakdown the workload declares at low and high load (Figure 4),
sweeps with confidence bands (Figures 3e, 3g), scaling over containers with the
peak (Figure 6a), collector time series of chosen trials. The exporters
(html, figures, csv, terminal) turn a Report into bytes and nothing else.
"""

from __future__ import annotations

from strata.analysis.advice import amplification
from strata.analysis.analyse import Analysis
from strata.analysis.cells.baseline import apart_ratio, baseline_key, ratio_to_raw
from strata.analysis.cells.cells import Cell, artifact, series_of
from strata.analysis.measured.sweeps import peak
from strata.report.amplification import amplification_figures
from strata.report.detail import detail_figures
from strata.report.names import figure_id, short_labels, with_shared
from strata.report.parts import (
    MAX_LINES,
    MAX_STACKS,
    SMOKE_MARK,
    Bar,
    Figure,
    LatencyPanel,
    Point,
    Report,
    SeriesPoints,
    StackBars,
    Table,
    breakdown_caption,
    breakdown_entry,
    latencies,
)
from strata.report.remote import remote_figures
from strata.report.runtimes import runtime_figures
from strata.report.tables import report_tables, workload_groups
from strata.results.flags import Declared
from strata.results.result import Result
from strata.results.stored import Samples

# Figures drawn per kind (the others keep their table and CSV): bounds report time on 10,000 trials.
MAX_FIGURES_PER_KIND = {
    "ratio": 8,
    "latency": 4,
    "sweep": 4,
    "scaling": 4,
    "detail": 4,
    "remote": 8,
    "runtimes": 8,
    "amplification": 8,
}
MAX_SERIES = 3


def build(a: Analysis, title: str = "strata report", series_ids: tuple[str, ...] = ()) -> Report:
    rep = Report(title, a)
    for kind, make in (
        ("ratio", _ratio_figures),
        ("latency", _latency_figures),
        ("sweep", _sweep_figures),
        ("scaling", _scaling_figures),
        ("detail", detail_figures),
        ("remote", remote_figures),
        ("runtimes", runtime_figures),
        ("amplification", amplification_figures),
    ):
        figs = make(a)
        for f in figs[MAX_FIGURES_PER_KIND[kind] :]:
            f.drawn = False
        rep.figures.extend(figs)
    rep.figures.extend(_series_figures(a, series_ids))
    rep.tables = report_tables(a)
    _unique_ids(rep.figures + rep.tables)
    if a.smoke:  # every figure and table says it, wherever it ends up (a PNG in a slide, a CSV)
        for item in rep.figures + rep.tables:
            item.title = f"{SMOKE_MARK} {item.title}"
        for f in rep.figures:
            f.table.title = f.title
    return rep


def _unique_ids(items: list[Figure | Table]) -> None:
    """File names and HTML ids: a second figure with the same id gets -2, and so on."""
    seen: dict[str, int] = {}
    for it in items:
        n = seen.get(it.id, 0) + 1
        seen[it.id] = n
        if n > 1:
            it.id = f"{it.id}-{n}"
            if isinstance(it, Figure):
                it.table.id = it.id


def _ratio_figures(a: Analysis) -> list[Figure]:
    out = []
    for name, cells in workload_groups(a):
        others = [c for c in cells if not c.is_raw and (c.values or c.apart_values)]
        has_raw = any(
            ratio_to_raw(c, a.raw) is not None or apart_ratio(c, a.raw, c.apart_values) is not None for c in others
        )
        if not others:
            continue
        labels = short_labels([c.stack for c in others])
        durable = any(c.durability for c in others)  # a column only where a database said its settings
        rows: list[list[object]] = []
        bars: list[Bar] = []
        per_cell = [(c, _bars_of(c, a, labels[c.stack], has_raw)) for c in others]
        shown = _low_high([c for c, bs in per_cell if bs])
        for c, bs in per_cell:
            for bar in bs:
                if (c.outstanding, c.labels["load"]) in shown:
                    bars.append(bar)
                rows.append(
                    [
                        c.stack,
                        c.labels["load"],
                        bar["value"],
                        bar["low"],
                        bar["high"],
                        bar["n"],
                        bar["mean"],
                        bar.get("raw"),
                        c.unit,
                        bar["note"],
                        wa.mean if (wa := amplification.device(c)) is not None else None,
                        *([c.durability or None] if durable else []),
                    ]
                )
        if not bars:
            continue
        kind = "ratio" if has_raw else "throughput"
        col = "ratio to raw" if has_raw else c.unit
        fid = figure_id(kind, name)
        title = with_shared(
            f"{name}: throughput relative to the raw device (raw = 1.0)"
            if has_raw
            else f"{name}: throughput ({cells[0].unit}; no raw-device baseline measured)",
            [c.stack for c in others],
        )
        caption = _ratio_caption(has_raw) + (
            " Drawn: the lowest and highest load (H/L as in the study); the table holds every load."
            if len({(c.outstanding, c.labels["load"]) for c in others}) > 2
            else ""
        )
        if any(c.emulated for c in others):
            caption += " Cross-hatched purple bars: VMs under emulation (TCG), the emulator's speed, not storage."
        out.append(
            Figure(
                fid,
                kind,
                title,
                caption,
                Table(
                    fid,
                    title,
                    [
                        "stack",
                        "load",
                        col,
                        "ci_low",
                        "ci_high",
                        "n",
                        f"mean {cells[0].unit}",
                        f"raw {cells[0].unit}",
                        "unit",
                        "note",
                        "write amplification",
                        *(["durability"] if durable else []),
                    ],
                    rows,
                ),
                {"bars": bars, "has_raw": has_raw, "unit": cells[0].unit},
            )
        )
    return out


def _low_high(cells: list[Cell]) -> set[tuple[int, str]]:
    loads = sorted({(c.outstanding, c.labels["load"]) for c in cells})
    return {loads[0], loads[-1]} if loads else set()


def _ratio_caption(has_raw: bool) -> str:
    what = (
        "Mean over repetitions relative to the raw device of the same workload and load (seed study 003, "
        "Figure 3), with 95% intervals."
        if has_raw
        else "Mean over repetitions with 95% intervals."
    )
    return (
        what + " Hatched grey bars: a cache answered (flags.cache or above the raw device); they are not "
        "device performance."
    )


def _bars_of(c: Cell, a: Analysis, label: str, has_raw: bool) -> list[Bar]:
    """The device bar of a cell and, apart, the bars of its repetitions each flag draws apart (cache, unconfirmed)."""
    out: list[Bar] = []
    raw = a.raw.get(baseline_key(c))
    base = raw.summary.mean if raw is not None and has_raw else None
    if not (base or not has_raw):
        return out
    if c.values and c.emulated:  # never drawn as storage performance beside native and container bars
        m = c.summary.mean
        out.append(
            _bar(label, c, m / base if base else m, None, None, "emulated", APART_NOTE["emulated"], base, c.reps, m)
        )
    elif c.values:
        s = c.summary
        r = ratio_to_raw(c, a.raw) if has_raw else None
        v, lo, hi = (r.value, r.low, r.high) if r else (s.mean, s.ci_low, s.ci_high)
        out.append(_bar(label, c, v, lo, hi, None, "", base, c.reps, s.mean))
    for d, g in c.groups():
        if g.values:
            m = sum(g.values) / len(g.values)
            out.append(
                _bar(label, c, m / base if base else m, None, None, d.apart, apart_note(d), base, len(g.values), m)
            )
    return out


SERIES_NOTE = {"cache": "cache answered"}  # a time series' title, by the group its trial is drawn apart in
APART_NOTE = {
    "cache": "cache answered (the bytes show it): not device performance",
    "emulated": "emulated (a VM under TCG): the CPU emulation's speed, not storage performance",
    "unconfirmed": "unconfirmed: above the raw device although the device moved the bytes; not device performance "
    "until repetitions of both agree",
}


def apart_note(d: Declared) -> str:
    """What a group drawn apart is, under its bars and in its tables (the flag's own words where none here)."""
    return APART_NOTE.get(d.apart) or f"{d.apart}: {d.meaning}; not device performance"


def _first_apart(c: Cell) -> tuple[Declared, list[float]]:
    """The group a cell without device numbers is drawn as: the first flag's that holds any."""
    for d, g in c.groups():
        if g.values:
            return d, g.values
    raise ValueError(f"{c.name}: nothing drawn apart")


def _bar(
    label: str,
    c: Cell,
    value: float,
    low: float | None,
    high: float | None,
    apart: str | None,
    note: str,
    raw: float | None,
    n: int,
    mean: float,
) -> Bar:
    return {
        "label": label,
        "load": c.labels["load"],
        "value": value,
        "low": low,
        "high": high,
        "apart": apart,
        "note": note,
        "raw": raw,
        "n": n,
        "mean": mean,
    }


def _latency_figures(a: Analysis) -> list[Figure]:
    out = []
    for name, cells in workload_groups(a):
        kinds = cells[0].schema.breakdown  # a group's cells ran the same workload
        cells = [c for c in cells if c.values and c.latency(None, "mean").n]
        loads = sorted({(c.outstanding, c.labels["load"]) for c in cells})
        if not cells:  # only workloads that declare latencies have a breakdown
            continue
        panels = [loads[0], loads[-1]] if len(loads) > 1 else loads[:1]
        labels = short_labels(sorted({c.stack for c in cells}))
        rows: list[list[object]] = []
        data: list[LatencyPanel] = []
        for outstanding, load in panels:
            stacks: list[StackBars] = []
            for i, c in enumerate(c for c in cells if c.labels["load"] == load and c.outstanding == outstanding):
                lat = latencies(c, kinds)
                stacks.append({"label": labels[c.stack], "drawn": i < MAX_STACKS, **breakdown_entry(lat)})
                rows += [[c.stack, load, *row] for row in lat]
            in_flight = outstanding if cells[0].schema.in_flight else None
            data.append({"load": load, "outstanding": in_flight, "stacks": [e for e in stacks if e["drawn"]]})
        fid = figure_id("latency", name)
        at = "low and high load" if len(panels) > 1 else f"load {panels[0][1]}"
        title = with_shared(f"{name}: latency breakdown, {at}", [c.stack for c in cells])
        caption = (
            f"{breakdown_caption(cells[0].schema)}, mean (bars) and p99 (markers), "
            "as Figure 4 of seed study 003; percentiles come from histograms merged over jobs and containers, "
            "repetitions "
            "are averaged."
            + (f" Drawn: the first {MAX_STACKS} stacks; the table holds all." if len(labels) > MAX_STACKS else "")
        )
        out.append(
            Figure(
                fid,
                "latency",
                title,
                caption,
                Table(fid, title, ["stack", "load", "latency", "stat", "us", "n"], rows),
                {"panels": data, "kinds": list(kinds)},
            )
        )
    return out


def _sweep_figures(a: Analysis) -> list[Figure]:
    out = []
    for s in a.sweeps:
        if s.dim == "containers":
            continue
        labels = short_labels([ln.stack for ln in s.lines])
        rows, lines = [], []
        for ln in s.lines:
            pts = []
            for x, c in ln.points:
                pt = _point(x / s.axis.scale if s.axis.scale != 1 else x, c)
                pts.append(pt)
                rows.append([ln.stack, *pt[:4], c.reps or len(c.apart_values), c.unit, _cache_note(c)])
            lines.append({"label": labels[ln.stack], "points": pts})
        lines = lines[:MAX_LINES]
        fid = figure_id(f"sweep-{s.dim}", s.context)
        title = with_shared(s.title, [ln.stack for ln in s.lines])
        out.append(
            Figure(
                fid,
                "sweep",
                title,
                "Mean over repetitions; the band is the 95% confidence interval (seed study 003, Figures 3e and 3g).",
                Table(fid, title, ["stack", s.axis.label, s.unit, "ci_low", "ci_high", "n", "unit", "note"], rows),
                {"lines": lines, "xlabel": s.axis.label, "unit": s.unit, "dim": s.dim},
            )
        )
    return out


def _point(x: float, c: Cell) -> Point:
    """(x, mean, ci_low, ci_high, apart): device numbers, or the mean drawn apart ("cache", "unconfirmed")."""
    if c.values:
        s = c.summary
        return (x, s.mean, s.ci_low, s.ci_high, None)
    d, values = _first_apart(c)
    return (x, sum(values) / len(values), None, None, d.apart)


def _cache_note(c: Cell) -> str:
    if c.values:
        return ""
    return apart_note(_first_apart(c)[0])


def _scaling_figures(a: Analysis) -> list[Figure]:
    out = []
    for s in a.sweeps:
        if s.dim != "containers":
            continue
        labels = short_labels([ln.stack for ln in s.lines])
        rows, lines = [], []
        for ln in s.lines:
            p = peak(ln)
            pts = [_point(x, c) for x, c in ln.points]
            rows += [
                [ln.stack, x, m, lo, hi, m / x, x == p.x and not apart, c.reps or len(c.apart_values), _cache_note(c)]
                for (x, m, lo, hi, apart), (_, c) in zip(pts, ln.points)
            ]
            lines.append({"label": labels[ln.stack], "points": pts, "peak": p.x, "falls_after": p.falls_after})
        lines = lines[:MAX_LINES]
        title = with_shared(f"scaling over containers: {s.context}", [ln.stack for ln in s.lines])
        fid = figure_id("scaling", s.context)
        out.append(
            Figure(
                fid,
                "scaling",
                title,
                "Aggregate throughput of all containers and throughput per "
                "container, mean with 95% band; the star marks the peak (seed study 003, Figure 6a).",
                Table(
                    fid,
                    title,
                    [
                        "stack",
                        "containers",
                        f"aggregate {s.unit}",
                        "ci_low",
                        "ci_high",
                        f"per container {s.unit}",
                        "peak",
                        "n",
                        "note",
                    ],
                    rows,
                ),
                {"lines": lines, "unit": s.unit},
            )
        )
    return out


def _series_figures(a: Analysis, wanted: tuple[str, ...]) -> list[Figure]:
    out = []
    for r, cell in _pick_series(a, wanted):
        data = series_data(r)
        if not data:
            continue
        rows = [[k, t, v] for k, pts in data.items() if isinstance(pts, list) for t, v in pts]
        rows += [
            [f"{k} {c}", t, v]
            for k, per in data.items()
            if isinstance(per, dict)
            for c, pts in per.items()
            for t, v in pts
        ]
        group = next((d for d, g in cell.groups() if any(r is x for x in g.results)), None)
        cached = f" ({SERIES_NOTE.get(group.apart, group.apart)}: not device performance)" if group else ""
        title = f"time series: {cell.name} #{r.repetition} (trial {r.trial_id}){cached}"
        fid = figure_id("series", r.trial_id)
        out.append(
            Figure(
                fid,
                "series",
                title,
                "Per-second samples of the collectors and of the workload's own log: "
                "a steady run is flat; device utilization, iowait and page cache show where time went.",
                Table(fid, title, ["series", "t_s", "value"], rows),
                {"series": data},
            )
        )
    return out


def _pick_series(a: Analysis, wanted: tuple[str, ...]) -> list[tuple[Result, Cell]]:
    by_id = {r.trial_id: (r, c) for c in a.cells for r in c.measured}
    picked = [by_id[t] for t in wanted if t in by_id]
    unsteady = [(r, c) for c in a.cells for r, s in c.steady if s and s.warns]
    cached = [(r, c) for c in a.cells for r in c.cached]
    busiest = sorted((c for c in a.cells if c.ok), key=lambda c: -c.outstanding)
    for r, c in unsteady[:1] + cached[:1] + [(c.ok[0], c) for c in busiest]:
        if len(picked) >= MAX_SERIES + len(wanted):
            break
        if all(r is not p[0] for p in picked):
            picked.append((r, c))
    return picked


def series_data(r: Result) -> dict[str, SeriesPoints | dict[str, SeriesPoints]]:
    """{series name: [(t_s, value), ...]} from a trial's workload-series.json and series.json (a group's
    series, the containers' I/O: {series name: {member: [(t_s, value), ...]}})."""
    out: dict[str, SeriesPoints | dict[str, SeriesPoints]] = {}
    ws = artifact(r, "workload-series.json") or {}
    primary = r.primary
    name = primary.series
    if name and ws.get(name):
        label = f"{primary.series_unit or primary.unit} ({r.workload_type})"
        out[label] = [(float(t), float(v)) for t, v in series_of(ws[name]) or []]
    s = Samples.of(artifact(r, "series.json") or {}, r.collected.kernel_name)
    if not s.t:
        return out
    t0 = s.t[0]
    ts = [x - t0 for x in s.t[1:]]
    if s.util_percent:
        out["device utilization %"] = list(zip(ts, s.util_percent))
    if s.iowait_percent:
        out["iowait %"] = list(zip(ts, s.iowait_percent))
    if s.page_cache_bytes:
        out["page cache MiB"] = [(x, v / 2**20) for x, v in zip(ts, s.page_cache_bytes)]
    if s.cgroups:
        io = {
            f"container {i}": [(x, (a + b) / 1e6) for x, a, b in zip(ts, read, write)]
            for i, (read, write) in sorted(s.cgroups.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else kv[0])
        }
        if any(io.values()):
            out["container I/O MB/s"] = io
    return out
