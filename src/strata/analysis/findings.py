"""The claims of the seed studies, each a check over the user's results.

Every Finding quotes a claim from a study in shared/seeds/ with its source
(file, section, figure or table), states the criterion strata applies, and
checks it: held, not held, or not measured (the results hold nothing that the
claim speaks about), always with the numbers. The thresholds are looser than
the studies' own numbers on purpose: the studies ran NVMe SSDs, the user may
run a loop file; a claim holds when its direction and rough size hold.

FINDINGS is the registry: add a claim by adding one Finding to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from strata.analysis.baseline import ratio_to_raw
from strata.analysis.query import at_highest_load as high, by_context, fmt, pairs, select, within
from strata.analysis.stats import change

HELD, NOT_HELD, NOT_MEASURED = "held", "not held", "not measured"
S003 = "003_6ec55668d2ebf96e.txt"
S004 = "004_d6cbcac877c8d57b.txt"
S002 = "002_4d3057d923fd7aa3.txt"
S001 = "001_549dde7f754ae5b9.txt"
SMALL_BS = 16 * 1024
RANDOM = ("randread", "randwrite")


@dataclass
class Outcome:
    status: str
    numbers: list = field(default_factory=list)

    @property
    def detail(self) -> str:
        return "; ".join(self.numbers) if self.numbers else "nothing in these results speaks to it"


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    source: str
    criterion: str
    check: Callable


def _verdict(items: list[tuple[bool, str]]) -> Outcome:
    if not items:
        return Outcome(NOT_MEASURED)
    held = all(ok for ok, _ in items)
    return Outcome(HELD if held else NOT_HELD, [t if ok or len(items) == 1 else f"{t} (fails)" for ok, t in items])


def _ratios(ctx, cells, test) -> Outcome:
    items = []
    for c in cells:
        r = ratio_to_raw(c, ctx.raw)
        if r is not None:
            ci = f" [{r.low:.2f}, {r.high:.2f}]" if r.low is not None else " (n=1, no interval)"
            items.append((test(r.value), f"{c.name}: {r.value:.2f}x raw{ci}"))
    return _verdict(items)


def _changes(prs, test, what="") -> Outcome:
    return _verdict([(test(ch), f"{b.name} vs {a.labels['filesystem']}/{a.labels['runtime']}/{a.labels['path']}"
                      f"{what}: {ch.text()}") for a, b, ch in prs])


def _factor(a, b) -> float:
    return b.summary.mean / a.summary.mean if a.summary.mean else float("nan")


def xfs_near_raw(ctx):
    return _ratios(ctx, high(select(ctx.cells, fs="xfs", plain=True, runtime="native",
                                    rw=("randread", "read", "write"))), lambda r: r >= 0.90)


def ext4_rr_below_raw(ctx):
    cells = select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randread",))
    top = max((c.outstanding for c in cells), default=0)
    return _ratios(ctx, [c for c in cells if c.outstanding == top and top > 1], lambda r: r <= 0.90)


def dioread_nolock(ctx):
    prs = pairs(select(ctx.cells, fs="ext4", plain=True, rw=("randread",)),
                high(select(ctx.cells, fs="ext4", option="dioread_nolock", rw=("randread",))), also=("runtime", "path"))
    return _changes(prs, lambda ch: ch.rel >= 0.10)


def _jobs_lines(ctx, fs, rw="randwrite"):
    return [ln for s in ctx.sweeps if s.dim == "numjobs" for ln in s.lines
            if ln.points[0][1].fs_type == fs and not ln.points[0][1].mount_options and ln.points[0][1].rw == rw]


def xfs_jobs_cliff(ctx):
    items = []
    for ln in _jobs_lines(ctx, "xfs"):
        lo = [c.summary.mean for x, c in ln.measured if x <= 24]
        hi = [c.summary.mean for x, c in ln.measured if x > 24]
        if lo and hi:
            items.append((max(hi) < 0.8 * max(lo), f"{ln.stack}: best {fmt(max(lo))} up to 24 jobs, "
                          f"best {fmt(max(hi))} past 24 ({max(hi) / max(lo):.2f}x)"))
    return _verdict(items)


def ext4_jobs_flat(ctx):
    items = []
    for ln in _jobs_lines(ctx, "ext4"):
        vals = [c.summary.mean for _, c in ln.measured]
        if len(vals) < 3:
            continue
        spread = (max(vals) - min(vals)) / max(vals)
        items.append((spread <= 0.20, f"{ln.stack} over {ln.xs[0]}..{ln.xs[-1]} jobs: spread {spread:.0%} of the best"))
    return _verdict(items)


def btrfs_small_random(ctx):
    others = select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=RANDOM) + \
        select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=RANDOM)
    btrfs = [c for c in high(select(ctx.cells, fs="btrfs", plain=True, runtime="native", rw=RANDOM))
             if (c.workload.get("bs") or 0) <= SMALL_BS]
    items, best = [], {}
    for b, o, _ in pairs(btrfs, others):
        if b.key not in best or o.summary.mean > best[b.key][1].summary.mean:
            best[b.key] = (b, o)
    for b, o in best.values():
        f = _factor(o, b)
        items.append((f < 0.80, f"{b.name}: {f:.2f}x {o.labels['filesystem']}"))
    return _verdict(items)


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
                items.append((max(big) > small[0], f"{ln.stack}: {small[0]:.2f}x raw at 4 KiB, "
                              f"{max(big):.2f}x raw at 32 KiB or more"))
    return _verdict(items)


def btrfs_nodatacow(ctx):
    prs = pairs(select(ctx.cells, fs="btrfs", plain=True, rw=("randwrite",)),
                high(select(ctx.cells, fs="btrfs", option="nodatacow", rw=("randwrite",))), also=("runtime", "path"))
    return _verdict([(_factor(a, b) >= 2.0, f"{b.name}: {_factor(a, b):.2f}x with copy-on-write ({ch.text()})")
                     for a, b, ch in prs])


def overlay_layer_near_raw(ctx):
    return _ratios(ctx, high(select(ctx.cells, runtime="docker", drivers=("overlay2", "overlay", "aufs"),
                                    path="layer")), lambda r: r >= 0.90)


def btrfs_driver_slow(ctx):
    prs = pairs(select(ctx.cells, drivers=("overlay2",), path="layer", rw=RANDOM),
                high(select(ctx.cells, drivers=("btrfs",), path="layer", rw=RANDOM)))
    return _verdict([(_factor(a, b) < 0.80, f"{b.name}: {_factor(a, b):.2f}x overlay2 ({a.labels['filesystem']})")
                     for a, b, _ in prs])


def devicemapper_slow(ctx):
    prs = pairs(select(ctx.cells, drivers=("overlay2",), path="layer"),
                select(ctx.cells, drivers=("devicemapper",), path="layer"))
    return _verdict([(_factor(a, b) < 0.90, f"{b.name}: {_factor(a, b):.2f}x overlay2") for a, b, _ in prs])


def volume_near_host(ctx):
    prs = pairs(select(ctx.cells, runtime="native", path="bind"), select(ctx.cells, runtime="docker", path="volume"),
                also=("filesystem",))
    return _changes(prs, lambda ch: within(ch, 0.05))


def volume_driver_independent(ctx):
    items = []
    for group in by_context(select(ctx.cells, runtime="docker", path="volume"), also=("filesystem",)).values():
        drivers = {c.driver for c in group}
        if len(drivers) >= 2:
            vals = [c.summary.mean for c in group]
            f = max(vals) / min(vals)
            items.append((f <= 1.05, f"{group[0].labels['workload']} {group[0].labels['load']} on "
                          f"{group[0].labels['filesystem']}: {len(drivers)} drivers within {f - 1:.1%}"))
    return _verdict(items)


def above_raw_is_cache(ctx):
    from strata.analysis.baseline import raw_of
    from strata.analysis.validity import MIN_DEVICE_SHARE
    items = []
    for c in ctx.cells:
        raw = raw_of(c, ctx.raw)
        vals = c.values + c.cached_values
        if raw is None or not vals or sum(vals) / len(vals) <= 1.10 * raw.summary.mean:
            continue
        f = sum(vals) / len(vals) / raw.summary.mean
        shares = [v for r in c.ok + c.cached for k, v in
                  (((r.get("flags") or {}).get("cache") or {}).get("evidence") or {}).items() if k.endswith("_disk_share")]
        confirmed = bool(shares) and min(shares) < MIN_DEVICE_SHARE
        items.append((confirmed, f"{c.name}: {f:.2f}x raw, the disk moved "
                      + (f"{min(shares):.0%} of the workload's bytes" if shares else "an unknown share of the bytes")))
    return _verdict(items)


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
            items.append((b / a >= 5, f"{hi.stack}: {b / a:.1f}x the low-load latency "
                          f"({hi.outstanding} vs {lo.outstanding} I/Os in flight)"))
    return _verdict(items)


def clat_dominates(ctx):
    items = []
    for lo, _ in _lat_pairs(ctx):
        s, t = lo.latency("slat", "mean").mean, lo.latency("lat", "mean").mean
        if s == s and t:
            items.append((s / t < 0.20, f"{lo.name}: slat {s / t:.1%} of the total"))
    return _verdict(items)


def slat_small_high_load(ctx):
    items = []
    for _, hi in _lat_pairs(ctx):
        s, t = hi.latency("slat", "mean").mean, hi.latency("lat", "mean").mean
        if s == s and t:
            items.append((s / t < 0.01, f"{hi.name}: slat {s / t:.2%} of the total"))
    return _verdict(items)


def _scaling(ctx, min_points=2):
    return [ln for s in ctx.sweeps if s.dim == "containers" for ln in s.lines if len(ln.measured) >= min_points]


def containers_peak(ctx):
    from strata.analysis.sweeps import peak
    items = []
    for ln in _scaling(ctx, 3):
        p = peak(ln)
        sig = "" if p.significant is None else (", significant" if p.significant else ", not significant")
        items.append((p.falls_after, f"{ln.stack} {ln.points[0][1].labels['workload']}: peak {fmt(p.aggregate)} at "
                      f"{p.x} containers" + (f", {p.drop:.0%} lower at {p.last_x}{sig}" if p.falls_after
                                             else f", not falling by {p.last_x}")))
    return _verdict(items)


def p99_grows_faster(ctx):
    items = []
    for ln in _scaling(ctx, 2):
        a, b = ln.measured[0][1], ln.measured[-1][1]
        m = b.latency("lat", "mean").mean / a.latency("lat", "mean").mean if a.latency("lat", "mean").mean else None
        p = b.latency("lat", "p99").mean / a.latency("lat", "p99").mean if a.latency("lat", "p99").mean else None
        if m and p and m == m and p == p:
            items.append((p > m, f"{ln.stack}: {ln.xs[0]}->{ln.xs[-1]} containers, p99 x{p:.2f}, mean x{m:.2f}"))
    return _verdict(items)


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
        tied = by_fs[fs].summary.mean >= 0.95 * top.summary.mean if best else \
            by_fs[fs].summary.mean <= 1.05 * top.summary.mean
        order = " > ".join(f"{c.fs_type} {fmt(c.summary.mean, c.unit)}" for c in ranked)
        items.append((tied, f"{top.labels['workload']} {top.path} x{top.containers}: {order}"))
    return _verdict(items)


def ext4_best_file_mail(ctx):
    return _fs_rank(ctx, r"file.?server|varmail|mail", "ext4")


def xfs_worst_mail(ctx):
    return _fs_rank(ctx, r"varmail|mail", "xfs", best=False)


def btrfs_worst_fileserver(ctx):
    return _fs_rank(ctx, r"file.?server", "btrfs", best=False)


def volume_bind_similar(ctx):
    prs = pairs(select(ctx.cells, runtime="docker", path="volume"), select(ctx.cells, runtime="docker", path="bind"),
                also=("filesystem", "runtime"))
    return _changes(prs, lambda ch: within(ch, 0.10))


def per_container_share(ctx):
    items = []
    for ln in _scaling(ctx, 2):
        one = dict(ln.measured).get(1)
        if one is None:
            continue
        for x, c in ln.measured[1:]:
            f = c.summary.mean / one.summary.mean
            items.append((0.8 <= f <= 1.2, f"{ln.stack} {c.labels['workload']}: {x} containers move {f:.2f}x one "
                          f"container's total ({fmt(c.summary.mean / x, c.unit)} each)"))
    return _verdict(items)


def container_near_native(ctx):
    prs = pairs(select(ctx.cells, runtime="native", path="bind"),
                [c for c in select(ctx.cells, runtime="docker") if c.path in ("volume", "bind") and c.containers == 1],
                also=("filesystem",))
    return _changes(prs, lambda ch: ch.rel >= -0.05 or within(ch, 0.05))


def containers_beat_vms(ctx):
    prs = pairs(select(ctx.cells, runtime="vm"), select(ctx.cells, runtime="docker"), also=("filesystem", "path"))
    return _changes(prs, lambda ch: ch.rel >= 0.10)


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
            f = _factor(base, c)
            items.append((f >= 0.88, f"{c.name}: {f:.2f}x {base.labels['device']} (direct-attached)"))
    return _verdict(items)


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
    return _changes(_limited(ctx, "memory"), lambda ch: ch.rel <= -0.20)


def bandwidth_limit_harmless(ctx):
    return _changes(_limited(ctx, "bps"), lambda ch: within(ch, 0.10))


def xfs_beats_ext4_rr(ctx):
    prs = pairs(select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randread",)),
                high(select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=("randread",))), also=("path",))
    return _changes([p for p in prs if p[1].outstanding > 1], lambda ch: ch.rel >= -0.05)


def ext4_beats_xfs_rw(ctx):
    prs = pairs(select(ctx.cells, fs="xfs", plain=True, runtime="native", rw=("randwrite",)),
                select(ctx.cells, fs="ext4", plain=True, runtime="native", rw=("randwrite",)), also=("path",))
    top = max((b.outstanding for _, b, _ in prs), default=0)
    return _changes([p for p in prs if p[1].outstanding == top and top > 1],
                    lambda ch: ch.rel >= -0.05)


def sequential_either_fs(ctx):
    cells = high(select(ctx.cells, plain=True, runtime="native", rw=("read", "write")))
    return _ratios(ctx, [c for c in cells if c.fs_type in ("ext4", "xfs")], lambda r: r >= 0.90)


F = Finding
FINDINGS: list[Finding] = [
    F("xfs-near-raw", "File I/O on xfs closely resembles the raw block device for random and sequential "
      "workloads, except purely random writes.", f"{S003} section 5.1, Figures 3a-3b",
      "xfs (no mount options) at >= 0.90x raw for random read, sequential read and write", xfs_near_raw),
    F("ext4-rr-below-raw", "ext4 random reads under high load run ~25% below the raw block device.",
      f"{S003} section 5.1", "ext4 random read at the highest load <= 0.90x raw", ext4_rr_below_raw),
    F("ext4-dioread-nolock", "ext4 mounted with dioread_nolock reads randomly ~25% faster.",
      f"{S003} section 5.1, Figure 3f", "ext4,dioread_nolock random read at the highest load >= +10% over ext4",
      dioread_nolock),
    F("xfs-jobs-cliff", "xfs random write IOPS fall off a cliff past 24 parallel jobs.",
      f"{S003} section 5.1, Figure 3e", "best xfs random-write IOPS past 24 jobs < 0.80x the best up to 24",
      xfs_jobs_cliff),
    F("ext4-jobs-flat", "ext4 random write IOPS stay about the same regardless of the number of jobs.",
      f"{S003} section 5.1, Figure 3e", "ext4 random-write IOPS over a jobs sweep within 20% of the best",
      ext4_jobs_flat),
    F("xfs-for-random-reads", "If a workload is random-read intensive, xfs is the better host file system.",
      f"{S003} section 5.1", "xfs random read at the highest load >= 0.95x ext4", xfs_beats_ext4_rr),
    F("ext4-for-concurrent-writes", "With many concurrent random writes, ext4 avoids xfs's write lock contention.",
      f"{S003} section 5.1", "ext4 random write at the highest load >= 0.95x xfs",
      ext4_beats_xfs_rw),
    F("sequential-either-fs", "For sequential workloads either xfs or ext4 works well.", f"{S003} section 5.1",
      "ext4 and xfs sequential read/write >= 0.90x raw", sequential_either_fs),
    F("btrfs-small-random", "btrfs performs much worse than the other options for small random reads and writes.",
      f"{S003} section 5.2, Figures 3c, 3d, 3g", "btrfs random I/O at <= 16 KiB < 0.80x the better of ext4/xfs",
      btrfs_small_random),
    F("btrfs-rr-blocksize", "btrfs achieves its best random read performance once blocks reach 32 KiB.",
      f"{S003} section 5.2, Figure 3g", "btrfs random-read ratio to raw at >= 32 KiB above the one at 4 KiB",
      btrfs_rr_blocksize),
    F("btrfs-nodatacow", "Without copy-on-write, btrfs random write performance increases 5x.",
      f"{S003} section 5.2, Figure 3h; {S002} section III-A", "btrfs,nodatacow random write >= 2x btrfs",
      btrfs_nodatacow),
    F("overlay-layer-near-raw", "aufs and overlay drivers achieve performance similar to the raw block device.",
      f"{S003} section 5.2, Figures 3c-3d; {S002} section III-A", "overlay2/aufs writable layer >= 0.90x raw",
      overlay_layer_near_raw),
    F("btrfs-driver-slow", "The btrfs storage driver performs much worse than the others for random workloads.",
      f"{S003} section 5.2, Figures 3c-3d", "docker:btrfs layer random I/O < 0.80x docker:overlay2 layer",
      btrfs_driver_slow),
    F("devicemapper-slow", "direct-lvm (devicemapper) adds code paths unsuited to I/O intensive applications.",
      f"{S003} section 5.3; {S002} section III-B", "docker:devicemapper layer < 0.90x docker:overlay2 layer",
      devicemapper_slow),
    F("volume-near-host-fs", "Data volumes match the host file system's throughput.",
      f"{S003} section 5.3, Figures 3k-3l; {S002} section III-B", "docker volume within 5% of native on the same "
      "file system (or its 95% interval reaches within 5%)", volume_near_host),
    F("volume-driver-independent", "Data volume performance is independent of the storage driver.",
      f"{S003} section 5.3", "volumes under >= 2 storage drivers within 5% of each other", volume_driver_independent),
    F("above-raw-is-cache", "A result above the raw device means a cache answered (loop-lvm: 1.4x raw, "
      "O_DIRECT not respected).", f"{S003} sections 5.2 and 5.5, Figures 3i-3j",
      "every configuration above 1.10x raw (device and cache-flagged trials together) has "
      "diskstats showing the disk moved < 50% of the workload's bytes",
      above_raw_is_cache),
    F("latency-high-load", "Under high load queueing makes latency ~20x longer than under low load.",
      f"{S003} section 5.5, Figure 4", "random-read total latency at the highest load >= 5x the lowest load",
      latency_high_load),
    F("clat-dominates", "clat takes up most of the I/O latency; slat is a small portion under low load.",
      f"{S003} section 5.5, Figure 4a", "low-load slat < 20% of total latency", clat_dominates),
    F("slat-negligible-high-load", "Under high load the application overhead slat is less than 1%.",
      f"{S003} section 5.5, Figure 4b", "high-load slat < 1% of total latency", slat_small_high_load),
    F("containers-peak", "Aggregate throughput rises with containers, peaks (about four) and then falls.",
      f"{S003} section 6.1, Figure 6a", "over >= 3 container counts, the peak is inside and the last count is >= 10% below it",
      containers_peak),
    F("p99-grows-faster", "With more containers, p99 latency grows much faster than the mean.",
      f"{S003} sections 6.1 and 7, Figure 6b", "p99 growth factor > mean growth factor over the container sweep",
      p99_grows_faster),
    F("per-container-share", "N containers share one device: MB/s per container falls about as 1/N.",
      f"{S004} section 4, Tables 2-5", "aggregate of N containers within 20% of one container's", per_container_share),
    F("ext4-best-file-mail", "ext4 is the best backing file system for the file server and mail workloads.",
      f"{S004} section 4, Tables 3-4 and section 5", "ext4 MB/s >= 0.95x the best file system, per workload/path/containers",
      ext4_best_file_mail),
    F("xfs-worst-mail", "xfs is not suitable for workloads dominated by synchronous random writes (mail).",
      f"{S004} section 4, Table 3 and section 5", "xfs MB/s <= 1.05x the worst file system for mail", xfs_worst_mail),
    F("btrfs-worst-fileserver", "btrfs is not suitable for random and sequential write workloads (file server).",
      f"{S004} section 4, Table 4 and section 5", "btrfs MB/s <= 1.05x the worst file system for the file server",
      btrfs_worst_fileserver),
    F("volume-bind-similar", "Docker volumes and bind mounts perform similarly.",
      f"{S004} section 4, Tables 2-5", "volume within 10% of bind mount on the same file system (or its interval reaches within)", volume_bind_similar),
    F("container-near-native", "A container on a volume or bind mount reaches native throughput.",
      f"{S001} section 4.1, Table 2; {S002} section IV", "container >= 0.95x native on the same file system (or its interval reaches it)",
      container_near_native),
    F("containers-beat-vms", "Containers reach about 30% more throughput than VMs (mixed load; 20-25% write, "
      "over 40% read).", f"{S001} section 4, Figure 1", "container >= 1.10x the VM on the same file system and path",
      containers_beat_vms),
    F("remote-near-local", "Remote NVMe over Fabrics storage reaches within 6-12% of direct-attached storage.",
      f"{S003} sections 5.4 and 6.1, Figure 6a", "remote device >= 0.88x the direct-attached one, all else equal",
      remote_near_local),
    F("memory-limit-hurts", "A per-container memory limit cuts aggregate throughput (MEM: -47% at 4 containers).",
      f"{S003} section 6.2, Figure 7a, Table 2", "with a memory limit, throughput >= 20% below the unlimited run",
      memory_limit_hurts),
    F("bandwidth-limit-harmless", "A per-container disk bandwidth limit barely changes aggregate throughput.",
      f"{S003} section 6.2, Figure 7a", "with a bps limit, within 10% of the unlimited run (or its interval reaches)",
      bandwidth_limit_harmless),
]


def evaluate(ctx) -> list[tuple[Finding, Outcome]]:
    return [(f, f.check(ctx)) for f in FINDINGS]
