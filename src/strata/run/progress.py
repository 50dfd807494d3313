"""A progress line with ETA on stderr (a line per trial when stderr is not a terminal).

On a terminal the line also shows what the running trial does now, the workload's own current rate
(workloads/base.py `LiveRate`: fio's status line, the databases' per-second lines), redrawn once a second
by a thread of its own; not on a pipe or in a log, where a line a second would bury the trials' lines."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from strata.results.flags import Failure
from strata.results.result import Result

LIVE_S = 1.0  # how often the live rate is redrawn


def fmt_s(s: float) -> str:
    s = int(max(0, s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    def __init__(self, total: int, estimates_s: list[float], stream: TextIO | None = None, quiet: bool = False):
        self.total, self.estimates = total, list(estimates_s)
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.quiet = quiet
        self.done_n, self.t0 = 0, time.time()
        self.spent_est = 0.0
        self.lock = threading.Lock()  # the live thread and the trials' lines write the same line
        self.line = ""
        self.stop_live = threading.Event()
        self.live_thread: threading.Thread | None = None

    def eta_s(self) -> float:
        remaining = sum(self.estimates[self.done_n :])
        elapsed = time.time() - self.t0
        if self.spent_est > 0 and elapsed > 0:
            remaining *= elapsed / self.spent_est  # learn how far off the estimates are
        return remaining

    def _bar(self) -> str:
        width = 24
        filled = int(width * self.done_n / max(1, self.total))
        return "[" + "#" * filled + "-" * (width - filled) + "]"

    def add(self, estimate_s: float) -> None:
        """One more trial than planned (a round that `repetitions: auto` added)."""
        self.total += 1
        self.estimates.append(estimate_s)

    def start(self, label: str, live: Callable[[], str | None] | None = None) -> None:
        """A trial starts; `live`, when given, says its current rate (shown on a terminal, once a second)."""
        if self.quiet:
            return
        self._stop_live()
        self.line = f"{self._bar()} {self.done_n}/{self.total} eta {fmt_s(self.eta_s())}  {label}"
        with self.lock:
            if self.tty:
                self.stream.write("\r\033[K" + self.line[:160])
            else:
                self.stream.write(self.line + "\n")
            self.stream.flush()
        if self.tty and live is not None:
            self.stop_live.clear()
            self.live_thread = threading.Thread(target=self._live, args=(live,), name="progress-live", daemon=True)
            self.live_thread.start()

    def _live(self, live: Callable[[], str | None]) -> None:
        while not self.stop_live.wait(LIVE_S):
            try:
                now = live()
            except Exception:  # noqa: BLE001  (what the line shows must never fail the trial)
                now = None
            if now is None:
                continue
            with self.lock:
                if self.stop_live.is_set():
                    return
                self.stream.write("\r\033[K" + f"{self.line}  | now {now}"[:200])
                self.stream.flush()

    def _stop_live(self) -> None:
        if self.live_thread is not None:
            self.stop_live.set()
            self.live_thread.join(timeout=5)
            self.live_thread = None

    def done(self, result: Result) -> None:
        self._stop_live()
        self.spent_est += self.estimates[self.done_n] if self.done_n < len(self.estimates) else 0
        self.done_n += 1
        if self.quiet:
            return
        workload, load = result.labels["workload"], result.labels["load"]
        if result.status != "ok":
            f = result.flags.failed or Failure()
            self.note(f"{result.status}: {result.stack} {workload} {load}: [{f.category or None}] {f.message[:300]}")
        for w in result.warnings:
            self.note(f"warning: {result.stack} {workload}: {w['flag']}: {w['message'][:300]}")

    def note(self, text: str) -> None:
        if self.quiet:
            return
        with self.lock:
            self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
            self.stream.flush()

    def finish(self) -> None:
        self._stop_live()
        if not self.quiet and self.tty:
            self.stream.write("\r\033[K")
        if not self.quiet:
            self.stream.write(f"{self.done_n}/{self.total} trials in {fmt_s(time.time() - self.t0)}\n")
            self.stream.flush()
