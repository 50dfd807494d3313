"""NBD over TCP: nbdkit serving the backing store in the storage host's namespace, and the
two client paths on the host.

Target: nbdkit's file plugin with `cache=none` (pages it read are dropped from
the storage host's page cache right after, so a repeated read goes to the disk
again) and `fadvise=random` (no read-ahead). nbdkit 1.32 has no O_DIRECT, and
`cache=none` keeps what was written recently (measured: 20 of 64 MiB a file
system had just written stayed cached, and a quarter of the next random reads
never reached the disk), so strata drops the backing store's clean pages every
half second (`CacheDropper`). What a cache still answers shows in the cache
check: the backing disk's /proc/diskstats, and the target's own read_bytes.

Clients:
- kernel: the `nbd` module with `nbd-client` (`-timeout` makes the kernel fail
  I/O on a dead connection instead of waiting forever).
- fuse: `nbdfuse MOUNTDIR nbd://ADDR:PORT` exposes the export as MOUNTDIR/nbd,
  and a loop device with `--direct-io=on` over that file is the block device.
  A killed target makes nbdfuse answer EIO at once; a cut link leaves requests
  waiting until nbdfuse is killed, which aborts the FUSE connection (every
  waiting request fails with ENOTCONN, the loop device returns EIO).

Every process, mount and device is journaled before it is made; the undo
actions work from the journal entry alone and never stat a file on the FUSE
mount (a dead mount answers ENOTCONN, `losetup -j` cannot match it).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, text
from strata.core.proc import sh
from strata.stack.bounded import run_bounded
from strata.stack.journal import Journal, Undos, need, strings
from strata.stack.marked import Daemon, start_daemon, stop_marked
from strata.stack.netns import NsHost
from strata.stack.procfs import is_mounted

PORT = 10809
FUSE_CONNECTIONS = 4  # nbdfuse's multi-conn default, made explicit so results say it
KERNEL_CONNECTIONS = 4
KERNEL_TIMEOUT_S = 10  # the kernel nbd client fails I/O after this long without an answer
NBDKIT_OPTIONS = ["cache=none", "fadvise=random"]


def version(program: str) -> str:
    r = sh([program, "--version"], check=False, timeout=30)
    return (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else ""


# ---- target -----------------------------------------------------------------------


def nbdkit_argv(addr: str, port: int, backing: str, pidfile: Path) -> list[str]:
    return [
        "nbdkit",
        "--foreground",
        "--ipaddr",
        addr,
        "--port",
        str(port),
        "--pidfile",
        str(pidfile),
        "file",
        f"file={backing}",
        *NBDKIT_OPTIONS,
    ]


def start_nbdkit(
    backing: str, run_dir: Path, journal: Journal, host: NsHost | None = None, addr: str = "", port: int = PORT
) -> Daemon:
    """nbdkit listening on one address only: the storage host namespace's (`host`), or `addr` of this
    node's network (a storage host that is another node of the experiment: serve.py)."""
    pidfile = run_dir / "nbdkit.pid"
    argv = nbdkit_argv(host.link.ns_addr if host else addr, port, backing, pidfile)
    return start_daemon(
        host.argv(argv) if host else argv,
        journal,
        marker=str(pidfile),
        programs=["nbdkit"],
        log=run_dir / "nbdkit.log",
        ready=pidfile,
    )


class CacheDropper:
    """Drop the storage host's clean cached pages of the backing store, every `period_s`
    (posix_fadvise DONTNEED over the whole file: dirty pages are only queued for writeback)."""

    def __init__(self, path: str, period_s: float = 0.5):
        self.path, self.period_s = path, period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fd: int | None = None

    def drop(self) -> None:
        if self.fd is not None:
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def start(self) -> None:
        self.fd = os.open(self.path, os.O_RDONLY)
        self._thread = threading.Thread(target=self._loop, daemon=True, name="strata-remote-nocache")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            with contextlib.suppress(OSError):
                self.drop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# ---- fuse client: nbdfuse + loop ----------------------------------------------------


def nbdfuse_argv(mountdir: Path, addr: str, port: int, pidfile: Path) -> list[str]:
    return [
        "nbdfuse",
        "--pidfile",
        str(pidfile),
        "--connections",
        str(FUSE_CONNECTIONS),
        str(mountdir),
        f"nbd://{addr}:{port}",
    ]


def loops_on(backing_file: str, sys_block: Path = Path("/sys/block")) -> list[str]:
    """Loop devices whose backing file is `backing_file`, by sysfs text (no stat of the file)."""
    found = []
    for d in sorted(sys_block.glob("loop*")):
        with contextlib.suppress(OSError):
            if (d / "loop" / "backing_file").read_text().strip() == backing_file:
                found.append(f"/dev/{d.name}")
    return found


def _undo_remote_loop(data: JsonObject) -> None:
    """Detach; if that hangs (the remote stopped answering), abort the FUSE connection and retry."""
    backing = need(data, "backing_file")
    for dev in loops_on(backing):
        if run_bounded(["losetup", "-d", dev], timeout_s=10).ok:
            continue
        stop_marked(need(data, "fuse_marker"), ["nbdfuse"], term_s=0)
        r = run_bounded(["losetup", "-d", dev], timeout_s=10)
        if not r.ok and dev in loops_on(backing):
            raise RuntimeError(r.describe())


def _undo_fuse_mount(data: JsonObject) -> None:
    """Unmount; if that fails or hangs, kill the FUSE daemon (aborts the connection) and detach lazily."""
    mp = need(data, "mountpoint")
    if is_mounted(mp) and not run_bounded(["umount", mp], timeout_s=10).ok:
        stop_marked(need(data, "marker"), strings(data, "programs"), term_s=0)
        if is_mounted(mp) and not run_bounded(["umount", mp], timeout_s=5).ok:
            abort_fuse(mp)
            r = run_bounded(["umount", "-l", mp], timeout_s=10)
            if not r.ok and is_mounted(mp):
                raise RuntimeError(r.describe())
    with contextlib.suppress(OSError):
        Path(mp).rmdir()


def fuse_connection(mountpoint: str, mountinfo: str | None = None) -> int | None:
    """The FUSE connection number of a mount (its device minor, /sys/fs/fuse/connections/N)."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        f = line.split(" ")
        if len(f) > 4 and f[4] == mountpoint and " - fuse" in line:
            return int(f[2].split(":")[1])
    return None


def abort_fuse(mountpoint: str, connections: Path = Path("/sys/fs/fuse/connections")) -> bool:
    """Abort a FUSE connection through fusectl (when its daemon cannot be killed); True if done.
    Killing the daemon is the usual way: closing /dev/fuse aborts the connection as well."""
    n = fuse_connection(mountpoint)
    target = connections / str(n) / "abort"
    if n is None or not target.exists():
        return False
    target.write_text("1")
    return True


@dataclass
class FuseClient:
    mountdir: Path
    loop: str
    daemon: Daemon

    @property
    def export_file(self) -> str:
        return str(self.mountdir / "nbd")

    def alive(self) -> str | None:
        """None if the client path is intact, else what broke."""
        if not self.daemon.alive():
            return f"nbdfuse (pid {self.daemon.pid}) exited: {self.daemon.log_tail(300).strip()}"
        if not is_mounted(str(self.mountdir)):
            return f"the FUSE mount {self.mountdir} is gone"
        if self.loop not in loops_on(self.export_file):
            return f"{self.loop} no longer reads {self.export_file}"
        return None

    def abort(self) -> None:
        """Fail every waiting and future request with EIO now (kill nbdfuse: aborts the connection)."""
        self.daemon.kill()


@contextlib.contextmanager
def fuse_client(addr: str, port: int, run_dir: Path, journal: Journal) -> Iterator[FuseClient]:
    mountdir, pidfile = run_dir / "mnt", run_dir / "nbdfuse.pid"
    mountdir.mkdir()
    mount: JsonObject = {"mountpoint": str(mountdir), "marker": str(pidfile), "programs": ["nbdfuse"]}
    seq_mount = journal.intent("fuse_mount", **mount)
    daemon = None
    try:
        daemon = start_daemon(
            nbdfuse_argv(mountdir, addr, port, pidfile),
            journal,
            marker=str(pidfile),
            programs=["nbdfuse"],
            log=run_dir / "nbdfuse.log",
            ready=pidfile,
        )
        export = str(mountdir / "nbd")
        loop: JsonObject = {"backing_file": export, "fuse_marker": str(pidfile)}
        seq_loop = journal.intent("remote_loop", **loop)
        try:
            dev = sh(["losetup", "--find", "--show", "--direct-io=on", export], timeout=60).stdout.strip()
            journal.update(seq_loop, device=dev)
            if Path(f"/sys/block/{Path(dev).name}/loop/dio").read_text().strip() != "1":
                raise StrataError(
                    f"{dev} over {export} did not accept --direct-io=on",
                    "the FUSE client must support O_DIRECT (nbdfuse from libnbd >= 1.6)",
                )
            yield FuseClient(mountdir, dev, daemon)
        finally:
            _undo_remote_loop(loop)
            journal.release(seq_loop)
    finally:
        _undo_fuse_mount(mount)  # a clean unmount makes nbdfuse exit
        if daemon is not None:
            daemon.stop(journal, term_s=3.0)
        journal.release(seq_mount)


# ---- kernel client: nbd module + nbd-client -------------------------------------------


def free_nbd_device(sys_block: Path = Path("/sys/block")) -> str | None:
    """The first /dev/nbdN with no connection (no `pid` file, size 0)."""

    def num(p: Path) -> int:
        return int(p.name[3:]) if p.name[3:].isdigit() else 1 << 30

    for d in sorted(sys_block.glob("nbd*"), key=num):
        if not d.name[3:].isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            if not (d / "pid").exists() and int((d / "size").read_text()) == 0:
                return f"/dev/{d.name}"
    return None


def nbd_client_argv(addr: str, port: int, dev: str) -> list[str]:
    return [
        "nbd-client",
        addr,
        str(port),
        dev,
        "-block-size",
        "4096",
        "-connections",
        str(KERNEL_CONNECTIONS),
        "-timeout",
        str(KERNEL_TIMEOUT_S),
    ]


def _undo_nbd_device(data: JsonObject) -> None:
    dev = text(data, "device")
    if dev and Path(f"/sys/block/{Path(dev).name}/pid").exists():
        r = run_bounded(["nbd-client", "-d", dev], timeout_s=KERNEL_TIMEOUT_S + 5)
        if not r.ok:
            raise RuntimeError(r.describe())


@dataclass
class KernelClient:
    device: str

    def alive(self) -> str | None:
        if not Path(f"/sys/block/{Path(self.device).name}/pid").exists():
            return f"{self.device} lost its connection"
        return None

    def abort(self) -> None:
        run_bounded(["nbd-client", "-d", self.device], timeout_s=KERNEL_TIMEOUT_S + 5)


@contextlib.contextmanager
def kernel_client(addr: str, port: int, journal: Journal) -> Iterator[KernelClient]:
    dev = free_nbd_device()
    if dev is None:
        raise StrataError("no free /dev/nbdN", "load the module with more devices: modprobe nbd nbds_max=16")
    data: JsonObject = {"device": dev}
    seq = journal.intent("nbd_device", **data)
    try:
        sh(nbd_client_argv(addr, port, dev), timeout=60)
        for _ in range(50):  # the size appears once the kernel has the connection
            if int(Path(f"/sys/block/{Path(dev).name}/size").read_text()) > 0:
                break
            time.sleep(0.1)
        yield KernelClient(dev)
    finally:
        _undo_nbd_device(data)
        journal.release(seq)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "remote_loop": _undo_remote_loop,
    "fuse_mount": _undo_fuse_mount,
    "nbd_device": _undo_nbd_device,
}
