"""One thread that samples every collector once a second for the trial's duration."""

from __future__ import annotations

import threading
import time
from typing import Iterable, Literal, Sequence

from strata.collectors.base import Collector
from strata.core.jsondoc import JsonArray, JsonObject, JsonValue


class Sampler:
    def __init__(self, collectors: list[Collector], period_s: float = 1.0) -> None:
        self.collectors, self.period_s = collectors, period_s
        self.t: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="strata-sampler")

    def __enter__(self) -> Sampler:
        self._tick()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self._stop.set()
        self._thread.join(timeout=5)
        self._tick()  # the last reading closes the window
        return False

    def _tick(self) -> None:
        self.t.append(time.time())
        for c in self.collectors:
            try:
                c.sample()
            except OSError:
                pass  # a cgroup that vanished with its container; its last reading stands

    def _loop(self) -> None:
        next_t = time.monotonic() + self.period_s
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._tick()
            next_t += self.period_s

    def series(self) -> JsonObject:
        return {"t": column(self.t), **{c.name: c.series() for c in self.collectors}}

    def summary(self) -> JsonObject:
        return {c.name: c.summary() for c in self.collectors}


def column(values: Iterable[float]) -> JsonArray:
    """A per-second column of a collector's series, as the stored result holds it."""
    return list[JsonValue](values)


def deltas(values: Sequence[float]) -> list[float]:
    return [b - a for a, b in zip(values, values[1:])]
