"""A private dockerd's life: start it on the file system under test, stop it, undo it after a crash.

A private daemon keeps its images, layers and volumes (`--data-root`) on the
file system under test, so that the storage driver's I/O lands on the device
being measured (docs/architecture.md "Private container engines"). It gets its own
socket, exec-root and pidfile under `/run/strata/<id>/` (short: a unix socket
path is limited to 108 bytes), no network (`--bridge=none`, no iptables, no
ip forwarding) and its own cgroup parent `strata-<id>`, so that container
cgroups are ours and findable after a crash.

The daemon is journaled before it is started, and its undo works from the
journal entry alone, after `kill -9` of strata: containers outlive a killed
dockerd under containerd-shim, and dockerd bind-mounts its data-root onto
itself and leaves that mount behind when it fails to start (seen with 20.10
here). The lookups it needs are in stack/procfs.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.jsondoc import JsonObject, whole
from strata.core.proc import CommandError
from strata.stack.journal import Journal, Undos, need, strings
from strata.stack.procfs import (
    cgroup_dirs,
    cgroup_pids,
    cmdline,
    exe_name,
    is_running,
    own_cgroup_dirs,
    prime_blkio,
    procs_mentioning,
    remove_cgroups,
    remove_tree,
    remove_tree_unless_failing,
    signal_and_wait,
    unmount_under,
)
from strata.stack.runtimes.docker.client import DEBIAN_CLI, STDERR_TAIL_CHARS, SYSTEM_SOCKET, answers, docker

DOCKERD = "/usr/sbin/dockerd"  # Debian's docker.io 20.10
RUN_ROOT = Path("/run/strata")
DAEMON_START_TIMEOUT_S = 60
DAEMON_STOP_TIMEOUT_S = 20
KILL_WAIT_S = 10  # after SIGKILL: a process still there is stuck in the kernel
# A client reads EOF on the socket as the kernel closes a killed daemon's files, before its process has exited:
# how long a client error waits for the daemon's own state to say whether it died
DEATH_GRACE_S = 5.0
# The daemon's own environment: a fixed PATH, and a proxy that does not exist so
# that nothing the daemon does by itself can reach a registry (the network rule).
DAEMON_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
}


# ---- the daemon ---------------------------------------------------------------


@dataclass
class DaemonPaths:
    id: str
    data_root: Path

    @property
    def run_dir(self) -> Path:
        return RUN_ROOT / self.id

    @property
    def sock(self) -> str:
        return str(self.run_dir / "d.sock")

    @property
    def exec_root(self) -> Path:
        return self.run_dir / "x"

    @property
    def pidfile(self) -> Path:
        return self.run_dir / "d.pid"

    @property
    def log(self) -> Path:
        return self.run_dir / "dockerd.log"

    @property
    def config(self) -> Path:
        return self.run_dir / "daemon.json"

    @property
    def cgroup_parent(self) -> str:
        return f"strata-{self.id}"

    def journal_data(self, driver: str, remove_data_root: bool) -> JsonObject:
        return {
            "id": self.id,
            "driver": driver,
            "sock": self.sock,
            "run_dir": str(self.run_dir),
            "exec_root": str(self.exec_root),
            "pidfile": str(self.pidfile),
            "data_root": str(self.data_root),
            "cgroup_parent": self.cgroup_parent,
            "cgroup_dirs": [*own_cgroup_dirs(self.cgroup_parent)],
            "remove_data_root": remove_data_root,
        }


def dockerd_argv(paths: DaemonPaths, driver: str) -> list[str]:
    return [
        DOCKERD,
        "--config-file",
        str(paths.config),  # never the user's /etc/docker/daemon.json
        "--data-root",
        str(paths.data_root),
        "--exec-root",
        str(paths.exec_root),
        "-H",
        f"unix://{paths.sock}",
        "--pidfile",
        str(paths.pidfile),
        "--storage-driver",
        driver,
        "--bridge=none",
        "--iptables=false",
        "--ip-masq=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--cgroup-parent",
        paths.cgroup_parent,
        "--shutdown-timeout",
        "5",
    ]


def daemon_error(log: str) -> str:
    """The daemon's own reason for not starting: its error lines about the storage driver,
    then its final `failed to start daemon: ...` line."""
    errors, final = [], ""
    for line in log.splitlines():
        if line.startswith("failed to start daemon:"):
            final = line.strip()
        elif "level=fatal" in line or ("level=error" in line and ("storage-driver=" in line or "graphdriver" in line)):
            m = re.search(r'msg="((?:[^"\\]|\\.)*)"', line) or re.search(r"msg=(\S+)", line)
            if m:
                errors.append(m.group(1).replace('\\"', '"'))
    parts = list(dict.fromkeys(errors)) + ([final] if final else [])
    if parts:
        return "; ".join(parts)
    tail = [ln for ln in log.strip().splitlines() if "module=grpc" not in ln][-3:]
    return "dockerd exited; its log ends: " + " | ".join(tail)


@dataclass
class Daemon:
    paths: DaemonPaths
    driver: str
    proc: subprocess.Popen[bytes]
    start_s: float

    @property
    def sock(self) -> str:
        return self.paths.sock

    def alive(self) -> bool:
        return self.proc.poll() is None

    def died(self, grace_s: float = DEATH_GRACE_S) -> bool:
        """After a client error: whether dockerd died, from its own state, not from the client's words. Dead if
        its process exits within `grace_s`, or is still there but no longer answers on its socket (hung, or
        shutting down); alive as soon as it answers."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return True
            if answers(self.sock, timeout=max(1.0, deadline - time.monotonic())):  # a loaded daemon is slow
                return self.proc.poll() is not None
            time.sleep(0.05)
        return self.proc.poll() is not None or not answers(self.sock, timeout=grace_s)

    def log_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        with contextlib.suppress(OSError):
            return self.paths.log.read_text(errors="replace")[-chars:]
        return ""


def wait_ready(paths: DaemonPaths, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None and code < 0:  # killed as it started: not what this host can build
            raise TrialFailure(
                "daemon_died",
                f"dockerd was killed by signal {-code} as it started",
                paths.log.read_text(errors="replace")[-STDERR_TAIL_CHARS:],
                layer="runtime",
            )
        if code is not None:
            raise Unsupported(daemon_error(paths.log.read_text(errors="replace")))
        if answers(paths.sock, timeout=5):
            return
        time.sleep(0.05)
    raise Unsupported(
        f"dockerd did not answer within {DAEMON_START_TIMEOUT_S} s; "
        + daemon_error(paths.log.read_text(errors="replace"))
    )


@contextlib.contextmanager
def private_daemon(
    driver: str, data_root: Path, journal: Journal, *, remove_data_root: bool, prime_device: str | None = None
) -> Iterator[Daemon]:
    """Start dockerd, yield it once it answers; stop it and remove all it left on the way out."""
    paths = DaemonPaths(secrets.token_hex(4), data_root)
    data = paths.journal_data(driver, remove_data_root)
    seq = journal.intent("daemon", **data)
    proc = None
    started = False
    try:
        paths.run_dir.mkdir(parents=True)
        data_root.mkdir(parents=True, exist_ok=True)
        paths.config.write_text("{}\n")
        if prime_device:
            prime_blkio(prime_device, paths.cgroup_parent, remove=False)  # dockerd's parent; undo removes it
        t0 = time.monotonic()
        with open(paths.log, "w") as log:
            # own session: a Ctrl-C to strata's process group must not stop the daemon
            # before strata has removed its containers
            proc = subprocess.Popen(
                dockerd_argv(paths, driver),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=DAEMON_ENV,
                start_new_session=True,
            )
        journal.update(seq, pid=proc.pid)
        wait_ready(paths, proc)
        started = True
        yield Daemon(paths, driver, proc, time.monotonic() - t0)
    finally:
        undo_daemon({**data, "pid": proc.pid if proc else None, "remove_data_root": remove_data_root or not started})
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        journal.release(seq)


def undo_daemon(data: JsonObject) -> str | None:
    """Stop a private dockerd and remove everything it made, from the journal entry alone."""
    sock, run_dir = need(data, "sock"), need(data, "run_dir")
    if answers(sock):
        with contextlib.suppress(CommandError):  # a hung daemon: the cgroups below still get killed
            ids = docker(sock, "ps", "-aq", check=False, timeout=30).stdout.split()
            if ids:
                docker(sock, "rm", "-f", "-v", *ids, check=False, timeout=120)
    # containers outlive a killed dockerd under containerd-shim: kill what is in our cgroups
    cgroups = cgroup_dirs(need(data, "cgroup_parent"), strings(data, "cgroup_dirs", []))
    for _ in range(5):
        pids = cgroup_pids(cgroups)
        if not pids:
            break
        signal_and_wait(sorted(pids), signal.SIGKILL, 5)
    pid = _daemon_pid(data)
    survivors = []
    if pid and signal_and_wait([pid], signal.SIGTERM, DAEMON_STOP_TIMEOUT_S):
        survivors += signal_and_wait([pid], signal.SIGKILL, KILL_WAIT_S)
    # containerd and its shims carry our run dir in their command lines
    left = signal_and_wait(procs_mentioning(run_dir.rstrip("/") + "/"), signal.SIGTERM, 5)
    survivors = list(dict.fromkeys(survivors + signal_and_wait(left, signal.SIGKILL, KILL_WAIT_S)))
    if survivors:  # returns only once they are gone: else the entry stays for the next cleanup
        raise StrataError(
            f"dockerd's processes {survivors} ({', '.join(exe_name(p) or '?' for p in survivors)}) of {sock} "
            f"survived SIGKILL for {KILL_WAIT_S} s (stuck in the kernel, as on a hung device)",
            "look at `cat /proc/PID/stack`, then run `strata cleanup` again",
        )
    for root in (need(data, "data_root"), need(data, "exec_root"), run_dir):
        unmount_under(root)
    remove_cgroups(cgroup_dirs(need(data, "cgroup_parent"), strings(data, "cgroup_dirs", [])))
    remove_tree(Path(run_dir))
    if data.get("remove_data_root"):
        return remove_tree_unless_failing(Path(need(data, "data_root")))
    return None


def _daemon_pid(data: JsonObject) -> int | None:
    """The dockerd pid, only if that process really is our daemon (pids are reused)."""
    candidates = []
    with contextlib.suppress(OSError, ValueError):
        candidates.append(int(Path(need(data, "pidfile")).read_text().strip()))
    pid = whole(data, "pid")
    if pid:
        candidates.append(pid)
    for pid in candidates:
        if f"unix://{need(data, 'sock')}" in cmdline(pid) and is_running(pid):
            return pid
    return None


# ---- what this host can run ----------------------------------------------------


def available(driver: str, host: JsonObject) -> str | None:
    """A cheap check, without starting a daemon (docs/style.md, item 3); the daemon has the last word."""
    if os.geteuid() != 0:
        return "needs root"
    if not (os.access(DEBIAN_CLI, os.X_OK) or shutil.which("docker")):
        return "the docker client is not installed (apt-get install docker.io)"
    if driver == "system":
        return None if os.path.exists(SYSTEM_SOCKET) else f"no docker daemon socket at {SYSTEM_SOCKET}"
    if not os.access(DOCKERD, os.X_OK):
        return f"{DOCKERD} not found (apt-get install docker.io)"
    if driver == "fuse-overlayfs":
        if not shutil.which("fuse-overlayfs"):
            return "the fuse-overlayfs binary is not installed (apt-get install fuse-overlayfs)"
        if not os.path.exists("/dev/fuse"):
            return "no /dev/fuse (modprobe fuse)"
    if driver == "btrfs" and "btrfs" not in Path("/proc/filesystems").read_text().split():
        return "the kernel has no btrfs (the btrfs driver needs its data-root on a btrfs file system)"
    return None


def incompatible(driver: str, fs_type: str) -> str | None:
    """Combinations that cannot exist, whatever the host (skipped with the reason, docs/architecture.md "The stack")."""
    if driver == "btrfs" and fs_type != "btrfs":
        return f"the btrfs storage driver needs its data-root on a btrfs file system, not {fs_type}"
    if driver == "zfs":
        return "the zfs storage driver needs its data-root on a zfs dataset; strata does not create zfs pools"
    return None


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "daemon": undo_daemon,
}
