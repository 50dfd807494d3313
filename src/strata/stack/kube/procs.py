"""What a test bed's bring-up shares: resources journaled as they are made and undone in reverse, the bed's
processes started with a marker in their command line, and waiting for them with their log's end as the fix.

Used by the single-node bed (bed.py) and by the nodes of a bed of several (nodes.py).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue, num
from strata.stack.journal import Journal, need
from strata.stack.procfs import cmdline, is_running, remove_tree, signal_and_wait

from . import config

STOP_TIMEOUT_S = 15
READY_TIMEOUT_S = 180

Undo = Callable[[JsonObject], object]
Seqs = list[tuple[int, JsonObject, Undo]]  # what was made, undone in reverse on the way out


def tracked(journal: Journal, seqs: Seqs, kind: str, undo: Undo, **data: JsonValue) -> int:
    """Journal a resource before it exists, and remember its undo for the way out."""
    seq = journal.intent(kind, **data)
    seqs.append((seq, data, undo))
    return seq


def unwind(journal: Journal, seqs: Seqs) -> None:
    """Undo everything made, last first, each released from the journal once undone."""
    for seq, data, undo in reversed(seqs):
        try:
            undo(data)
        finally:
            journal.release(seq)


def undo_root(data: JsonObject) -> None:
    remove_tree(Path(need(data, "path")))


def undo_process(data: JsonObject) -> None:
    """Stop one of the bed's processes, only if that pid still is it (its command line names the bed's root)."""
    pid = int(num(data, "pid") or 0)
    if pid and need(data, "marker") in cmdline(pid) and is_running(pid):
        if signal_and_wait([pid], signal.SIGTERM, STOP_TIMEOUT_S):
            signal_and_wait([pid], signal.SIGKILL, 5)


def free_port(address: str = config.LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        port: int = s.getsockname()[1]
        return port


class Processes:
    """The bed's processes by name, each journaled (by pid and a marker, since pids are reused) and logged to
    `logs/NAME.log`."""

    def __init__(self, journal: Journal, seqs: Seqs, marker: str, logs: Path) -> None:
        self.journal, self.seqs, self.marker, self.logs = journal, seqs, marker, logs
        self.pids: dict[str, int] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """`argv` as the bed's process `name`; `env`: its whole environment (default: strata's)."""
        seq = tracked(self.journal, self.seqs, "kube-process", undo_process, name=name, marker=self.marker)
        with open(self.logs / f"{name}.log", "w") as log:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        self.journal.update(seq, pid=proc.pid)
        self.seqs[-1][1]["pid"] = proc.pid
        self.pids[name] = proc.pid
        return proc.pid

    def dead(self) -> list[str]:
        return [name for name, pid in self.pids.items() if not is_running(pid)]

    def log_tail(self, name: str, chars: int = 1500) -> str:
        try:
            return (self.logs / f"{name}.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def fix(self, name: str) -> str:
        return f"read {self.logs / (name + '.log')}; its end:\n{self.log_tail(name)}"

    def wait_until(self, what: str, test: Callable[[], object], name: str, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Poll `test` until it holds; the process `name` exiting first, or the time running out, is an error
        whose fix is its log's end."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not is_running(self.pids[name]):
                raise StrataError(f"{name} exited while starting", self.fix(name))
            if test():
                return
            time.sleep(0.3)
        raise StrataError(f"{what} within {timeout_s:.0f} s", self.fix(name))
