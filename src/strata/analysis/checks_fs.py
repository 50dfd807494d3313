"""Checks of seed study 003's claims on host file systems, storage drivers, volumes, caches and latency
(sections 5.1 to 5.5, Figures 3 and 4), for the registry in analysis/findings.py.

Claims about throughput are checked at the highest load measured, single container, as the study
reports them ("unless otherwise indicated ... high load (32 jobs, 32 queue depth)", section 5).
"""

from __future__ import annotations

from strata.analysis.baseline import ratio_to_raw
from strata.analysis.query import at_highest_load as high
from strata.analysis.query import by_context, fmt, pairs, select, within
from strata.analysis.verdict import RANDOM, SMALL_BS, changes, factor, ratios, verdict


def xfs_near_raw(ctx):
    return ratios(
        ctx,
        high(select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=("randread", "read", "write"))),
        lambda r: r >= 0.90,
    )


def ext4_rr_below_raw(ctx):
    cells = select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randread",))
    top = max((c.outstanding for c in cells), default=0)
    return ratios(ctx, [c for c in cells if c.outstanding == top and top > 1], lambda r: r <= 0.90)


def dioread_nolock(ctx):
    prs = pairs(
        select(ctx.cells, fs="ext4", plain=True, rw=("randread",)),
        high(select(ctx.cells, fs="ext4", option="dioread_nolock", rw=("randread",))),
        also=("runtime", "path"),
    )
    return changes(prs, lambda ch: ch.rel >= 0.10)


def _jobs_lines(ctx, fs, rw="randwrite"):
    return [
        ln
        for s in ctx.sweeps
        if s.dim == "numjobs"
        for ln in s.lines
        if ln.points[0][1].fs_type == fs and not ln.points[0][1].mount_options and ln.points[0][1].rw == rw
    ]


def xfs_jobs_cliff(ctx):
    items = []
    for ln in _jobs_lines(ctx, "xfs"):
        lo = [c.summary.mean for x, c in ln.measured if x <= 24]
        hi = [c.summary.mean for x, c in ln.measured if x > 24]
        if lo and hi:
            items.append(
                (
                    max(hi) < 0.8 * max(lo),
                    f"{ln.stack}: best {fmt(max(lo))} up to 24 jobs, "
                    f"best {fmt(max(hi))} past 24 ({max(hi) / max(lo):.2f}x)",
                )
            )
    return verdict(items)


def ext4_jobs_flat(ctx):
    items = []
    for ln in _jobs_lines(ctx, "ext4"):
        vals = [c.summary.mean for _, c in ln.measured]
        if len(vals) < 3:
            continue
        spread = (max(vals) - min(vals)) / max(vals)
        items.append((spread <= 0.20, f"{ln.stack} over {ln.xs[0]}..{ln.xs[-1]} jobs: spread {spread:.0%} of the best"))
    return verdict(items)


def btrfs_small_random(ctx):
    others = select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=RANDOM) + select(
        ctx.cells, fs="xfs", plain=True, runtime="native", rw=RANDOM
    )
    btrfs = [
        c
        for c in high(select(ctx.cells, fs="btrfs", plain=True, runtime="native", rw=RANDOM))
        if (c.workload.get("bs") or 0) <= SMALL_BS
    ]
    items, best = [], {}
    for b, o, _ in pairs(btrfs, others):
        if b.key not in best or o.summary.mean > best[b.key][1].summary.mean:
            best[b.key] = (b, o)
    for b, o in best.values():
        f = factor(o, b)
        items.append((f < 0.80, f"{b.name}: {f:.2f}x {o.labels['filesystem']}"))
    return verdict(items)


def btrfs_rr_blocksize(ctx):
    items = []
    for s in ctx.sweeps:
        if s.dim != "bs":
            continue
        for ln in s.lines:
            c0 = ln.points[0][1]
            if c0.fs_type != "btrfs" or c0.rw != "randread":
                continue
            rs = [(x, ratio_to_raw(c, ctx.raw)) for x, c in ln.measured]
            rs = [(x, r.value) for x, r in rs if r is not None]
            small = [v for x, v in rs if x <= 4096]
            big = [v for x, v in rs if x >= 32768]
            if small and big:
                items.append(
                    (
                        max(big) > small[0],
                        f"{ln.stack}: {small[0]:.2f}x raw at 4 KiB, {max(big):.2f}x raw at 32 KiB or more",
                    )
                )
    return verdict(items)


def btrfs_nodatacow(ctx):
    prs = pairs(
        select(ctx.cells, fs="btrfs", plain=True, rw=("randwrite",)),
        high(select(ctx.cells, fs="btrfs", option="nodatacow", rw=("randwrite",))),
        also=("runtime", "path"),
    )
    return verdict(
        [(factor(a, b) >= 2.0, f"{b.name}: {factor(a, b):.2f}x with copy-on-write ({ch.text()})") for a, b, ch in prs]
    )


def overlay_layer_near_raw(ctx):
    return ratios(
        ctx,
        high(select(ctx.cells, runtime="docker", drivers=("overlay2", "overlay", "aufs"), path="layer")),
        lambda r: r >= 0.90,
    )


def btrfs_driver_slow(ctx):
    prs = pairs(
        select(ctx.cells, drivers=("overlay2",), path="layer", rw=RANDOM),
        high(select(ctx.cells, drivers=("btrfs",), path="layer", rw=RANDOM)),
    )
    return verdict(
        [(factor(a, b) < 0.80, f"{b.name}: {factor(a, b):.2f}x overlay2 ({a.labels['filesystem']})") for a, b, _ in prs]
    )


def devicemapper_slow(ctx):
    prs = pairs(
        select(ctx.cells, drivers=("overlay2",), path="layer"),
        select(ctx.cells, drivers=("devicemapper",), path="layer"),
    )
    return verdict([(factor(a, b) < 0.90, f"{b.name}: {factor(a, b):.2f}x overlay2") for a, b, _ in prs])


def volume_near_host(ctx):
    prs = pairs(
        select(ctx.cells, runtime="native", path="bind"),
        select(ctx.cells, runtime="docker", path="volume"),
        also=("filesystem",),
    )
    return changes(prs, lambda ch: within(ch, 0.05))


def volume_driver_independent(ctx):
    items = []
    for group in by_context(select(ctx.cells, runtime="docker", path="volume"), also=("filesystem",)).values():
        drivers = {c.driver for c in group}
        if len(drivers) >= 2:
            vals = [c.summary.mean for c in group]
            f = max(vals) / min(vals)
            items.append(
                (
                    f <= 1.05,
                    f"{group[0].labels['workload']} {group[0].labels['load']} on "
                    f"{group[0].labels['filesystem']}: {len(drivers)} drivers within {f - 1:.1%}",
                )
            )
    return verdict(items)


def above_raw_is_cache(ctx):
    from strata.analysis.baseline import raw_of
    from strata.validity import MIN_DEVICE_SHARE, min_share

    items = []
    for c in ctx.cells:
        raw = raw_of(c, ctx.raw)
        vals = c.values + c.cached_values
        if raw is None or not vals or sum(vals) / len(vals) <= 1.10 * raw.summary.mean:
            continue
        f = sum(vals) / len(vals) / raw.summary.mean
        shares = [s for r in c.ok + c.cached if (s := min_share((r.get("flags") or {}).get("cache"))) is not None]
        confirmed = bool(shares) and min(shares) < MIN_DEVICE_SHARE
        items.append(
            (
                confirmed,
                f"{c.name}: {f:.2f}x raw, the disk moved "
                + (f"{min(shares):.0%} of the workload's bytes" if shares else "an unknown share of the bytes"),
            )
        )
    return verdict(items)


def xfs_beats_ext4_rr(ctx):
    prs = pairs(
        select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randread",)),
        high(select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=("randread",))),
        also=("path",),
    )
    return changes([p for p in prs if p[1].outstanding > 1], lambda ch: ch.rel >= -0.05)


def ext4_beats_xfs_rw(ctx):
    prs = pairs(
        select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=("randwrite",)),
        select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randwrite",)),
        also=("path",),
    )
    top = max((b.outstanding for _, b, _ in prs), default=0)
    return changes([p for p in prs if p[1].outstanding == top and top > 1], lambda ch: ch.rel >= -0.05)


def sequential_either_fs(ctx):
    cells = high(select(ctx.cells, plain=True, runtime="native", rw=("read", "write")))
    return ratios(ctx, [c for c in cells if c.fs_type in ("ext4", "xfs")], lambda r: r >= 0.90)


def _lat_pairs(ctx):
    """(low, high) cells of the same stack and random-read workload, lowest and highest load."""
    out = []
    groups = {}
    for c in select(ctx.cells, rw=("randread",)):
        groups.setdefault((c.stack, c.tag, c.workload_key), []).append(c)
    for k in sorted(groups, key=repr):
        g = sorted(groups[k], key=lambda c: c.outstanding)
        if len(g) >= 2 and g[0].outstanding < g[-1].outstanding:
            out.append((g[0], g[-1]))
    return out


def latency_high_load(ctx):
    items = []
    for lo, hi in _lat_pairs(ctx):
        a, b = lo.latency("lat", "mean").mean, hi.latency("lat", "mean").mean
        if a and b:
            items.append(
                (
                    b / a >= 5,
                    f"{hi.stack}: {b / a:.1f}x the low-load latency "
                    f"({hi.outstanding} vs {lo.outstanding} I/Os in flight)",
                )
            )
    return verdict(items)


def clat_dominates(ctx):
    items = []
    for lo, _ in _lat_pairs(ctx):
        s, t = lo.latency("slat", "mean").mean, lo.latency("lat", "mean").mean
        if s == s and t:
            items.append((s / t < 0.20, f"{lo.name}: slat {s / t:.1%} of the total"))
    return verdict(items)


def slat_small_high_load(ctx):
    items = []
    for _, hi in _lat_pairs(ctx):
        s, t = hi.latency("slat", "mean").mean, hi.latency("lat", "mean").mean
        if s == s and t:
            items.append((s / t < 0.01, f"{hi.name}: slat {s / t:.2%} of the total"))
    return verdict(items)
