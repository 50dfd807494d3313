"""Checks of the studies' claims on containers: scaling and its peak (003 section 6.1, Figure 6), cgroup
limits (003 section 6.2, Figure 7a), remote storage (003 sections 5.4, 6.1), the backing file system,
volume and bind mount with 1 to 3 containers (004, Tables 2 to 5), containers against native and VMs
(001 section 4). Each is decided by the 95% interval of the compared quantity (analysis/findings/verdict.py).
For the registry in analysis/findings/findings.py.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import (
    by_context,
    fmt,
    limits_of,
    match_key,
    pairs,
    same_but_limits,
    select,
    summary_of,
)
from strata.analysis.decisions.criterion import Bound, above, at_least, at_most
from strata.analysis.decisions.stats import Ratio, change, ratio, ratio_of_ratios
from strata.analysis.findings.verdict import (
    Decision,
    Outcome,
    Pairs,
    between,
    changes,
    factors,
    ratio_decision,
    verdict,
)
from strata.analysis.measured.remote import remote_pairs
from strata.analysis.measured.sweeps import scaling
from strata.core.params import LoadCounts

if TYPE_CHECKING:
    from strata.analysis.measured.measurements import Measurements


def containers_peak(ctx: Measurements) -> Outcome:
    """The peak inside the range and the largest count at least 10% below it."""
    out = []
    for ln in scaling(ctx.sweeps, 3):
        (x0, peak), (xl, last) = max(ln.measured, key=lambda p: summary_of(p[1]).mean), ln.measured[-1]
        name = f"{ln.stack} {ln.points[0][1].labels['workload']}: peak {fmt(summary_of(peak).mean)} at {x0} containers"
        if peak is last:  # still rising (or flat) at the last count: against the claim only if decidedly rising
            xp, prev = ln.measured[-2]
            r = ratio(summary_of(last), summary_of(prev))
            d = ratio_decision(r, min(last.reps, prev.reps), f"{name}, not falling by {xl}", hi=at_most(1.0))
            held = False if d.held is False else None
            out.append(Decision(held, d.text, d.need or "measure more containers", between((prev, last))))
            continue
        r = ratio(summary_of(last), summary_of(peak))
        text = f"{name}, {r.value:.2f}x at {xl}"
        out.append(ratio_decision(r, min(last.reps, peak.reps), text, hi=at_most(0.90), of=between((peak, last))))
    return verdict(out)


def p99_grows_faster(ctx: Measurements) -> Outcome:
    out = []
    for ln in scaling(ctx.sweeps, 2):
        a, b = ln.measured[0][1], ln.measured[-1][1]
        mean = ratio(b.latency(None, "mean"), a.latency(None, "mean"))
        p99 = ratio(b.latency(None, "p99"), a.latency(None, "p99"))
        if mean.value == mean.value and p99.value == p99.value:
            text = f"{ln.stack}: {ln.xs[0]}->{ln.xs[-1]} containers, p99 x{p99.value:.2f}, mean x{mean.value:.2f}"
            if p99.low is None or mean.low is None or p99.high is None or mean.high is None:
                need = "no interval: needs 2 or more repetitions (3 recommended)"
                out.append(Decision(None, text, need, between((a, b))))
            else:
                held = True if p99.low > mean.high else False if p99.high < mean.low else None
                need = "" if held is not None else "the intervals overlap: needs more repetitions"
                out.append(Decision(held, text, need, between((a, b))))
    return verdict(out)


def _fs_rank(ctx: Measurements, workload_re: str, fs: str, bound: Bound) -> Outcome:
    """`fs` against the best other file system (a lower bound: at least some share of the best), or the
    worst (an upper bound: at most some factor of the worst)."""
    best = bound.op in (">", ">=")
    out = []
    for group in by_context(select(ctx.cells, workload_re=workload_re), also=("path", "containers")).values():
        by_fs: dict[str, Cell] = {}
        for c in group:
            if not c.mount_options:
                by_fs.setdefault(c.fs_type, c)
        if fs not in by_fs or len(by_fs) < 2:
            continue
        others = sorted((c for t, c in by_fs.items() if t != fs), key=lambda c: summary_of(c).mean, reverse=best)
        mine, ref = by_fs[fs], others[0]
        ranked = sorted(by_fs.values(), key=lambda c: summary_of(c).mean, reverse=best)
        order = (
            " > ".join(f"{c.fs_type} {fmt(summary_of(c).mean, c.unit)}" for c in ranked)
            if best
            else " < ".join(f"{c.fs_type} {fmt(summary_of(c).mean, c.unit)}" for c in ranked)
        )
        r = ratio(summary_of(mine), summary_of(ref))
        text = f"{mine.labels['workload']} {mine.path} x{mine.containers}: {order}"
        lo, hi = (bound, None) if best else (None, bound)
        out.append(ratio_decision(r, min(mine.reps, ref.reps), text, lo, hi, of=between((ref, mine))))
    return verdict(out)


def ext4_best_file_mail(ctx: Measurements) -> Outcome:
    return _fs_rank(ctx, r"file.?server|varmail|mail", "ext4", at_least(0.95))


def xfs_worst_mail(ctx: Measurements) -> Outcome:
    return _fs_rank(ctx, r"varmail|mail", "xfs", at_most(1.05))


def btrfs_worst_fileserver(ctx: Measurements) -> Outcome:
    return _fs_rank(ctx, r"file.?server", "btrfs", at_most(1.05))


BIND_BETTER_WORKLOADS = r"file.?server|random.?file"  # Tables 4 and 5: the sentence follows the one, leads the other


def bind_slightly_better(ctx: Measurements) -> Outcome:
    """Bind mount above volume, per workload and count of containers, over the file systems measured (the
    geometric mean of bind / volume): study 004 says so of each count as a whole, not of each file system
    (its own Tables 4 and 5 have volume ahead for ext4 with one container)."""
    prs = pairs(
        select(ctx.cells, isolation="container", path="volume", workload_re=BIND_BETTER_WORKLOADS),
        select(ctx.cells, isolation="container", path="bind", workload_re=BIND_BETTER_WORKLOADS),
        also=("filesystem", "runtime"),
    )
    groups: dict[tuple[object, ...], list[tuple[Cell, Cell]]] = {}
    for a, b, _ in prs:
        groups.setdefault(match_key(b), []).append((a, b))
    out = []
    for group in groups.values():
        rs = [ratio(summary_of(b), summary_of(a)) for a, b in group]
        if any(r.value != r.value for r in rs):
            continue
        g, b0 = geomean(rs), group[0][1]
        each = ", ".join(f"{b.labels['filesystem']} {r.value:.2f}x" for (_, b), r in zip(group, rs))
        text = f"{b0.labels['workload']} x{b0.containers}: bind mount / volume {g.value:.2f}x ({each})"
        n = min(min(a.reps, b.reps) for a, b in group)
        out.append(ratio_decision(g, n, text, lo=above(1.0), of=between(*group)))
    return verdict(out)


def geomean(rs: list[Ratio]) -> Ratio:
    """The geometric mean of independent ratios, its interval from their log-scale half-widths in
    quadrature (as stats.ratio_of_ratios combines two)."""
    g = math.exp(sum(math.log(r.value) for r in rs) / len(rs))
    if any(r.low is None or r.high is None for r in rs):
        return Ratio(g, None, None)
    w = math.sqrt(sum(math.log(r.high / r.value) ** 2 for r in rs if r.high is not None)) / len(rs)
    return Ratio(g, g * math.exp(-w), g * math.exp(w))


def per_container_share(ctx: Measurements) -> Outcome:
    out = []
    for ln in scaling(ctx.sweeps, 2):
        one = dict(ln.measured).get(1)
        if one is None:
            continue
        for x, c in ln.measured[1:]:
            r = ratio(summary_of(c), summary_of(one))
            text = (
                f"{ln.stack} {c.labels['workload']}: {x} containers move {r.value:.2f}x one container's total "
                f"({fmt(summary_of(c).mean / x, c.unit)} each)"
            )
            of = between((one, c))
            out.append(ratio_decision(r, min(c.reps, one.reps), text, lo=at_least(0.8), hi=at_most(1.2), of=of))
    return verdict(out)


def at_capacity(c: Cell) -> bool:
    """Whether a cell measures what the stack can do: not a database held to an offered rate, whose
    throughput is that rate whatever the stack (study 001's Table 2 offers every runtime the same)."""
    return c.schema.offered is None or c.schema.offered.flat_out(c.workload)


def container_near_native(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, baseline=True, path="bind"),
        [c for c in select(ctx.cells, isolation="container") if c.path in ("volume", "bind") and c.containers == 1],
        also=("filesystem",),
    )
    return changes([p for p in prs if at_capacity(p[1])], lo=at_least(-0.05))


def containers_beat_vms(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, isolation="vm"), select(ctx.cells, isolation="container"), also=("filesystem", "path")
    )
    return changes([p for p in prs if not p[0].emulated and at_capacity(p[1])], lo=at_least(0.10))


def remote_near_local(ctx: Measurements) -> Outcome:
    """At high load only, where study 003 says the match holds ("especially in high I/O request load
    situation", section 5.4; its 6% to 12% are Cassandra's, section 6.1): at low load its own numbers put
    remote storage 54% above local in latency (section 5.5), 0.65x the throughput of one I/O in flight."""
    prs = [(a, b, None) for a, b in high_load(remote_pairs(ctx.cells))]
    return factors(
        prs, lambda a, b, r: f"{b.name}: {r.value:.2f}x {a.labels['device']} (direct-attached)", lo=at_least(0.88)
    )


def _per_instance(c: Cell) -> int:
    """The I/Os one instance keeps in flight: its jobs x queue depth."""
    return int(LoadCounts.of(c.load).per_instance)


def high_load(prs: list[tuple[Cell, Cell]]) -> list[tuple[Cell, Cell]]:
    """The (local, remote) pairs at a high load: for a workload that keeps I/Os in flight (fio), more than
    one per instance and the most measured for its stack, workload and containers; a database's clients
    flat out (not held to an offered rate); any other workload as it ran."""
    top: dict[tuple[object, ...], int] = {}
    for _, b in prs:
        k = (b.stack, b.workload_key, b.containers)
        top[k] = max(top.get(k, 0), _per_instance(b))
    out = []
    for a, b in prs:
        if b.schema.in_flight and not (1 < _per_instance(b) == top[(b.stack, b.workload_key, b.containers)]):
            continue
        if not at_capacity(b):
            continue
        out.append((a, b))
    return out


def remote_gap_closes(ctx: Measurements) -> Outcome:
    """Remote/local at the highest load against remote/local at the lowest, per stack and workload."""
    by: dict[tuple[object, ...], list[tuple[Cell, Cell]]] = {}
    for a, b in remote_pairs(ctx.cells):
        by.setdefault((b.stack, a.labels["device"], b.workload_key), []).append((a, b))
    out = []
    for prs in by.values():
        if len({b.outstanding for _, b in prs}) < 2:
            continue
        (la, lb), (ha, hb) = min(prs, key=lambda p: p[1].outstanding), max(prs, key=lambda p: p[1].outstanding)
        low, high = ratio(summary_of(lb), summary_of(la)), ratio(summary_of(hb), summary_of(ha))
        n = min(la.reps, lb.reps, ha.reps, hb.reps)
        text = (
            f"{hb.stack} {hb.labels['workload']}: remote/local {low.value:.2f}x at {lb.labels['load']}, "
            f"{high.value:.2f}x at {hb.labels['load']}"
        )
        r = ratio_of_ratios(high, low)
        of = between((la, lb), (ha, hb))
        out.append(ratio_decision(r, n, f"{text}; high/low {r.value:.2f}", lo=at_least(1.0), of=of))
    return verdict(out)


# Study 003's single-resource presets (Table 2): MEM limits memory alone, BW the disk bandwidth alone. A claim
# of one of them is checked only where that resource alone is limited (the preset, or the same limits given
# as values): CPU+MEM and ALL also limit the CPU and the bandwidth, and section 6.2 says that under ALL the
# bandwidth limit controls the throughput, which falls with it, so neither speaks to what MEM or BW alone does.
MEMORY_ONLY = frozenset({"memory"})
BANDWIDTH_ONLY = frozenset({"read_bps", "write_bps"})


def _limited(ctx: Measurements, only: frozenset[str]) -> Pairs:
    """(no limit, limited) pairs equal in all else, where the limits set are `only`'s (one of them or more)
    and nothing else."""
    free = {same_but_limits(c): c for c in ctx.cells if c.values and not limits_of(c)}
    out = []
    for c in ctx.cells:
        lim = set(limits_of(c))
        if c.values and lim and lim <= only:
            base = free.get(same_but_limits(c))
            if base is not None:
                out.append((base, c, change(summary_of(base), summary_of(c))))
    return out


def memory_limit_hurts(ctx: Measurements) -> Outcome:
    return changes(_limited(ctx, MEMORY_ONLY), hi=at_most(-0.20))


def bandwidth_limit_harmless(ctx: Measurements) -> Outcome:
    return changes(_limited(ctx, BANDWIDTH_ONLY), lo=at_least(-0.10), hi=at_most(0.10))
