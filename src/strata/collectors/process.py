"""CPU time and storage I/O of named processes (a storage target, a FUSE client), from /proc.

CPU: utime + stime of /proc/PID/stat (fields 14 and 15, clock ticks), every
thread of the process; percentages are of one CPU, per second.

I/O: /proc/PID/io. `rchar` is what the process read through system calls
(sockets included: a target's rchar holds the data clients wrote to it),
`read_bytes` what it really caused to be fetched from a block device. For a
storage target, `read_bytes` against the bytes the workload read is a cache
check that other tenants of the disk cannot blur (seen: nbdkit's file plugin
without `cache=none` served 132 MiB of random reads with 0 bytes from the disk).

A process that exits keeps its last reading: its series ends there and the
summary counts up to it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from strata.collectors.sampler import column, deltas
from strata.core.jsondoc import JsonObject

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
IO_FIELDS = ("rchar", "wchar", "read_bytes", "write_bytes")


def read_process(pid: int, proc: Path = Path("/proc")) -> dict[str, int] | None:
    """{"cpu_ticks", "rchar", "wchar", "read_bytes", "write_bytes"}, None once the process is gone."""
    try:
        fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        row = {"cpu_ticks": int(fields[11]) + int(fields[12])}  # utime, stime: fields 14 and 15 of stat(5)
    except (OSError, IndexError, ValueError):
        return None
    try:
        io = dict(line.split(": ") for line in (proc / str(pid) / "io").read_text().splitlines() if ": " in line)
        row.update({k: int(io[k]) for k in IO_FIELDS})
    except (OSError, KeyError, ValueError):
        pass  # not ours to read (not root): CPU only
    return row


class ProcessCollector:
    def __init__(self, name: str, pids: dict[str, int], proc: Path = Path("/proc")):
        self.name, self.pids, self.proc = name, dict(pids), proc
        self.times: list[float] = []
        self.samples: list[dict[str, dict[str, int] | None]] = []

    def sample(self) -> dict[str, dict[str, int] | None]:
        row = {label: read_process(pid, self.proc) for label, pid in self.pids.items()}
        self.samples.append(row)
        self.times.append(time.time())
        return row

    def _rows(self, label: str) -> tuple[list[float], list[dict[str, int]]]:
        pairs = [(t, r) for t, s in zip(self.times, self.samples) if (r := s.get(label))]
        return [t for t, _ in pairs], [r for _, r in pairs]

    def series(self) -> JsonObject:
        out: JsonObject = {}
        for label in self.pids:
            t, rows = self._rows(label)
            dt = deltas(t)
            cpu = deltas([r["cpu_ticks"] for r in rows])
            per: JsonObject = {
                "cpu_percent": column(100.0 * d / TICKS_PER_S / (s or 1.0) for d, s in zip(cpu, dt)),
                **{k: column(deltas([r[k] for r in rows])) for k in IO_FIELDS if rows and k in rows[0]},
            }
            out[label] = per
        return out

    def summary(self) -> JsonObject:
        out: JsonObject = {}
        for label, pid in self.pids.items():
            t, rows = self._rows(label)
            if len(rows) < 2:
                continue
            cpu_s = (rows[-1]["cpu_ticks"] - rows[0]["cpu_ticks"]) / TICKS_PER_S
            totals: JsonObject = {
                "pid": pid,
                "cpu_s": cpu_s,
                "cpu_percent": 100.0 * cpu_s / ((t[-1] - t[0]) or 1.0),
                **{k: rows[-1][k] - rows[0][k] for k in IO_FIELDS if k in rows[0] and k in rows[-1]},
            }
            out[label] = totals
        return out
