"""/proc/diskstats of the device under test and of the disk behind it.

Sectors in diskstats are always 512 bytes (Documentation/admin-guide/iostats.rst).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.collectors.sampler import deltas

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
)


def read_diskstats(names: list[str]) -> dict[str, dict[str, int]]:
    out = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) >= 14 and f[2] in names:
            out[f[2]] = dict(zip(FIELDS, map(int, f[3:14])))
    return out


class DiskstatsCollector:
    name = "diskstats"

    def __init__(self, ctx: CollectContext | None) -> None:
        self.names: list[str] = list(dict.fromkeys(ctx.diskstats)) if ctx else []
        self.samples: list[dict[str, Any]] = []
        self.times: list[float] = []

    def sample(self) -> dict[str, Any]:
        import time

        s = read_diskstats(self.names)
        self.samples.append(s)
        self.times.append(time.time())
        return s

    def series(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.names:
            rows = [s.get(name, {}) for s in self.samples]
            if not all(rows):
                continue

            def col(k: str, rows: list[dict[str, int]] = rows) -> list[int]:
                return [r[k] for r in rows]

            dt = deltas(self.times) or [1.0]
            io_ms = deltas(col("io_ms"))
            out[name] = {
                "read_ios": deltas(col("read_ios")),
                "write_ios": deltas(col("write_ios")),
                "read_bytes": [x * 512 for x in deltas(col("read_sectors"))],
                "write_bytes": [x * 512 for x in deltas(col("write_sectors"))],
                "util_percent": [min(100.0, 100.0 * ms / (1000 * t)) if t else 0.0 for ms, t in zip(io_ms, dt)],
                "in_flight": col("in_flight")[1:],
            }
        return out

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if len(self.samples) < 2:
            return out
        a, b = self.samples[0], self.samples[-1]
        span = (self.times[-1] - self.times[0]) or 1.0
        for name in self.names:
            if name in a and name in b:
                d = {k: b[name][k] - a[name][k] for k in FIELDS}
                out[name] = {
                    "read_ios": d["read_ios"],
                    "write_ios": d["write_ios"],
                    "read_bytes": d["read_sectors"] * 512,
                    "write_bytes": d["write_sectors"] * 512,
                    "util_percent": min(100.0, 100.0 * d["io_ms"] / (1000 * span)),
                    "span_s": round(span, 3),
                }
        return out
