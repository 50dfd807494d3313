"""The start barrier's release: a `go` file in the trial's sync dir that names the wall-clock start.

Every waiter (the container wrapper, fio's own hold) polls for `go`, then sleeps until the time it holds,
LEAD_S after it was written: the instances start together however late each one saw the file. A waiter
polls with `sleep`, a process per poll. At 5 ms, as before, 8 waiters kept 60% of this 2-core host busy
and 32 kept 98% busy, slowing the set-up of the instances still preparing; at POLL_S, 4% and 15%, with
the starts as close as before (bench/barrier_release.py). The lead covers a poll and a wake-up on a
busy host.
"""

from __future__ import annotations

import time
from pathlib import Path

POLL_S = 0.1
LEAD_S = 0.25
GO = "go"


def release(sync_dir: Path, lead_s: float = LEAD_S) -> float:
    """Write `go` (atomically: a waiter never reads half of it) with the start, `lead_s` from now, in ns
    since the epoch; returns the start (s)."""
    at = time.time() + lead_s
    tmp = sync_dir / f"{GO}.tmp"
    tmp.write_text(f"{int(at * 1e9)}\n")
    tmp.rename(sync_dir / GO)
    return at


def sleep_until(at: float) -> None:
    time.sleep(max(0.0, at - time.time()))


def wait_sh(go: str) -> str:
    """POSIX sh lines that wait for the `go` file at `go` and then for the start it names; a `go` without a
    start (an older strata's empty file) starts at once. `printf` is a builtin: one `date` and one `sleep`
    after the file appears."""
    return (
        f"while [ ! -e {go} ]; do sleep {POLL_S}; done\n"
        f"read -r at < {go} || at=\n"
        'case "$at" in *[!0-9]*|"") ;; *)\n'
        "  d=$((at - $(date +%s%N)))\n"
        '  if [ "$d" -gt 0 ]; then sleep $((d / 1000000000)).$(printf %09d $((d % 1000000000))); fi ;;\n'
        "esac\n"
    )
