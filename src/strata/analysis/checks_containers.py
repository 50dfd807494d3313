"""Checks of the seed studies' claims on containers: scaling and its peak (003 section 6.1, Figure 6),
cgroup limits (003 section 6.2, Figure 7a), remote storage (003 sections 5.4, 6.1), the backing file
system, volume and bind mount with 1 to 3 containers (004, Tables 2 to 5), containers against native
and VMs (001 section 4). For the registry in analysis/findings.py.
"""

from __future__ import annotations

from strata.analysis.query import by_context, fmt, pairs, select, within
from strata.analysis.stats import change
from strata.analysis.verdict import changes, factor, verdict


def _scaling(ctx, min_points=2):
    return [ln for s in ctx.sweeps if s.dim == "containers" for ln in s.lines if len(ln.measured) >= min_points]


def containers_peak(ctx):
    from strata.analysis.sweeps import peak

    items = []
    for ln in _scaling(ctx, 3):
        p = peak(ln)
        sig = "" if p.significant is None else (", significant" if p.significant else ", not significant")
        items.append(
            (
                p.falls_after,
                f"{ln.stack} {ln.points[0][1].labels['workload']}: peak {fmt(p.aggregate)} at "
                f"{p.x} containers"
                + (f", {p.drop:.0%} lower at {p.last_x}{sig}" if p.falls_after else f", not falling by {p.last_x}"),
            )
        )
    return verdict(items)


def p99_grows_faster(ctx):
    items = []
    for ln in _scaling(ctx, 2):
        a, b = ln.measured[0][1], ln.measured[-1][1]
        m = b.latency("lat", "mean").mean / a.latency("lat", "mean").mean if a.latency("lat", "mean").mean else None
        p = b.latency("lat", "p99").mean / a.latency("lat", "p99").mean if a.latency("lat", "p99").mean else None
        if m and p and m == m and p == p:
            items.append((p > m, f"{ln.stack}: {ln.xs[0]}->{ln.xs[-1]} containers, p99 x{p:.2f}, mean x{m:.2f}"))
    return verdict(items)


def _fs_rank(ctx, workload_re, fs, best=True):
    items = []
    for group in by_context(select(ctx.cells, workload_re=workload_re), also=("path", "containers")).values():
        by_fs = {}
        for c in group:
            if not c.mount_options:
                by_fs.setdefault(c.fs_type, c)
        if fs not in by_fs or len(by_fs) < 2:
            continue
        ranked = sorted(by_fs.values(), key=lambda c: c.summary.mean, reverse=best)
        top = ranked[0]
        tied = (
            by_fs[fs].summary.mean >= 0.95 * top.summary.mean
            if best
            else by_fs[fs].summary.mean <= 1.05 * top.summary.mean
        )
        order = " > ".join(f"{c.fs_type} {fmt(c.summary.mean, c.unit)}" for c in ranked)
        items.append((tied, f"{top.labels['workload']} {top.path} x{top.containers}: {order}"))
    return verdict(items)


def ext4_best_file_mail(ctx):
    return _fs_rank(ctx, r"file.?server|varmail|mail", "ext4")


def xfs_worst_mail(ctx):
    return _fs_rank(ctx, r"varmail|mail", "xfs", best=False)


def btrfs_worst_fileserver(ctx):
    return _fs_rank(ctx, r"file.?server", "btrfs", best=False)


def volume_bind_similar(ctx):
    prs = pairs(
        select(ctx.cells, runtime="docker", path="volume"),
        select(ctx.cells, runtime="docker", path="bind"),
        also=("filesystem", "runtime"),
    )
    return changes(prs, lambda ch: within(ch, 0.10))


def per_container_share(ctx):
    items = []
    for ln in _scaling(ctx, 2):
        one = dict(ln.measured).get(1)
        if one is None:
            continue
        for x, c in ln.measured[1:]:
            f = c.summary.mean / one.summary.mean
            items.append(
                (
                    0.8 <= f <= 1.2,
                    f"{ln.stack} {c.labels['workload']}: {x} containers move {f:.2f}x one "
                    f"container's total ({fmt(c.summary.mean / x, c.unit)} each)",
                )
            )
    return verdict(items)


def container_near_native(ctx):
    prs = pairs(
        select(ctx.cells, runtime="native", path="bind"),
        [c for c in select(ctx.cells, runtime="docker") if c.path in ("volume", "bind") and c.containers == 1],
        also=("filesystem",),
    )
    return changes(prs, lambda ch: ch.rel >= -0.05 or within(ch, 0.05))


def containers_beat_vms(ctx):
    prs = pairs(select(ctx.cells, runtime="vm"), select(ctx.cells, runtime="docker"), also=("filesystem", "path"))
    return changes(prs, lambda ch: ch.rel >= 0.10)


def _same_but(c, what: str):
    """What a cell ran, without the device (what="device") or without the cgroup limits (what="limits")."""
    ld = c.load_key if what == "device" else tuple(kv for kv in c.load_key if kv[0] != "limits")
    dev = None if what == "device" else c.trial["device"]["name"]
    return (dev, c.labels["filesystem"], c.labels["runtime"], c.path, c.workload_key, ld)


def remote_near_local(ctx):
    local = {_same_but(c, "device"): c for c in ctx.cells if c.values and not _is_remote(c)}
    items = []
    for c in ctx.cells:
        base = local.get(_same_but(c, "device")) if c.values and _is_remote(c) else None
        if base is not None:
            f = factor(base, c)
            items.append((f >= 0.88, f"{c.name}: {f:.2f}x {base.labels['device']} (direct-attached)"))
    return verdict(items)


def _is_remote(c) -> bool:
    return str(c.trial["device"].get("type", "")).startswith("remote")


def _limited(ctx, key: str):
    free = {_same_but(c, "limits"): c for c in ctx.cells if c.values and not _limits(c)}
    out = []
    for c in ctx.cells:
        lim = _limits(c)
        if c.values and set(lim) & ({key} if key == "memory" else {"read_bps", "write_bps"}):
            base = free.get(_same_but(c, "limits"))
            if base is not None:
                out.append((base, c, change(base.summary, c.summary)))
    return out


def _limits(c) -> dict:
    return {k: v for k, v in (c.load.get("limits") or {}).items() if v is not None}


def memory_limit_hurts(ctx):
    return changes(_limited(ctx, "memory"), lambda ch: ch.rel <= -0.20)


def bandwidth_limit_harmless(ctx):
    return changes(_limited(ctx, "bps"), lambda ch: within(ch, 0.10))
