"""Remote against direct-attached storage in the report (seed study 003, section 5.4 and Figure 4).

Two figures per workload that ran on a remote device and on a local one:
- for each stack and load, the remote throughput's change relative to the local twin
  (analysis/measured/remote.py pairs them), with Welch's 95% interval, drawn like `strata compare`;
- the latency breakdown the workload declares (fio's slat/clat/lat) of each stack locally and remotely,
  at the lowest and the highest load, with the latency the fabric adds (remote minus local, mean of the
  device's part: `MetricSchema.below_latency`).
"""

from __future__ import annotations

from strata.analysis.analyse import Analysis
from strata.analysis.cells.cells import Cell
from strata.analysis.compare import status
from strata.analysis.decisions.answer import answer
from strata.analysis.measured.remote import remote_pairs
from strata.report.names import figure_id, row_label, row_labels, short_labels, titled, with_shared
from strata.report.parts import (
    MAX_STACKS,
    ChangeRow,
    Figure,
    LatencyPanel,
    StackBars,
    Table,
    breakdown_entry,
    latencies,
)

XLABEL = "remote relative to direct-attached (%), 95% interval"
COLUMNS = ["stack", "load", "local device", "local", "remote", "unit", "change", "ci_low", "ci_high", "status", "n"]


Pair = tuple[Cell, Cell]  # (local, remote): analysis/measured/remote.py remote_pairs


def remote_figures(a: Analysis) -> list[Figure]:
    groups: dict[tuple[str, str, tuple[object, ...]], list[Pair]] = {}
    for local, remote in remote_pairs([c for c in a.cells if not c.emulated]):  # emulation: not storage
        groups.setdefault((remote.labels["workload"], remote.labels["device"], remote.workload_key), []).append(
            (local, remote)
        )
    out: list[Figure] = []
    for (workload, device, _), prs in sorted(groups.items(), key=lambda kv: kv[0][:2]):
        prs.sort(key=lambda p: (p[1].stack, p[1].outstanding, p[1].labels["load"]))
        out.append(_relative(f"{workload} on {device}", prs))
        lat = _latency(f"{workload} on {device}", prs)
        if lat is not None:
            out.append(lat)
    return out


def _relative(name: str, prs: list[Pair]) -> Figure:
    labels, common = row_labels([r.stack for _, r in prs])
    margin = prs[0][1].margin
    rows: list[list[object]] = []
    data: list[ChangeRow] = []
    for local, remote in prs:
        ch = answer(local.summary, remote.summary, remote.margin)
        st = status(ch)
        label = row_label(labels[remote.stack], remote.labels["load"], min(local.summary.n, remote.summary.n))
        data.append({"label": label, "rel": ch.rel, "low": ch.rel_low, "high": ch.rel_high, "status": st})
        rows.append(
            [
                remote.stack,
                remote.labels["load"],
                local.labels["device"],
                local.summary.mean,
                remote.summary.mean,
                remote.unit,
                ch.rel,
                ch.rel_low,
                ch.rel_high,
                st,
                min(local.reps, remote.reps),
            ]
        )
    fid = figure_id("remote", name)
    title = titled(f"{name}: remote relative to direct-attached storage", common)
    caption = (
        "Each stack on the remote device against the same stack, workload and load on the local device "
        "(seed study 003, section 5.4): the change of the mean throughput with the 95% interval of the ratio "
        "(log scale, so never below -100%); "
        f"lower or higher when the interval excludes zero, the same when it lies within +-{margin:.0%}, grey otherwise."
    )
    return Figure(fid, "compare", title, caption, Table(fid, title, COLUMNS, rows), {"rows": data, "xlabel": XLABEL})


def _latency(name: str, prs: list[Pair]) -> Figure | None:
    prs = [(lo, re) for lo, re in prs if lo.latency(None, "mean").n and re.latency(None, "mean").n]
    if not prs:
        return None
    schema = prs[0][1].schema
    kinds, below = schema.breakdown, schema.below_latency
    loads = sorted({(r.outstanding, r.labels["load"]) for _, r in prs})
    panels = [loads[0], loads[-1]] if len(loads) > 1 else loads[:1]
    labels = short_labels(sorted({r.stack for _, r in prs}))
    rows: list[list[object]] = []
    data: list[LatencyPanel] = []
    added: list[tuple[str, float]] = []
    for outstanding, load in panels:
        stacks: list[StackBars] = []
        for local, remote in (p for p in prs if (p[1].outstanding, p[1].labels["load"]) == (outstanding, load)):
            for side, c in (("local", local), ("remote", remote)):
                entry: StackBars = {"label": f"{labels[remote.stack]} {side}", "drawn": len(stacks) < 2 * MAX_STACKS}
                stacks.append({**entry, **breakdown_entry(latencies(c, kinds))})
            plus = (remote.latency(below, "mean").mean - local.latency(below, "mean").mean) / 1000
            added.append((load, plus))
            rows.append(
                [
                    remote.stack,
                    load,
                    local.labels["device"],
                    local.latency(below, "mean").mean / 1000,
                    remote.latency(below, "mean").mean / 1000,
                    plus,
                    local.latency(None, "p99").mean / 1000,
                    remote.latency(None, "p99").mean / 1000,
                ]
            )
        data.append({"load": load, "outstanding": outstanding, "stacks": [e for e in stacks if e["drawn"]]})
    fid = figure_id("remote-latency", name)
    title = with_shared(f"{name}: latency breakdown local and remote, low and high load", [r.stack for _, r in prs])
    by_load: dict[str, list[float]] = {}
    for load, plus in added:
        by_load.setdefault(load, []).append(plus)
    said = "; ".join(f"{ld}: {_span(v)} us" for ld, v in by_load.items())
    caption = (
        f"{schema.breakdown_words()} latency of each stack on the local and the remote "
        "device, mean (bars) and p99 (markers), as Figure 4 of seed study 003. The remote device adds "
        f"(mean {below}, remote minus local) {said}."
    )
    columns = ["stack", "load", "local device", f"local {below} us", f"remote {below} us", f"added {below} us"]
    columns.append("local p99 us")
    columns.append("remote p99 us")
    return Figure(
        fid, "latency", title, caption, Table(fid, title, columns, rows), {"panels": data, "kinds": list(kinds)}
    )


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:+.0f}" if round(lo) == round(hi) else f"{lo:+.0f} to {hi:+.0f}"
