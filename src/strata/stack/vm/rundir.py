"""A VM's run directory on the host: sockets, pid files and QEMU's own log.

Unix socket paths are limited to 107 bytes, so it lives under /run (else
/tmp), never under the user's workdir or results dir. Journaled before it is
made; the undo deletes it whole (its processes are journaled and killed first).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from strata.core.jsondoc import JsonObject
from strata.stack.journal import Journal, Undos, need


def run_base() -> Path:
    return Path("/run") if os.access("/run", os.W_OK) else Path("/tmp")


class RunDir:
    def __init__(self, journal: Journal, what: str):
        self.journal = journal
        self.path = run_base() / f"strata-vm-{what}-{secrets.token_hex(4)}"
        self.seq: int | None = None

    def __enter__(self) -> "RunDir":
        self.seq = self.journal.intent("vm_rundir", path=str(self.path))
        self.path.mkdir(mode=0o700)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.seq is not None:
            _undo_vm_rundir({"path": str(self.path)})
            self.journal.release(self.seq)
            self.seq = None


def _undo_vm_rundir(data: JsonObject) -> None:
    shutil.rmtree(need(data, "path"), ignore_errors=True)


def wait_for_socket(path: str, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """virtiofsd makes its socket once it listens; False if it exited or took too long."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "vm_rundir": _undo_vm_rundir,
}
