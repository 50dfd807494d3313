"""A server workload's clients: processes on the host, outside the stack under test.

Each client writes into a directory of its own: `argv.txt` (its command), `stdout.txt`,
`stderr.txt` and whatever the tool writes in its working directory (the directory itself). Its
CPU time is recorded (`os.wait4`), so the report can say how much of the machine the clients
took; it is watched without being reaped (`exited`), since reaping it loses that time.
A client that exits non-zero fails the trial with the workload's own reading of its stderr
(`Failure`), and one that outlives its deadline is killed (`timeout`).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from strata.core.errors import TrialFailure

STDERR_TAIL_CHARS = 4000

# The workload's reading of a client that exited non-zero: (phase, exit code, stderr) -> the failure.
Failure = Callable[[str, int, str], TrialFailure]


@dataclass(frozen=True)
class Client:
    """One client process: its command, its directory (its working directory too), its environment."""

    argv: list[str]
    out_dir: Path
    env: dict[str, str] = field(default_factory=dict)  # added to strata's own environment
    dirs: tuple[str, ...] = ()  # subdirectories made before it starts (YCSB's hdr/)


@dataclass
class ClientResult:
    returncode: int
    wall_s: float
    cpu_s: float  # user + system CPU of the client (os.wait4)
    stdout_path: Path
    stderr_path: Path

    def cpu_share(self, cores: int | None = None) -> float:
        """The client's CPU time over the wall time of all cores (1.0: it used the whole machine)."""
        return self.cpu_s / (self.wall_s * (cores or os.cpu_count() or 1)) if self.wall_s > 0 else 0.0


def start(client: Client) -> subprocess.Popen[bytes]:
    """Start one client, its output in its directory."""
    for d in (client.out_dir, *(client.out_dir / s for s in client.dirs)):
        d.mkdir(parents=True, exist_ok=True)
    (client.out_dir / "argv.txt").write_text("\n".join(client.argv) + "\n")
    env = {**os.environ, **client.env} if client.env else None
    with open(client.out_dir / "stdout.txt", "w") as out, open(client.out_dir / "stderr.txt", "w") as err:
        return subprocess.Popen(
            client.argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=client.out_dir,
            env=env,
            start_new_session=True,
        )


def exited(proc: subprocess.Popen[bytes]) -> bool:
    """Has the client ended? Without reaping it (Popen.poll would, and its CPU time with it)."""
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info is not None and info.si_pid == proc.pid


def wait(
    proc: subprocess.Popen[bytes], out_dir: Path, phase: str, t0: float, timeout_s: float, failure: Failure, what: str
) -> ClientResult:
    """Wait (killing the client at the deadline) and fail the trial on any non-zero exit (`failure`
    words it). The client must not have been reaped already (use `exited`, not Popen.poll, to watch it)."""
    deadline = t0 + timeout_s
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, rusage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise TrialFailure(
                "timeout", f"{what} ({phase}) did not end within {timeout_s:.0f} s", tail(out_dir / "stderr.txt")
            )
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    result = ClientResult(
        proc.returncode,
        time.monotonic() - t0,
        rusage.ru_utime + rusage.ru_stime,
        out_dir / "stdout.txt",
        out_dir / "stderr.txt",
    )
    if result.returncode != 0:
        raise failure(phase, result.returncode, result.stderr_path.read_text(errors="replace"))
    return result


def tail_text(text: str) -> str:
    return text[-STDERR_TAIL_CHARS:]


def tail(path: Path) -> str:
    try:
        return tail_text(path.read_text(errors="replace"))
    except OSError:
        return ""
