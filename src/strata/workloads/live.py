"""The current rate of running instances, read from the ends of the files they write (workloads/base.py
`LiveRate`): fio's status line, pgbench's `--progress 1` and sysbench's `--report-interval 1` lines. Only the
last few KiB of each file are read, a second at a time; a file that is missing, cut or not yet written says
nothing (None), never an error: this is what the progress line shows, not what is measured."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

TAIL_BYTES = 4096
FRESH_S = 5.0  # a file not written for longer belongs to an instance (or a phase) that has ended

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}
_BYTES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "kB": 1e3, "MB": 1e6, "GB": 1e9}
# fio's status line: `Jobs: 1 (f=1): [r(1)][75.0%][r=95.7MiB/s][r=24.5k IOPS][eta 00m:01s]` (both directions
# in one bracket when it reads and writes: `[r=1.2MiB/s,w=1.1MiB/s][r=300,w=290 IOPS]`)
_FIO_IOPS = re.compile(r"\[([rwt]=[^\]]*?) IOPS\]")
_FIO_BW = re.compile(r"\[([rwt]=[^\]]*?/s(?:,[rwt]=[^\]]*?/s)*)\]")
_NUMBER = re.compile(r"[rwt]=(\d+(?:\.\d+)?)([kKmMgG]?)")
_BW_NUMBER = re.compile(r"[rwt]=(\d+(?:\.\d+)?)([KMGT]iB|[kMG]B|B)/s")
_PGBENCH = re.compile(r"progress: [\d.]+ s, (\d+(?:\.\d+)?) tps")
_SYSBENCH = re.compile(r"\[ *\d+s \] thds: \d+ tps: (\d+(?:\.\d+)?)")


def tail(path: Path) -> str:
    """The last TAIL_BYTES of a file written in the last FRESH_S, or "" (missing, stale, unreadable)."""
    try:
        with open(path, "rb") as f:
            if time.time() - os.fstat(f.fileno()).st_mtime > FRESH_S:
                return ""
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def fio_rate(files: Iterable[Path]) -> str | None:
    """The IOPS and bandwidth of every instance's last status line, added."""
    iops = bw = 0.0
    seen = 0
    for p in files:
        line = next((s for s in reversed(re.split(r"[\r\n]", tail(p))) if "IOPS]" in s), None)
        if line is None:
            continue
        m = _FIO_IOPS.search(line)
        if m is None:
            continue
        seen += 1
        iops += sum(float(v) * _SI[u] for v, u in _NUMBER.findall(m.group(1)))
        b = _FIO_BW.search(line)
        if b is not None:
            bw += sum(float(v) * _BYTES[u] for v, u in _BW_NUMBER.findall(b.group(1)))
    if not seen:
        return None
    return f"{_si(iops)} IOPS, {bw / (1 << 20):.1f} MiB/s" + (f" ({seen} instances)" if seen > 1 else "")


def tps_rate(files: Iterable[Path], pattern: re.Pattern[str]) -> str | None:
    """The transactions a second of each client's last per-second line, added."""
    rates = []
    for p in files:
        found = pattern.findall(tail(p))
        if found:
            rates.append(float(found[-1]))
    if not rates:
        return None
    return f"{sum(rates):,.0f} tps" + (f" ({len(rates)} clients)" if len(rates) > 1 else "")


def pgbench_rate(trial_dir: Path) -> str | None:
    return tps_rate(trial_dir.glob("**/server-*/stderr.txt"), _PGBENCH)


def sysbench_rate(trial_dir: Path) -> str | None:
    return tps_rate(trial_dir.glob("**/server-*/stderr.txt"), _SYSBENCH)


def _si(v: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.1f}{unit}"
    return f"{v:.0f}"
