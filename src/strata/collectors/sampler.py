"""One thread that samples every collector once a second for the trial's duration."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Collector(Protocol):
    name: str

    def sample(self) -> dict: ...  # one reading (cumulative counters or levels)
    def series(self) -> dict: ...  # everything sampled, per-second
    def summary(self) -> dict: ...  # totals over the trial window


class Sampler:
    def __init__(self, collectors: list, period_s: float = 1.0):
        self.collectors, self.period_s = collectors, period_s
        self.t: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="strata-sampler")

    def __enter__(self):
        self._tick()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)
        self._tick()  # the last reading closes the window
        return False

    def _tick(self):
        self.t.append(time.time())
        for c in self.collectors:
            try:
                c.sample()
            except OSError:
                pass  # a cgroup that vanished with its container; its last reading stands

    def _loop(self):
        next_t = time.monotonic() + self.period_s
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._tick()
            next_t += self.period_s

    def series(self) -> dict:
        return {"t": self.t, **{c.name: c.series() for c in self.collectors}}

    def summary(self) -> dict:
        return {c.name: c.summary() for c in self.collectors}


def deltas(values: list[float]) -> list[float]:
    return [b - a for a, b in zip(values, values[1:])]
