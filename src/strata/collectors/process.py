"""CPU time of named processes (a storage target, a FUSE client), from /proc/PID/stat.

utime + stime (fields 14 and 15, in clock ticks) cover every thread of the
process. Percentages are of one CPU, per second. A process that exits keeps
its last reading: its series ends there and the summary counts up to it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from strata.collectors.sampler import deltas

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int, proc: Path = Path("/proc")) -> int | None:
    try:
        fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)


class ProcessCpuCollector:
    def __init__(self, name: str, pids: dict[str, int], proc: Path = Path("/proc")):
        self.name, self.pids, self.proc = name, dict(pids), proc
        self.times: list[float] = []
        self.samples: list[dict[str, int | None]] = []

    def sample(self) -> dict:
        row = {label: cpu_ticks(pid, self.proc) for label, pid in self.pids.items()}
        self.samples.append(row)
        self.times.append(time.time())
        return row

    def _rows(self, label: str) -> tuple[list[float], list[int]]:
        pairs = [(t, s[label]) for t, s in zip(self.times, self.samples) if s.get(label) is not None]
        return [t for t, _ in pairs], [v for _, v in pairs]

    def series(self) -> dict:
        out = {}
        for label in self.pids:
            t, v = self._rows(label)
            out[label] = {"cpu_percent": [100.0 * d / TICKS_PER_S / (dt or 1.0) for d, dt in zip(deltas(v), deltas(t))]}
        return out

    def summary(self) -> dict:
        out = {}
        for label, pid in self.pids.items():
            t, v = self._rows(label)
            if len(v) < 2:
                continue
            cpu_s = (v[-1] - v[0]) / TICKS_PER_S
            out[label] = {"pid": pid, "cpu_s": cpu_s, "cpu_percent": 100.0 * cpu_s / ((t[-1] - t[0]) or 1.0)}
        return out
