"""Checks of the studies' claims on containers: scaling and its peak (003 section 6.1, Figure 6), cgroup
limits (003 section 6.2, Figure 7a), remote storage (003 sections 5.4, 6.1), the backing file system,
volume and bind mount with 1 to 3 containers (004, Tables 2 to 5), containers against native and VMs
(001 section 4). Each is decided by the 95% interval of the compared quantity (analysis/verdict.py).
For the registry in analysis/findings.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strata.analysis.cells import Cell
from strata.analysis.query import by_context, fmt, pairs, select, summary_of
from strata.analysis.remote import remote_pairs
from strata.analysis.stats import change, ratio, ratio_of_ratios
from strata.analysis.sweeps import Line
from strata.analysis.verdict import Decision, Outcome, Pairs, changes, factors, ratio_decision, verdict
from strata.core.params import PRESET_LIMITS

if TYPE_CHECKING:
    from strata.analysis.analyse import Analysis


def _scaling(ctx: Analysis, min_points: int = 2) -> list[Line]:
    return [ln for s in ctx.sweeps if s.dim == "containers" for ln in s.lines if len(ln.measured) >= min_points]


def containers_peak(ctx: Analysis) -> Outcome:
    """The peak inside the range and the largest count at least 10% below it."""
    out = []
    for ln in _scaling(ctx, 3):
        (x0, peak), (xl, last) = max(ln.measured, key=lambda p: summary_of(p[1]).mean), ln.measured[-1]
        name = f"{ln.stack} {ln.points[0][1].labels['workload']}: peak {fmt(summary_of(peak).mean)} at {x0} containers"
        if peak is last:  # still rising (or flat) at the last count: against the claim only if decidedly rising
            xp, prev = ln.measured[-2]
            r = ratio(summary_of(last), summary_of(prev))
            d = ratio_decision(r, min(last.reps, prev.reps), f"{name}, not falling by {xl}", hi=1.0)
            out.append(Decision(False if d.held is False else None, d.text, d.need or "measure more containers"))
            continue
        r = ratio(summary_of(last), summary_of(peak))
        out.append(ratio_decision(r, min(last.reps, peak.reps), f"{name}, {r.value:.2f}x at {xl}", hi=0.90))
    return verdict(out)


def p99_grows_faster(ctx: Analysis) -> Outcome:
    out = []
    for ln in _scaling(ctx, 2):
        a, b = ln.measured[0][1], ln.measured[-1][1]
        mean = ratio(b.latency(None, "mean"), a.latency(None, "mean"))
        p99 = ratio(b.latency(None, "p99"), a.latency(None, "p99"))
        if mean.value == mean.value and p99.value == p99.value:
            text = f"{ln.stack}: {ln.xs[0]}->{ln.xs[-1]} containers, p99 x{p99.value:.2f}, mean x{mean.value:.2f}"
            if p99.low is None or mean.low is None or p99.high is None or mean.high is None:
                out.append(Decision(None, text, "no interval: needs 2 or more repetitions (3 recommended)"))
            else:
                held = True if p99.low > mean.high else False if p99.high < mean.low else None
                out.append(
                    Decision(held, text, "" if held is not None else "the intervals overlap: needs more repetitions")
                )
    return verdict(out)


def _fs_rank(ctx: Analysis, workload_re: str, fs: str, best: bool = True) -> Outcome:
    """`fs` within 5% of the best other file system (best=True), or of the worst (best=False)."""
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
        lo, hi = (0.95, None) if best else (None, 1.05)
        out.append(ratio_decision(r, min(mine.reps, ref.reps), text, lo, hi))
    return verdict(out)


def ext4_best_file_mail(ctx: Analysis) -> Outcome:
    return _fs_rank(ctx, r"file.?server|varmail|mail", "ext4")


def xfs_worst_mail(ctx: Analysis) -> Outcome:
    return _fs_rank(ctx, r"varmail|mail", "xfs", best=False)


def btrfs_worst_fileserver(ctx: Analysis) -> Outcome:
    return _fs_rank(ctx, r"file.?server", "btrfs", best=False)


def volume_bind_similar(ctx: Analysis) -> Outcome:
    prs = pairs(
        select(ctx.cells, isolation="container", path="volume"),
        select(ctx.cells, isolation="container", path="bind"),
        also=("filesystem", "runtime"),
    )
    return changes(prs, lo=-0.10, hi=0.10)


def per_container_share(ctx: Analysis) -> Outcome:
    out = []
    for ln in _scaling(ctx, 2):
        one = dict(ln.measured).get(1)
        if one is None:
            continue
        for x, c in ln.measured[1:]:
            r = ratio(summary_of(c), summary_of(one))
            text = (
                f"{ln.stack} {c.labels['workload']}: {x} containers move {r.value:.2f}x one container's total "
                f"({fmt(summary_of(c).mean / x, c.unit)} each)"
            )
            out.append(ratio_decision(r, min(c.reps, one.reps), text, lo=0.8, hi=1.2))
    return verdict(out)


def container_near_native(ctx: Analysis) -> Outcome:
    prs = pairs(
        select(ctx.cells, baseline=True, path="bind"),
        [c for c in select(ctx.cells, isolation="container") if c.path in ("volume", "bind") and c.containers == 1],
        also=("filesystem",),
    )
    return changes(prs, lo=-0.05)


def containers_beat_vms(ctx: Analysis) -> Outcome:
    prs = pairs(
        select(ctx.cells, isolation="vm"), select(ctx.cells, isolation="container"), also=("filesystem", "path")
    )
    return changes([p for p in prs if not p[0].emulated], lo=0.10)


def _same_but_limits(c: Cell) -> tuple[object, ...]:
    ld = tuple(kv for kv in c.load_key if kv[0] != "limits")
    return (c.trial["device"]["name"], c.labels["filesystem"], c.labels["runtime"], c.path, c.workload_key, ld)


def remote_near_local(ctx: Analysis) -> Outcome:
    prs = [(a, b, None) for a, b in remote_pairs(ctx.cells)]
    return factors(prs, lambda a, b, r: f"{b.name}: {r.value:.2f}x {a.labels['device']} (direct-attached)", lo=0.88)


def remote_gap_closes(ctx: Analysis) -> Outcome:
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
        out.append(ratio_decision(r, n, f"{text}; high/low {r.value:.2f}", lo=1.0))
    return verdict(out)


def _limited(ctx: Analysis, key: str) -> Pairs:
    free = {_same_but_limits(c): c for c in ctx.cells if c.values and not _limits(c)}
    out = []
    for c in ctx.cells:
        lim = _limits(c)
        if c.values and set(lim) & ({key} if key == "memory" else {"read_bps", "write_bps"}):
            base = free.get(_same_but_limits(c))
            if base is not None:
                out.append((base, c, change(summary_of(base), summary_of(c))))
    return out


def _limits(c: Cell) -> dict[str, Any]:
    """The limits a cell ran with; a preset (003 Table 2) counts as the limits it sets."""
    lim = dict(c.load.get("limits") or {})
    preset = lim.pop("preset", None)
    lim.pop("share", None)
    out = {k: v for k, v in lim.items() if v is not None}
    for key in PRESET_LIMITS.get(preset or "none", ()):
        out.setdefault(key, preset)
    return out


def memory_limit_hurts(ctx: Analysis) -> Outcome:
    return changes(_limited(ctx, "memory"), hi=-0.20)


def bandwidth_limit_harmless(ctx: Analysis) -> Outcome:
    return changes(_limited(ctx, "bps"), lo=-0.10, hi=0.10)
