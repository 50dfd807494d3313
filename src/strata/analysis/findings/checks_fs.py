"""Checks of study 003's claims on host file systems, storage drivers, volumes, caches and latency
(sections 5.1 to 5.5, Figures 3 and 4), for the registry in analysis/findings/findings.py.

Claims about throughput are checked at the highest load measured, single container, as the study
reports them ("unless otherwise indicated ... high load (32 jobs, 32 queue depth configured within the
fio tool)", section 5). Each is decided by the 95% interval of the compared quantity (analysis/findings/verdict.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.analysis.cells.baseline import ratio_to_raw, raw_of
from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import access_pattern, by_context, fmt, io_size, pairs, select, summary_of
from strata.analysis.cells.query import at_highest_load as high
from strata.analysis.decisions.criterion import Bound, at_least, at_most, below
from strata.analysis.decisions.stats import Change, Ratio, ratio
from strata.analysis.findings.verdict import (
    RANDOM,
    SMALL_BS,
    Compared,
    Decision,
    Outcome,
    between,
    changes,
    factors,
    ratio_decision,
    ratios,
    verdict,
)
from strata.analysis.measured.sweeps import Line, Point
from strata.core.params import JOBS
from strata.results.validity import MIN_ABOVE, min_share, shows_cache

if TYPE_CHECKING:
    from strata.analysis.measured.measurements import Measurements


# the study's fio jobs, as workload parameters (analysis/cells/query.py `select`)
RR, RW, RAND = ("randread",), ("randwrite",), RANDOM


def xfs_near_raw(ctx: Measurements) -> Outcome:
    cells = high(select(ctx.cells, fs="xfs", plain=True, baseline=True, patterns=("randread", "read", "write")))
    return ratios(ctx, cells, lo=at_least(0.90))


def ext4_rr_below_raw(ctx: Measurements) -> Outcome:
    cells = select(ctx.cells, fs="ext4", plain=True, baseline=True, patterns=RR)
    top = max((c.outstanding for c in cells), default=0)
    return ratios(ctx, [c for c in cells if c.outstanding == top and top > 1], hi=at_most(0.90))


def dioread_nolock(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, fs="ext4", plain=True, patterns=RR),
        high(select(ctx.cells, fs="ext4", option="dioread_nolock", patterns=RR)),
        also=("runtime", "path"),
    )
    return changes(prs, lo=at_least(0.10))


def _jobs_lines(ctx: Measurements, fs: str, rw: str = "randwrite") -> list[Line]:
    return [
        ln
        for s in ctx.sweeps
        if s.dim == JOBS
        for ln in s.lines
        if ln.points[0][1].fs_type == fs and not ln.points[0][1].mount_options and access_pattern(ln.points[0][1]) == rw
    ]


def _best(points: list[Point]) -> Cell | None:
    return max(points, key=lambda p: summary_of(p[1]).mean)[1] if points else None


def xfs_jobs_cliff(ctx: Measurements) -> Outcome:
    out = []
    for ln in _jobs_lines(ctx, "xfs"):
        lo, hi = _best([p for p in ln.measured if p[0] <= 24]), _best([p for p in ln.measured if p[0] > 24])
        if lo and hi:
            r = ratio(summary_of(hi), summary_of(lo))
            text = (
                f"{ln.stack}: best {fmt(summary_of(lo).mean)} up to 24 jobs, best {fmt(summary_of(hi).mean)} past 24 "
                f"({r.value:.2f}x)"
            )
            out.append(ratio_decision(r, min(lo.reps, hi.reps), text, hi=below(0.80), of=between((lo, hi))))
    return verdict(out)


def ext4_jobs_flat(ctx: Measurements) -> Outcome:
    out = []
    for ln in _jobs_lines(ctx, "ext4"):
        cells = [c for _, c in ln.measured]
        if len(cells) < 3:
            continue
        top, bottom = max(cells, key=lambda c: summary_of(c).mean), min(cells, key=lambda c: summary_of(c).mean)
        r = ratio(summary_of(bottom), summary_of(top))
        text = f"{ln.stack} over {ln.xs[0]}..{ln.xs[-1]} jobs: the lowest is {r.value:.2f}x the best"
        of = between((top, bottom))
        out.append(ratio_decision(r, min(top.reps, bottom.reps), text, lo=at_least(0.80), of=of))
    return verdict(out)


def btrfs_small_random(ctx: Measurements) -> Outcome:
    others = select(ctx.cells, fs="ext4", plain=True, baseline=True, patterns=RAND) + select(
        ctx.cells, fs="xfs", plain=True, baseline=True, patterns=RAND
    )
    btrfs = [
        c
        for c in high(select(ctx.cells, fs="btrfs", plain=True, baseline=True, patterns=RAND))
        if (io_size(c) or 0) <= SMALL_BS
    ]
    best: dict[str, tuple[Cell, Cell, Change]] = {}
    for b, o, ch in pairs(btrfs, others):
        if b.key not in best or summary_of(o).mean > summary_of(best[b.key][1]).mean:
            best[b.key] = (o, b, ch)
    return factors(
        list(best.values()), lambda o, b, r: f"{b.name}: {r.value:.2f}x {o.labels['filesystem']}", hi=below(0.80)
    )


def btrfs_rr_blocksize(ctx: Measurements) -> Outcome:
    out = []
    for s in ctx.sweeps:
        for ln in s.lines:
            c0 = ln.points[0][1]
            io = c0.schema.io
            if io is None or s.dim != io.size or c0.fs_type != "btrfs" or access_pattern(c0) != "randread":
                continue
            rs = [
                (x, c, r, raw)
                for x, c in ln.measured
                if (r := ratio_to_raw(c, ctx.raw)) and (raw := raw_of(c, ctx.raw))
            ]
            small = [(c, r, raw) for x, c, r, raw in rs if x <= 4096]
            big = [(c, r, raw) for x, c, r, raw in rs if x >= 32768]
            if small and big:
                (c4, r4, raw4), (cb, rb, rawb) = small[0], max(big, key=lambda t: t[1].value)
                text = f"{ln.stack}: {r4.value:.2f}x raw at 4 KiB, {rb.value:.2f}x raw at 32 KiB or more"
                out.append(_above(rb, r4, text, between((rawb, cb), (raw4, c4))))
    return verdict(out)


def _above(a: Ratio, b: Ratio, text: str, of: Compared) -> Decision:
    """a above b: decided when their intervals do not overlap."""
    if a.low is None or b.low is None or a.high is None or b.high is None:
        return Decision(None, text, "no interval: needs 2 or more repetitions of each side (3 recommended)", of)
    if a.low > b.high:
        return Decision(True, text, of=of)
    if a.high < b.low:
        return Decision(False, text, of=of)
    return Decision(None, text, "the intervals overlap: needs more repetitions", of)


def btrfs_nodatacow(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, fs="btrfs", plain=True, patterns=RW),
        high(select(ctx.cells, fs="btrfs", option="nodatacow", patterns=RW)),
        also=("runtime", "path"),
    )
    return factors(prs, lambda a, b, r: f"{b.name}: {r.value:.2f}x with copy-on-write", lo=at_least(2.0))


def overlay_layer_near_raw(ctx: Measurements) -> Outcome:
    """At the study's high load (Figures 3c and 3d, "Unless otherwise indicated"): a layer measured only
    at one I/O in flight is the setting of Figure 3i's anomaly, where aufs ran at 1/7 of loop-lvm's 1.4x."""
    cells = high(select(ctx.cells, isolation="container", drivers=("overlay2", "overlay", "aufs"), path="layer"))
    return ratios(ctx, [c for c in cells if c.outstanding > 1], lo=at_least(0.90))


def btrfs_driver_slow(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, drivers=("overlay2",), path="layer", patterns=RAND),
        high(select(ctx.cells, drivers=("btrfs",), path="layer", patterns=RAND)),
    )
    return factors(prs, lambda a, b, r: f"{b.name}: {r.value:.2f}x overlay2 ({a.labels['filesystem']})", hi=below(0.80))


def volume_near_host(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, baseline=True, path="bind"),
        select(ctx.cells, isolation="container", path="volume"),
        also=("filesystem",),
    )
    return changes(prs, lo=at_least(-0.05), hi=at_most(0.05))


def volume_driver_independent(ctx: Measurements) -> Outcome:
    out = []
    for group in by_context(select(ctx.cells, isolation="container", path="volume"), also=("filesystem",)).values():
        drivers = {c.driver for c in group}
        if len(drivers) >= 2:
            top, bottom = max(group, key=lambda c: summary_of(c).mean), min(group, key=lambda c: summary_of(c).mean)
            r = ratio(summary_of(top), summary_of(bottom))
            text = (
                f"{group[0].labels['workload']} {group[0].labels['load']} on {group[0].labels['filesystem']}: "
                f"{len(drivers)} drivers within {r.value - 1:.1%}"
            )
            of = between((bottom, top))
            out.append(ratio_decision(r, min(top.reps, bottom.reps), text, hi=at_most(1.05), of=of))
    return verdict(out)


def above_raw_is_cache(ctx: Measurements) -> Outcome:
    """Decided by the byte evidence, not by an interval: did the disk move the bytes? Without it (a cache
    check that did not run) nothing is decided."""
    out = []
    for c in ctx.cells:
        raw = raw_of(c, ctx.raw)
        vals = c.values + c.apart_values
        if raw is None or not vals or sum(vals) / len(vals) <= MIN_ABOVE * summary_of(raw).mean:
            continue
        f = sum(vals) / len(vals) / summary_of(raw).mean
        shares = [s for r in c.measured if (s := min_share(r.flags.cache)) is not None]
        if not shares:
            need = "no byte evidence: the cache check needs the diskstats of the layers below (direct I/O)"
            text = f"{c.name}: {f:.2f}x raw, the disk moved an unknown share of the bytes"
            out.append(Decision(None, text, need, between((raw, c))))
            continue
        out.append(
            Decision(
                shows_cache(shares),
                f"{c.name}: {f:.2f}x raw, the disk moved {min(shares):.0%} of the workload's bytes",
                of=between((raw, c)),
            )
        )
    return verdict(out)


def xfs_beats_ext4_rr(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, fs="ext4", plain=True, baseline=True, patterns=RR),
        high(select(ctx.cells, fs="xfs", plain=True, baseline=True, patterns=RR)),
        also=("path",),
    )
    return changes([p for p in prs if p[1].outstanding > 1], lo=at_least(-0.05))


def ext4_beats_xfs_rw(ctx: Measurements) -> Outcome:
    prs = pairs(
        select(ctx.cells, fs="xfs", plain=True, baseline=True, patterns=RW),
        select(ctx.cells, fs="ext4", plain=True, baseline=True, patterns=RW),
        also=("path",),
    )
    top = max((b.outstanding for _, b, _ in prs), default=0)
    return changes([p for p in prs if p[1].outstanding == top and top > 1], lo=at_least(-0.05))


def sequential_either_fs(ctx: Measurements) -> Outcome:
    cells = high(select(ctx.cells, plain=True, baseline=True, patterns=("read", "write")))
    return ratios(ctx, [c for c in cells if c.fs_type in ("ext4", "xfs")], lo=at_least(0.90))


def _lat_pairs(ctx: Measurements) -> list[tuple[Cell, Cell]]:
    """(low, high) cells of the same stack and random-read workload, lowest and highest load."""
    out = []
    groups: dict[tuple[object, ...], list[Cell]] = {}
    for c in select(ctx.cells, patterns=RR):
        groups.setdefault((c.stack, c.tag, c.workload_key), []).append(c)
    for k in sorted(groups, key=repr):
        g = sorted(groups[k], key=lambda c: c.outstanding)
        if len(g) >= 2 and g[0].outstanding < g[-1].outstanding:
            out.append((g[0], g[-1]))
    return out


def latency_high_load(ctx: Measurements) -> Outcome:
    out = []
    for lo, hi in _lat_pairs(ctx):
        a, b = lo.latency(None, "mean"), hi.latency(None, "mean")
        if a.n and b.n and a.mean and b.mean:
            r = ratio(b, a)
            text = (
                f"{hi.stack}: {r.value:.1f}x the low-load latency ({hi.outstanding} vs {lo.outstanding} I/Os in flight)"
            )
            out.append(ratio_decision(r, min(a.n, b.n), text, lo=at_least(5.0), of=between((lo, hi))))
    return verdict(out)


def _submission_share(cell: Cell, limit: Bound) -> Decision | None:
    """The part of the latency before the I/O is issued (the workload's `submission_latency`: the study's
    slat) as a share of the whole, against `limit`; None where the workload does not measure it apart."""
    part = cell.schema.submission_latency
    if part is None:
        return None
    s, t = cell.latency(part, "mean"), cell.latency(None, "mean")
    if not (s.n and t.n and s.mean == s.mean and t.mean):
        return None
    r = ratio(s, t) if s.mean > 0 else None
    if r is None:
        return Decision(True, f"{cell.name}: {part} 0% of the total", of=between((cell, cell)))
    return ratio_decision(
        r,
        min(s.n, t.n),
        f"{cell.name}: {part} {r.value:.2%} of the total",
        hi=limit,
        fmt="{:.2%}",
        of=between((cell, cell)),
    )


def device_part_dominates(ctx: Measurements) -> Outcome:
    """At low load, the device's part of the latency is most of it: the part before it is small."""
    return verdict([d for lo, _ in _lat_pairs(ctx) if (d := _submission_share(lo, below(0.20))) is not None])


def submission_small_high_load(ctx: Measurements) -> Outcome:
    return verdict([d for _, hi in _lat_pairs(ctx) if (d := _submission_share(hi, below(0.01))) is not None])
