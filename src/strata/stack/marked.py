"""Daemons strata starts outside containers, found again by a marker in their command line.

A storage target (nbdkit) or a FUSE client (nbdfuse) must be stopped after
`kill -9` of strata, from its journal entry alone. A pid is not enough (it is
known only after the process exists, and pids are reused), so each daemon is
started with a unique path of this run in its arguments (its pid file, its
export): the undo finds the processes whose program is one of `programs` and
whose command line contains `marker`, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject
from strata.stack.journal import Journal, Undos, need, strings
from strata.stack.procfs import cmdline, is_running, signal_and_wait


def find_marked(marker: str, programs: list[str]) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        pid = int(p.name)
        if pid == os.getpid() or marker not in cmdline(pid):
            continue
        with contextlib.suppress(OSError):
            if os.path.basename(os.readlink(p / "exe")) in programs and is_running(pid):
                found.append(pid)
    return found


def stop_marked(marker: str, programs: list[str], term_s: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL what is left; returns the pids still running (stuck in the kernel)."""
    pids = find_marked(marker, programs)
    if not pids:
        return []
    left = signal_and_wait(pids, signal.SIGTERM, term_s)
    return signal_and_wait(left, signal.SIGKILL, 3.0) if left else []


def _undo_marked(data: JsonObject) -> None:
    _stop(need(data, "marker"), strings(data, "programs"))


def _stop(marker: str, programs: list[str]) -> None:
    left = stop_marked(marker, programs)
    if left:
        raise RuntimeError(f"processes {left} ({', '.join(programs)}) did not die (stuck in the kernel?)")


@dataclass
class Daemon:
    """A started daemon: its process, its log, and the journal entry that stops it."""

    proc: subprocess.Popen[bytes]
    log: Path
    marker: str
    programs: list[str]
    seq: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None and is_running(self.proc.pid)

    def log_tail(self, n_chars: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-n_chars:]
        return ""

    def kill(self) -> None:
        """SIGKILL now (aborts whatever it serves), and reap it."""
        with contextlib.suppress(OSError):
            self.proc.send_signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=3)

    def stop(self, journal: Journal, term_s: float = 3.0) -> None:
        """SIGTERM, SIGKILL after `term_s`, then every other process with the marker; release."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=term_s)
            except subprocess.TimeoutExpired:
                self.kill()
        _stop(self.marker, self.programs)
        journal.release(self.seq)


# Daemons are started from this one thread, which lives as long as strata: a child with PR_SET_PDEATHSIG
# gets its signal when the *thread* that forked it ends, and nbdkit 1.32 behaves so (measured: it exits 0
# once its starting thread is gone); an agent builds stacks in each part's thread, which ends with the part.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-spawn")


def start_daemon(
    argv: list[str],
    journal: Journal,
    *,
    marker: str,
    programs: list[str],
    log: Path,
    ready: Path,
    timeout_s: float = 15.0,
) -> Daemon:
    """Journal, start `argv` in a session of its own (Ctrl-C of strata must not reach it before
    an orderly teardown), and wait until it writes its `ready` file (its pid file)."""
    assert any(marker in a for a in argv), "the marker must be in the command line (the undo finds it there)"
    ready.unlink(missing_ok=True)
    seq = journal.intent("marked_process", marker=marker, programs=programs, argv=argv[:12])
    try:
        with open(log, "ab") as out:
            proc = _SPAWNER.submit(
                subprocess.Popen,
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            ).result()
    except FileNotFoundError:
        journal.release(seq)
        raise StrataError(f"`{argv[0]}` is not installed", "run scripts/install (or apt-get install nbdkit libnbd-bin)")
    daemon = Daemon(proc, log, marker, programs, seq)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready.exists() and ready.stat().st_size > 0:
            return daemon
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    tail = daemon.log_tail()
    daemon.stop(journal, term_s=1.0)
    state = f"exited {proc.returncode}" if proc.returncode is not None else f"not ready after {timeout_s:.0f} s"
    raise StrataError(
        f"`{' '.join(argv[:3])} ...` {state}: {tail.strip()[-800:]}",
        "see the daemon's message above; `strata doctor` checks the remote tools",
    )


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "marked_process": _undo_marked,
}
