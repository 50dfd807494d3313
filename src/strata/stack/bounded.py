"""Commands that may block in the kernel, run so that strata never waits on them forever.

A `umount` or `losetup -d` over a network device whose remote side stopped
answering can sleep uninterruptibly (D state) until the connection is aborted.
`subprocess.run(timeout=...)` kills such a child and then *waits for it*, which
hangs the caller too. `run_bounded` gives up after the timeout and leaves the
child to be reaped later; teardown code then aborts the connection and retries.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


@dataclass
class Bounded:
    argv: list[str]
    returncode: int | None  # None: still running after the timeout (abandoned)
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        if self.returncode is None:
            return f"`{' '.join(self.argv)}` did not finish in time"
        return f"`{' '.join(self.argv)}` exited {self.returncode}: {(self.stderr or self.stdout).strip()[-500:]}"


def run_bounded(argv: list[str], timeout_s: float = 10.0) -> Bounded:
    """Run argv; after `timeout_s` kill it and wait at most one more second."""
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        return Bounded(argv, 127, "", f"{argv[0]}: not installed")
    try:
        out, err = p.communicate(timeout=timeout_s)
        return Bounded(argv, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            out, err = p.communicate(timeout=1.0)
            return Bounded(argv, None, out or "", err or "")
        except subprocess.TimeoutExpired:
            return Bounded(argv, None, "", "")  # uninterruptible: abandoned, reaped by init later
