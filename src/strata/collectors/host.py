"""Host CPU (user/system/iowait/idle, % of all CPUs) and page-cache size, from /proc."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from strata.collectors.sampler import column, deltas
from strata.core.jsondoc import JsonObject

if TYPE_CHECKING:
    from strata.collectors.base import CollectContext

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _local(path: str) -> str:
    return Path(path).read_text()


def read_cpu(read: Callable[[str], str] = _local) -> dict[str, int]:
    first = read("/proc/stat").splitlines()[0].split()
    return dict(zip(CPU_FIELDS, map(int, first[1:9])))


def read_meminfo(read: Callable[[str], str] = _local) -> dict[str, int]:
    out = {}
    for line in read("/proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        out[key] = int(rest.split()[0]) * 1024
    return out


class HostCollector:
    name = "host"

    def __init__(self, ctx: CollectContext | None = None) -> None:
        self.read = ctx.read if ctx else _local
        self.cpu: list[dict[str, int]] = []
        self.cache: list[int] = []
        self.dirty: list[int] = []

    def sample(self) -> dict[str, int]:
        c, m = read_cpu(self.read), read_meminfo(self.read)
        self.cpu.append(c)
        self.cache.append(m.get("Cached", 0))
        self.dirty.append(m.get("Dirty", 0))
        return c

    def _percent(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {k: [] for k in ("user", "system", "iowait", "idle")}
        for a, b in zip(self.cpu, self.cpu[1:]):
            d = {k: b[k] - a[k] for k in CPU_FIELDS}
            total = sum(d.values()) or 1
            out["user"].append(100.0 * (d["user"] + d["nice"]) / total)
            out["system"].append(100.0 * (d["system"] + d["irq"] + d["softirq"]) / total)
            out["iowait"].append(100.0 * d["iowait"] / total)
            out["idle"].append(100.0 * d["idle"] / total)
        return out

    def series(self) -> JsonObject:
        cpu: JsonObject = {k: column(v) for k, v in self._percent().items()}
        return {"cpu_percent": cpu, "page_cache_bytes": column(self.cache[1:]), "dirty_bytes": column(self.dirty[1:])}

    def summary(self) -> JsonObject:
        if len(self.cpu) < 2:
            return {}
        a, b = self.cpu[0], self.cpu[-1]
        d = {k: b[k] - a[k] for k in CPU_FIELDS}
        total = sum(d.values()) or 1
        return {
            "cpu_user_percent": 100.0 * (d["user"] + d["nice"]) / total,
            "cpu_system_percent": 100.0 * (d["system"] + d["irq"] + d["softirq"]) / total,
            "cpu_iowait_percent": 100.0 * d["iowait"] / total,
            "cpu_idle_percent": 100.0 * d["idle"] / total,
            "page_cache_delta_bytes": self.cache[-1] - self.cache[0],
            "page_cache_max_bytes": max(self.cache),
        }


__all__ = ["HostCollector", "deltas"]
