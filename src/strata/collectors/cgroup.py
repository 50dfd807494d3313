"""Each container's cgroup v1 counters (cpu, memory, blkio), sampled from the host.

blkio is the container's own view of its I/O: bytes read, written and discarded on each device
(`blkio.throttle.io_service_bytes`); cgroup v1 counts no flushes (the disks' are in diskstats.py).

A container's cgroup directory disappears when it exits, so the runtime also
leaves the final counters in the instance's out dir (cgroup-final.txt); the
series here ends at the last sample taken while it ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from strata.collectors.sampler import column, deltas
from strata.core.jsondoc import JsonObject

if TYPE_CHECKING:
    from strata.collectors.base import CollectContext


def _local(path: str) -> str:
    return Path(path).read_text()


def _read_int(path: Path, read: Callable[[str], str] = _local) -> int | None:
    try:
        return int(read(str(path)).strip())
    except (OSError, ValueError):
        return None


BLKIO_OPS = ("Read", "Write", "Discard")  # blkio.throttle.io_service_bytes's lines a container's I/O is summed from


def blkio_bytes(lines: list[str]) -> dict[str, int]:
    """{"read_bytes", "write_bytes", "discard_bytes"} summed over the devices of io_service_bytes's lines."""
    out = {f"{op.lower()}_bytes": 0 for op in BLKIO_OPS}
    for line in lines:
        f = line.split()
        if len(f) == 3 and f[1] in BLKIO_OPS and f[2].isdigit():
            out[f"{f[1].lower()}_bytes"] += int(f[2])
    return out


def read_blkio(path: Path, read: Callable[[str], str] = _local) -> dict[str, int]:
    try:
        return blkio_bytes(read(str(path)).splitlines())
    except OSError:
        return blkio_bytes([])


class CgroupCollector:
    name = "cgroups"

    def __init__(self, ctx: CollectContext | None) -> None:
        self.dirs: list[dict[str, str]] = list(ctx.cgroups) if ctx else []
        self.read = ctx.read if ctx else _local
        self.samples: list[list[dict[str, int | None]]] = []  # per reading, per instance: counter -> value

    def sample(self) -> list[dict[str, int | None]]:
        row: list[dict[str, int | None]] = []
        read = self.read
        for d in self.dirs:
            blk = read_blkio(Path(d.get("blkio", "/nonexistent")) / "blkio.throttle.io_service_bytes", read)
            row.append(
                {
                    "cpu_usage_ns": _read_int(Path(d.get("cpuacct", "/nonexistent")) / "cpuacct.usage", read),
                    "memory_bytes": _read_int(Path(d.get("memory", "/nonexistent")) / "memory.usage_in_bytes", read),
                    **blk,
                }
            )
        self.samples.append(row)
        return row

    def _rows(self, i: int) -> list[dict[str, int | None]]:
        """Instance i's readings that have its CPU counter (its cgroup existed then)."""
        return [s[i] for s in self.samples if i < len(s) and s[i]["cpu_usage_ns"] is not None]

    def series(self) -> JsonObject:
        out: JsonObject = {}
        for i in range(len(self.dirs)):
            rows = self._rows(i)
            if len(rows) < 2:
                continue
            per: JsonObject = {
                "cpu_percent": column(d / 1e7 for d in deltas([_n(r, "cpu_usage_ns") for r in rows])),
                "memory_bytes": [r["memory_bytes"] for r in rows[1:]],
                "read_bytes": column(deltas([_n(r, "read_bytes") for r in rows])),
                "write_bytes": column(deltas([_n(r, "write_bytes") for r in rows])),
                "discard_bytes": column(deltas([_n(r, "discard_bytes") for r in rows])),
            }
            out[str(i)] = per
        return out

    def summary(self) -> JsonObject:
        out: JsonObject = {}
        for i in range(len(self.dirs)):
            rows = self._rows(i)
            if rows:
                totals: JsonObject = {
                    "cpu_ns": _n(rows[-1], "cpu_usage_ns") - _n(rows[0], "cpu_usage_ns"),
                    "memory_max_bytes": max(r["memory_bytes"] or 0 for r in rows),
                    "read_bytes": rows[-1]["read_bytes"],
                    "write_bytes": rows[-1]["write_bytes"],
                    "discard_bytes": rows[-1]["discard_bytes"],
                }
                out[str(i)] = totals
        return out


def _n(row: dict[str, int | None], key: str) -> int:
    """A counter of a reading that has it: the CPU counter (_rows keeps only those) and blkio's bytes (always)."""
    v = row[key]
    assert v is not None, f"{key} of a kept reading"
    return v


def oom_kills(cgroup: dict[str, str]) -> int:
    """OOM kills so far in an instance's memory cgroup (v1 memory.oom_control, v2 memory.events)."""
    for key, name, field in (("memory", "memory.oom_control", "oom_kill"), ("unified", "memory.events", "oom_kill")):
        d = cgroup.get(key)
        if not d:
            continue
        try:
            for line in (Path(d) / name).read_text().splitlines():
                k, _, v = line.partition(" ")
                if k == field:
                    return int(v)
        except (OSError, ValueError):
            pass
    return 0


def final_sections(text: str) -> dict[str, str]:
    """`cgroup-final.txt` (sections `== <controller>/<file>` then the file's content) ->
    {"memory/memory.failcnt": "0", ...}."""
    sections: dict[str, list[str]] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("== "):
            key = line[3:].strip()
            sections[key] = []
        elif key is not None:
            sections[key].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def final_counters(text: str) -> dict[str, int | None]:
    """A container's last cgroup counters, read inside it just before it exited."""
    sections = {k: v.splitlines() for k, v in final_sections(text).items()}

    def num(key: str) -> int | None:
        words = " ".join(sections.get(key, [])).split()
        return int(words[0]) if words and words[0].isdigit() else None

    out: dict[str, int | None] = {
        "cpu_ns": num("cpuacct/cpuacct.usage"),
        "memory_bytes": num("memory/memory.usage_in_bytes"),
        "memory_max_bytes": num("memory/memory.max_usage_in_bytes"),
        "memory_failcnt": num("memory/memory.failcnt"),
    }
    out.update(blkio_bytes(sections.get("blkio/blkio.throttle.io_service_bytes", [])))
    for line in sections.get("memory/memory.oom_control", []):
        if line.startswith("oom_kill "):
            out["oom_kills"] = int(line.split()[1])
    return out
