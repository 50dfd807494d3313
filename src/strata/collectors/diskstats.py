"""/proc/diskstats of the device under test and of each disk below it, with each disk's write cache.

The fields after the device's name (Documentation/admin-guide/iostats.rst): 11 since Linux 2.6, then
4 of discards (4.18) and 2 of flush requests (5.5): completed, and the milliseconds spent on them. A
line gives as many as its kernel has; the flush and discard counts of a kernel without them are left
out, never read as zero (a missing flush count is not "no flush"). Sectors are always 512 bytes.

Each disk's `queue/write_cache` ("write back": the disk has a volatile cache that a flush empties;
"write through": a write is durable when it completes, and the block layer completes a flush at once
without sending or counting it) and `queue/fua` are read once, when the collector is built: the flush
rule (results/validity/flushes.py) judges a disk by them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from strata.collectors.sampler import column, deltas
from strata.core.jsondoc import JsonObject, JsonValue, arr, as_obj, obj

if TYPE_CHECKING:
    from strata.collectors.base import CollectContext

FIELDS = (
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ms",
    "in_flight",
    "io_ms",
    "weighted_ms",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ms",
    "flush_ios",
    "flush_ms",
)
CLASSIC = 11  # the fields every kernel since 2.6 has
SECTOR_BYTES = 512
# Counters of the totals and series: (stored name, diskstats field, scale), each kept only when the kernel has it.
COUNTERS = (
    ("read_ios", "read_ios", 1),
    ("write_ios", "write_ios", 1),
    ("read_bytes", "read_sectors", SECTOR_BYTES),
    ("write_bytes", "write_sectors", SECTOR_BYTES),
    ("write_merges", "write_merges", 1),
    ("discard_ios", "discard_ios", 1),
    ("discard_bytes", "discard_sectors", SECTOR_BYTES),
    ("flush_ios", "flush_ios", 1),
)
SYSFS_BLOCK = Path("/sys/class/block")


def parse_line(line: str) -> tuple[str, dict[str, int]] | None:
    """(name, {field: value}) of one /proc/diskstats line, with as many fields as the line has."""
    f = line.split()
    if len(f) < 3 + CLASSIC:
        return None
    try:
        return f[2], dict(zip(FIELDS, map(int, f[3 : 3 + len(FIELDS)])))
    except ValueError:
        return None


def read_diskstats(names: list[str], text: str | None = None) -> dict[str, dict[str, int]]:
    out = {}
    for line in (Path("/proc/diskstats").read_text() if text is None else text).splitlines():
        parsed = parse_line(line)
        if parsed is not None and parsed[0] in names:
            out[parsed[0]] = parsed[1]
    return out


def _local(path: str) -> str:
    return Path(path).read_text()


def queue_facts(
    name: str, sysfs: Path = SYSFS_BLOCK, read: Callable[[str], str] = _local
) -> dict[str, str | bool | None]:
    """A disk's `write_cache` ("write back", "write through") and `fua` (whether it takes writes with Force
    Unit Access) from sysfs; a partition's are its disk's (/sys/class/block/vda1 -> .../vda/vda1, its queue
    one level up). None where sysfs does not say."""
    out: dict[str, str | bool | None] = {"write_cache": None, "fua": None}
    for queue in (sysfs / name / "queue", sysfs / name / ".." / "queue"):
        try:
            out["write_cache"] = read(str(queue / "write_cache")).strip() or None
        except OSError:
            continue
        try:
            out["fua"] = read(str(queue / "fua")).strip() == "1"
        except OSError:
            pass
        break
    return out


def within(series: JsonObject, start_s: float, end_s: float) -> dict[str, dict[str, float]] | None:
    """Each disk's counters over [start_s, end_s] (wall clock) from the sampler's per-second series
    (`{"t": [...], "diskstats": {disk: {counter: [per interval]}}}`), each interval's count prorated by
    its overlap with the window: what the disks did while the workload measured, without its ramp or
    start-up. None when the samples cover less than half of the window (a clock the samples do not share)."""
    t = _numbers(arr(series, "t")) or []
    spans = [(max(a, start_s), min(b, end_s), b - a) for a, b in zip(t, t[1:])]
    covered = sum(max(0.0, hi - lo) for lo, hi, _ in spans)
    if end_s <= start_s or covered < 0.5 * (end_s - start_s):
        return None
    weights = [max(0.0, hi - lo) / dt if dt > 0 else 0.0 for lo, hi, dt in spans]
    out: dict[str, dict[str, float]] = {}
    for disk, per in obj(series, "diskstats").items():
        columns = {key: _numbers(as_obj(per, disk).get(key)) for key, _, _ in COUNTERS}
        out[disk] = {
            key: sum(w * v for w, v in zip(weights, col))
            for key, col in columns.items()
            if col is not None and len(col) == len(weights)
        }
    return out


def _numbers(v: JsonValue) -> list[float] | None:
    """A stored column of numbers, or None when `v` is not one."""
    if not isinstance(v, list):
        return None
    nums = [float(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return nums if len(nums) == len(v) else None


class DiskstatsCollector:
    name = "diskstats"

    def __init__(self, ctx: CollectContext | None, sysfs: Path = SYSFS_BLOCK) -> None:
        self.names: list[str] = list(dict.fromkeys(ctx.diskstats)) if ctx else []
        self.read = ctx.read if ctx else _local
        self.queues = {n: queue_facts(n, sysfs, self.read) for n in self.names}
        self.samples: list[dict[str, dict[str, int]]] = []  # per reading: disk -> its diskstats fields
        self.times: list[float] = []

    def sample(self) -> dict[str, dict[str, int]]:
        s = read_diskstats(self.names, self.read("/proc/diskstats"))
        self.samples.append(s)
        self.times.append(time.time())
        return s

    def series(self) -> JsonObject:
        out: JsonObject = {}
        for name in self.names:
            rows = [s.get(name, {}) for s in self.samples]
            if not all(rows):
                continue

            def col(k: str, rows: list[dict[str, int]] = rows) -> list[int]:
                return [r[k] for r in rows]

            dt = deltas(self.times) or [1.0]
            io_ms = deltas(col("io_ms"))
            per: JsonObject = {
                key: column(x * scale for x in deltas(col(f)))
                for key, f, scale in COUNTERS
                if all(f in r for r in rows)
            }
            out[name] = {
                **per,
                "util_percent": column(min(100.0, 100.0 * ms / (1000 * t)) if t else 0.0 for ms, t in zip(io_ms, dt)),
                "in_flight": column(col("in_flight")[1:]),
            }
        return out

    def summary(self) -> JsonObject:
        out: JsonObject = {}
        if len(self.samples) < 2:
            return out
        a, b = self.samples[0], self.samples[-1]
        span = (self.times[-1] - self.times[0]) or 1.0
        for name in self.names:
            if name in a and name in b:
                d = {k: b[name][k] - a[name][k] for k in FIELDS if k in a[name] and k in b[name]}
                out[name] = {
                    **{key: d[f] * scale for key, f, scale in COUNTERS if f in d},
                    "write_ms": d["write_ms"],
                    **({"flush_ms": d["flush_ms"]} if "flush_ms" in d else {}),
                    "util_percent": min(100.0, 100.0 * d["io_ms"] / (1000 * span)),
                    "span_s": round(span, 3),
                    **self.queues.get(name, {}),
                }
        return out
