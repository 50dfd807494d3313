"""Checks of the studies' claims on a database in containers: the limit that hurts most (003 section 6.2,
Figure 7a: MEM), p99 latency past the peak container count (003 section 6.1, Figure 6b), and the cost
of replication (001 section 4, RF 1 to 3). Decided by 95% intervals (analysis/findings/verdict.py), like every
finding; for the registry in analysis/findings/findings.py. They read only what every result has (the headline,
latencies, the load's limits, the workload's parameters), so they apply to any workload that sweeps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import fmt, limits_of, same_but_limits, summary_of
from strata.analysis.decisions.criterion import above
from strata.analysis.decisions.stats import Change, change, ratio
from strata.analysis.findings.verdict import Decision, Outcome, between, ratio_decision, verdict
from strata.analysis.measured.sweeps import scaling
from strata.core.jsondoc import obj, whole

if TYPE_CHECKING:
    from strata.analysis.measured.measurements import Measurements


def _preset(c: Cell) -> str | None:
    preset = c.layers.preset
    return None if preset is None else str(preset)


def limit_hurts_most(ctx: Measurements, worst: str = "MEM", others: tuple[str, ...] = ("CPU", "BW")) -> Outcome:
    """Among the single-resource presets at one container count, `worst` cuts throughput the most."""
    free = {same_but_limits(c): c for c in ctx.cells if c.values and not limits_of(c)}
    groups: dict[tuple[object, ...], dict[str | None, tuple[Cell, Change]]] = {}
    for c in ctx.cells:
        if c.values and _preset(c) in (worst, *others):
            base = free.get(same_but_limits(c))
            if base is not None:
                groups.setdefault(same_but_limits(c), {})[_preset(c)] = (c, change(summary_of(base), summary_of(c)))
    out = []
    for presets in groups.values():
        if worst not in presets or len(presets) < 2:
            continue
        cw, chw = presets[worst]
        base = free[same_but_limits(cw)]
        for name, (c, ch) in presets.items():
            if name == worst:
                continue
            text = f"{cw.name}: {worst} {chw.text()} vs {name} {ch.text()} against no limit"
            of = between((base, cw), (base, c))
            if chw.rel_high is None or chw.rel_low is None or ch.rel_low is None or ch.rel_high is None:
                out.append(Decision(None, text, "needs 2 or more repetitions of each (3 recommended)", of))
            elif chw.rel_high < ch.rel_low:
                out.append(Decision(True, text, of=of))
            elif ch.rel_high < chw.rel_low:
                out.append(Decision(False, text, of=of))
            else:
                out.append(Decision(None, text, "the intervals overlap: needs more repetitions", of))
    return verdict(out)


def p99_grows_past_peak(ctx: Measurements) -> Outcome:
    """p99 latency at the largest count is above p99 at the peak count (the peak inside the range)."""
    out = []
    for ln in scaling(ctx.sweeps, 3):
        (xp, peak), (xl, last) = max(ln.measured, key=lambda p: summary_of(p[1]).mean), ln.measured[-1]
        if peak is last:
            continue
        r = ratio(last.latency(None, "p99"), peak.latency(None, "p99"))
        if r.value != r.value:
            continue
        text = f"{ln.stack} {last.labels['workload']}: p99 x{r.value:.2f} from the peak ({xp}) to {xl} containers"
        out.append(ratio_decision(r, min(last.reps, peak.reps), text, lo=above(1.0), of=between((peak, last))))
    return verdict(out)


def _without_rf(c: Cell) -> tuple[object, ...]:
    wl = {k: v for k, v in c.workload.items() if k not in ("name", "cluster")}
    cluster = {k: v for k, v in obj(c.workload, "cluster").items() if k != "replication_factor"}
    return (c.stack, c.load_key, repr(sorted(wl.items())), repr(sorted(cluster.items())))


def replication_cost(ctx: Measurements) -> Outcome:
    """A higher replication factor raises the mean latency (more replicas answer each request)."""
    groups: dict[tuple[object, ...], dict[int, Cell]] = {}
    for c in ctx.cells:
        rf = whole(obj(c.workload, "cluster"), "replication_factor")
        if c.values and rf:
            groups.setdefault(_without_rf(c), {})[rf] = c
    out = []
    for by_rf in groups.values():
        if len(by_rf) < 2:
            continue
        lo_rf, hi_rf = min(by_rf), max(by_rf)
        a, b = by_rf[lo_rf], by_rf[hi_rf]
        r = ratio(b.latency(None, "mean"), a.latency(None, "mean"))
        if r.value != r.value:
            continue
        text = (
            f"{a.stack} {a.labels['workload']}: mean latency x{r.value:.2f} from RF {lo_rf} to RF {hi_rf} "
            f"(throughput {fmt(summary_of(a).mean, a.unit)} -> {fmt(summary_of(b).mean, b.unit)})"
        )
        out.append(ratio_decision(r, min(a.reps, b.reps), text, lo=above(1.0), of=between((a, b))))
    return verdict(out)
