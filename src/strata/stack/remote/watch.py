"""Noticing that the remote side is gone, and failing fast when it is.

A killed target or a cut link must end the trial within a bounded time and
never leave a process, mount or loop device hanging. A monitor thread runs the
checks twice a second while the device exists; on the first failure it aborts
the client connection (for nbdfuse: kills it, so every waiting request fails
with EIO at once), which unblocks whatever waits on the device: the workload,
an `umount` of the file system above. `watch()` then reports
("remote_lost", what broke) to the runner, which ends the trial.

The stall check catches what no process or link state shows (a link that drops
packets): I/O in flight on the client device and none completing for
`stall_s` seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from strata.collectors.diskstats import read_diskstats

Check = Callable[[], "str | None"]


class StallCheck:
    def __init__(
        self,
        kernel_name: str,
        stall_s: float = 30.0,
        read: Callable[[list[str]], dict[str, dict[str, int]]] = read_diskstats,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kname, self.stall_s, self.read, self.clock = kernel_name, stall_s, read, clock
        self.last_done: int | None = None
        self.since: float | None = None

    def __call__(self) -> str | None:
        s = self.read([self.kname]).get(self.kname)
        if s is None:
            return f"{self.kname} is gone"
        done, now = s["read_ios"] + s["write_ios"], self.clock()
        if s["in_flight"] == 0:
            self.last_done, self.since = done, None
            return None
        if done != self.last_done or self.since is None:  # progress, or first seen busy: the clock starts here
            self.last_done, self.since = done, now
            return None
        if now - self.since >= self.stall_s:
            return f"{s['in_flight']} I/O(s) in flight on {self.kname} and none completed for {now - self.since:.0f} s"
        return None


class Watcher:
    def __init__(self, checks: list[Check], abort: Callable[[], None], period_s: float = 0.5):
        self.checks, self.abort, self.period_s = checks, abort, period_s
        self.lost: str | None = None
        self.lost_at: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> tuple[str, str] | None:
        """("remote_lost", message) once the remote side is gone (the client is aborted by then)."""
        with self._lock:
            if self.lost is None:
                for c in self.checks:
                    why = c()
                    if why:
                        self.lost, self.lost_at = why, time.time()
                        self.abort()
                        break
        return ("remote_lost", self.lost) if self.lost else None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="strata-remote-watch")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            if self.check():
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
