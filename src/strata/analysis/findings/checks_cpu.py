"""Checks of the studies' claims on what the stack under test costs in CPU, and on Cassandra clusters
and limits: CPU and latency rising with the number of clusters (001 section 4.2, Figures 4 to 9), the
nonvirtualized case the cheapest (001 Table 2), a VM's CPU overhead in percentage points (001 section
4.1 and Table 2), the storage target's CPU (003 section 7, Figure 8d), the CPU limit's gain and the ALL
preset's tail (003 section 6.2, Figures 7a and 7c), and writes against reads over clusters (001
section 4, Figure 1).

CPU is read from what the collectors store with every trial (analysis/cells/usage.py): the servers' share of
the host (the host's busy share less the YCSB clients'), per 1,000 ops/s of the trial's throughput, so
that configurations that ran at different rates compare (study 001 draws CPU against the offered rate);
a VM's overhead is its CPU at the native run's throughput less the native run's, in points, as study
001's Table 2 sets both at one offered rate.
Each is decided by the 95% interval of the compared quantity (analysis/findings/verdict.py), for the registry in
analysis/findings/findings.py.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from strata.analysis.cells import usage
from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import fmt, limits_of, pairs, same_but_limits, select, summary_of
from strata.analysis.decisions.criterion import Bound, above, at_least, at_most, below, decides
from strata.analysis.decisions.stats import Summary, change, ratio, t_two_sided
from strata.analysis.findings.verdict import (
    INCONCLUSIVE,
    NOT_HELD,
    Decision,
    Outcome,
    between,
    ratio_decision,
    verdict,
)
from strata.results.result import Result

if TYPE_CHECKING:
    from strata.analysis.measured.measurements import Measurements


TARGET_CPU_PER_CLIENT = 2.0  # percent of the target host's CPUs: 50 clients within its CPU (003 section 7)
# "up to 29% higher" (001 section 4.1), in percentage points: its Table 2 gives VMware 75% against the
# nonvirtualized 46% at RF 1, mixed load, 80K tps (29 points; 1.63x, so never a ratio of 1.29)
VM_CPU_MAX_POINTS = 29.0
TAIL_MIN = 2.0  # the ALL preset's p99 against no limit; the study: more than 3x in the worst case


def cpu_per_kops(c: Cell) -> Summary:
    """The servers' CPU (% of the host) per 1,000 ops/s of the trial's throughput, over repetitions."""
    return usage.of_cell(c.ok, lambda r: usage.per_kops(usage.server_cpu_percent(r), r))


def clusters(c: Cell) -> int | None:
    """The databases (clusters) of a cell whose clients offer databases a rate (`MetricSchema.offered`)."""
    offered = c.schema.offered
    return offered.databases_of(c.workload) if offered is not None else None


def _clusters_groups(ctx: Measurements) -> list[tuple[Cell, Cell]]:
    """(fewest, most) clusters of database cells equal in everything but the number of clusters."""
    groups: dict[tuple[object, ...], dict[int, Cell]] = {}
    for c in ctx.cells:
        n = clusters(c)
        if c.values and c.schema.offered is not None and n:
            rest = tuple(kv for kv in c.workload_key if kv[0] != c.schema.offered.databases)
            groups.setdefault((c.stack, c.load_key, rest), {})[n] = c
    return [(by[min(by)], by[max(by)]) for by in groups.values() if len(by) >= 2]


def _rises(ctx: Measurements, figure: Callable[[Cell], Summary], what: str, bound: Bound) -> Outcome:
    out = []
    for a, b in _clusters_groups(ctx):
        r = ratio(figure(b), figure(a))
        if r.value != r.value:
            continue
        na, nb = clusters(a), clusters(b)
        text = f"{b.stack} {a.labels['workload']}: {what} x{r.value:.2f} from {na} to {nb} clusters"
        out.append(ratio_decision(r, min(figure(a).n, figure(b).n), text, lo=bound, of=between((a, b))))
    return verdict(out)


def cpu_rises_with_clusters(ctx: Measurements) -> Outcome:
    return _rises(ctx, cpu_per_kops, "the servers' CPU per 1,000 ops/s", above(1.0))


def latency_rises_with_clusters(ctx: Measurements) -> Outcome:
    return _rises(ctx, Cell.mean_over_operations, "mean latency", above(1.0))


def native_cpu_lowest(ctx: Measurements) -> Outcome:
    """A container's servers' CPU per operation at least the nonvirtualized one's, same database and load."""
    prs = pairs(select(ctx.cells, baseline=True, offered=True), select(ctx.cells, isolation="container", offered=True))
    out = []
    for a, b, _ in prs:
        r = ratio(cpu_per_kops(b), cpu_per_kops(a))
        if r.value == r.value:
            text = f"{b.name}: CPU per 1,000 ops/s x{r.value:.2f} native"
            n = min(cpu_per_kops(a).n, cpu_per_kops(b).n)
            out.append(ratio_decision(r, n, text, lo=at_least(1.0), of=between((a, b))))
    return verdict(out)


def vm_cpu_overhead(ctx: Measurements) -> Outcome:
    """A VM's host CPU above the native one's by 0 to 29 percentage points, for the same work: each VM
    trial's CPU scaled to the native cell's throughput (study 001 compares them at one offered rate), same
    workload, file system and load."""
    prs = pairs(select(ctx.cells, baseline=True, path="bind"), select(ctx.cells, isolation="vm"), also=("filesystem",))
    out = []
    for a, b, _ in prs:
        if b.emulated:
            continue
        native, rate = usage.of_cell(a.ok, usage.host_busy_percent), summary_of(a).mean
        vm = usage.of_cell(b.ok, functools.partial(_busy_at_rate, rate=rate))
        if not (native.n and vm.n):
            continue
        d, low, high = difference(native, vm)
        held, need = decides(d, low, high, min(native.n, vm.n), lo=at_least(0.0), hi=at_most(VM_CPU_MAX_POINTS))
        ci = f" [{low:+.1f}, {high:+.1f}]" if low is not None and high is not None else " (no interval)"
        text = (
            f"{b.name}: host CPU {vm.mean:.1f}% at native's {fmt(rate, a.unit)}, native {native.mean:.1f}%: "
            f"{d:+.1f} points{ci}"
        )
        out.append(Decision(held, text, need, between((a, b))))
    return verdict(out)


def _busy_at_rate(r: Result, rate: float) -> float | None:
    """A trial's host CPU share scaled to another throughput (the same work per operation)."""
    cpu, ops = usage.host_busy_percent(r), r.primary.value
    return None if cpu is None or not ops else cpu * rate / ops


def difference(a: Summary, b: Summary) -> tuple[float, float | None, float | None]:
    """b.mean - a.mean with Welch's 95% interval (None without 2 repetitions of each)."""
    d = b.mean - a.mean
    if a.n < 2 or b.n < 2:
        return d, None, None
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1)) if va and vb else max(a.n, b.n) - 1
    h = t_two_sided(min(a.alpha, b.alpha), df) * se
    return d, d - h, d + h


def target_cpu_low(ctx: Measurements) -> Outcome:
    """A remote device's storage target uses at most 2% of its host's CPUs for the one client it serves."""
    out = []
    for c in ctx.cells:
        s = usage.of_cell(c.ok, usage.target_cpu_percent)
        if not s.n:
            continue
        held, need = decides(s.mean, s.ci_low, s.ci_high, s.n, hi=at_most(TARGET_CPU_PER_CLIENT))
        ci = f" [{s.ci_low:.2f}, {s.ci_high:.2f}]" if s.ci_low is not None else ""
        out.append(Decision(held, f"{c.name}: target {s.mean:.2f}%{ci} of the host's CPUs", need, between((c, c))))
    return verdict(out)


def _against_no_limit(ctx: Measurements, preset: str) -> list[tuple[Cell, Cell]]:
    """(no limit, the preset) cells equal in everything else."""
    free = {same_but_limits(c): c for c in ctx.cells if c.values and not limits_of(c)}
    out = []
    for c in ctx.cells:
        if c.values and c.layers.preset == preset:
            base = free.get(same_but_limits(c))
            if base is not None:
                out.append((base, c))
    return out


def cpu_limit_helps(ctx: Measurements) -> Outcome:
    """With the CPU preset, aggregate throughput at 4 or more containers above the unlimited run's."""
    out = []
    for a, b in _against_no_limit(ctx, "CPU"):
        if b.containers < 4:
            continue
        ch = change(summary_of(a), summary_of(b))
        held, need = decides(ch.rel, ch.rel_low, ch.rel_high, min(a.reps, b.reps), lo=above(0.0))
        out.append(Decision(held, f"{b.name}: {ch.text()} against no limit", need, between((a, b))))
    return verdict(out)


def all_limits_tail(ctx: Measurements) -> Outcome:
    """In the worst case (some container count), p99 with the ALL preset at least 2x no limit's."""
    out = []
    for a, b in _against_no_limit(ctx, "ALL"):
        pa, pb = a.latency(None, "p99"), b.latency(None, "p99")
        r = ratio(pb, pa)
        if r.value == r.value:
            text = f"{b.name}: p99 x{r.value:.2f} no limit ({fmt(pa.mean / 1e6)} -> {fmt(pb.mean / 1e6)} ms)"
            out.append(ratio_decision(r, min(pa.n, pb.n), text, lo=at_least(TAIL_MIN), of=between((a, b))))
    o = verdict(out)
    if any(d.held for d in out):  # the worst case held: the others are the claim's better cases
        return verdict([d for d in out if d.held])
    if o.status == NOT_HELD and any(d.held is None for d in out):
        return Outcome(INCONCLUSIVE, o.numbers, [d.need for d in out if d.held is None and d.need], o.compared)
    return o


def _flat_out(c: Cell) -> bool:
    return c.schema.offered is not None and c.schema.offered.flat_out(c.workload)


def writes_rise_reads_fall(ctx: Measurements) -> Outcome:
    """Flat out: the write load's aggregate throughput above one cluster's with more clusters, the read
    load's below it."""
    out = []
    for a, b in _clusters_groups(ctx):
        profile = a.workload.get("profile")
        if profile not in ("read", "write") or not _flat_out(a):
            continue
        r = ratio(summary_of(b), summary_of(a))
        na, nb = clusters(a), clusters(b)
        text = f"{b.stack} {profile}: throughput x{r.value:.2f} from {na} to {nb} clusters"
        lo, hi = (above(1.0), None) if profile == "write" else (None, below(1.0))
        out.append(ratio_decision(r, min(a.reps, b.reps), text, lo=lo, hi=hi, of=between((a, b))))
    return verdict(out)
