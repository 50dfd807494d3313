"""CPU time of a VM's host processes (QEMU, virtiofsd), from /proc and from their exit status.

A VM has no cgroup of its own (cgroup.py says why), so its CPU is read per
process: sampled each second from /proc/<pid>/stat while it runs (the
series), and exactly from the rusage `wait4` returns when it is reaped (the
total). Written into the instance's out dir as `vm-cpu.json`, and as
`cpuacct/cpuacct.usage` in `cgroup-final.txt` so the trial's final counters
carry `cpu_ns` as they do for a container.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import AnyStr

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float | None:
    """utime + stime of a live process (all its threads), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def reap(popen: subprocess.Popen[AnyStr]) -> float | None:
    """Reap an exited child with its rusage: its total CPU seconds (None while it runs).
    Sets popen.returncode as Popen.poll would."""
    if popen.returncode is not None:
        return None
    try:
        pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if pid == 0:
        return None
    popen.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


class CpuSampler:
    """Each second, the CPU seconds of some processes (a thread; stops on its own when they are gone)."""

    def __init__(self, pids: dict[str, int], period_s: float = 1.0):
        self.pids, self.period_s = pids, period_s
        self.t: list[float] = []
        self.cpu: dict[str, list[float | None]] = {k: [] for k in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="strata-vm-cpu")

    def start(self) -> None:
        self._sample()
        self._thread.start()

    def _sample(self) -> None:
        self.t.append(round(time.time(), 3))
        for key, pid in self.pids.items():
            self.cpu[key].append(cpu_s(pid))

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()
            if all(v[-1] is None for v in self.cpu.values()):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def series(self) -> dict[str, list[float | None]]:
        """Per-second CPU percent of each process (100 = one host CPU)."""
        out: dict[str, list[float | None]] = {"t": [*self.t[1:]]}
        for key, values in self.cpu.items():
            out[key] = [
                round(100.0 * (b - a) / (t1 - t0), 1) if a is not None and b is not None and t1 > t0 else None
                for a, b, t0, t1 in zip(values, values[1:], self.t, self.t[1:])
            ]
        return out
