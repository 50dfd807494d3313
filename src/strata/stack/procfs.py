"""The host's processes, mounts and cgroups, found with nothing but paths.

A private dockerd's undo runs from its journal entry alone, possibly after
`kill -9` of strata (and of dockerd): it finds the engine's processes by their
command lines (/proc/<pid>/cmdline), the containers by the cgroups below our
cgroup parent (/proc/self/mountinfo, /proc/cgroups), and the mounts dockerd
left under its data-root (mountinfo). The session uses the same lookups to
find a container's cgroup directories on the host.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.proc import CommandError, sh

ENGINE_PROGRAMS = (
    "dockerd",
    "containerd",
    "containerd-shim",
    "containerd-shim-runc-v2",
    "runc",
    "docker-init",
    "podman",
    "conmon",
    "catatonit",
)


# ---- processes ----------------------------------------------------------------


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_running(pid: int) -> bool:
    """Alive and not a zombie (orphans are reaped late by this machine's init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def exe_name(pid: int) -> str:
    """The program a process runs ('' once it is gone)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def procs_mentioning(marker: str) -> list[int]:
    """Container-engine processes whose command line contains `marker` (our unique run dir):
    dockerd, its containerd and their shims. Never anything else (a user's `less` of our log)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or marker not in cmdline(int(p.name)):
            continue
        if exe_name(int(p.name)) in ENGINE_PROGRAMS:
            found.append(int(p.name))
    return found


def procs_using(path: str) -> list[int]:
    """Engine processes whose command line names `path` or anything under it, as a whole path
    (`--root /x/podman --runroot /run/strata/p-1` names both stores' paths with no slash after them;
    /x/podman2 is not /x/podman)."""
    path = path.rstrip("/")
    named = re.compile(re.escape(path) + r"(?=/|\s|$)")
    return [pid for pid in procs_mentioning(path) if named.search(cmdline(pid))]


def signal_and_wait(pids: list[int], sig: int, timeout_s: float) -> list[int]:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = [p for p in pids if is_running(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return pids


# ---- cgroups -------------------------------------------------------------------


def cgroup_hierarchies(mountinfo: str | None = None, cgroups_table: str | None = None) -> dict[str, tuple[Path, str]]:
    """Mount point and mounted root of each cgroup hierarchy, keyed as /proc/<pid>/cgroup names
    it ("cpu", "cpu,cpuacct", "name=systemd"; "" for cgroup v2)."""
    found: dict[str, tuple[Path, str]] = {}
    table = cgroups_table if cgroups_table is not None else Path("/proc/cgroups").read_text()
    controllers = {ln.split()[0] for ln in table.splitlines() if ln.strip() and not ln.startswith("#")}
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        pre, _, post = line.partition(" - ")
        fstype, _, superopts = (post.split(" ") + ["", "", ""])[:3]
        fields = pre.split(" ")
        where = (Path(fields[4]), fields[3])
        if fstype == "cgroup2":
            found.setdefault("", where)
        elif fstype == "cgroup":
            known = [o for o in superopts.split(",") if o in controllers or o.startswith("name=")]
            found.setdefault(",".join(sorted(known)), where)
    return found


def proc_cgroups(pid: int | str, text: str | None = None) -> dict[str, Path]:
    """Host directory of each cgroup hierarchy a process is in (hierarchy key -> dir), from its
    /proc/PID/cgroup (or that file's `text`, as a container wrote it: v1 shows host paths)."""
    mounts = cgroup_hierarchies()
    dirs: dict[str, Path] = {}
    text = text if text is not None else Path(f"/proc/{pid}/cgroup").read_text()
    for line in text.splitlines():
        _, controllers, rel = line.split(":", 2)
        key = ",".join(sorted(controllers.split(","))) if controllers else ""
        if key in mounts:
            mountpoint, root = mounts[key]
            if rel == root or rel.startswith(root.rstrip("/") + "/"):  # a mount may show a subtree only
                dirs[key] = mountpoint / os.path.relpath(rel, root)
    return dirs


def cgroups_of(proc_cgroup_text: str) -> dict[str, str]:
    """`host_cgroups` of a process whose /proc/self/cgroup text is given (a pod's container wrote it)."""
    return _by_controller(proc_cgroups("self", proc_cgroup_text))


def host_cgroups(pid: int) -> dict[str, str]:
    """controller -> the container's cgroup dir on the host ("cpu", "memory", "blkio", ...;
    "unified" for the cgroup v2 hierarchy)."""
    return _by_controller(proc_cgroups(pid))


def _by_controller(found: dict[str, Path]) -> dict[str, str]:
    dirs: dict[str, str] = {}
    for key, d in found.items():
        if not key:
            dirs["unified"] = str(d)
        for c in key.split(","):
            if c and not c.startswith("name="):
                dirs[c] = str(d)
    return dirs


def own_cgroup_dirs(parent: str) -> list[str]:
    """Where a daemon started by this process puts `--cgroup-parent parent` (a relative parent
    is taken relative to the cgroup of the process that starts the container, in each hierarchy)."""
    return [str(d / parent) for d in proc_cgroups("self").values()]


def cgroup_dirs(parent: str, known: list[str] | None = None) -> list[Path]:
    """Every cgroup directory of `parent`: those journaled, and any at the top of a hierarchy."""
    dirs = {Path(d) for d in known or []}
    dirs.update(m / parent for m, _ in cgroup_hierarchies().values())
    return sorted(d for d in dirs if d.is_dir())


def cgroup_pids(dirs: list[Path]) -> set[int]:
    pids: set[int] = set()
    for top in dirs:
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in procs.read_text().split())
    return pids


def remove_cgroups(dirs: list[Path], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    for top in dirs:
        for d in sorted((p for p in [top, *top.rglob("*")] if p.is_dir()), key=lambda p: -len(p.parts)):
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)


def prime_blkio(device_path: str, cgroup_name: str, remove: bool) -> None:
    """Make blkio.throttle.io_service_bytes count on the device: the kernel keeps it empty until
    a throttle rule was set once on that device (seen on cgroup v1 here). Set a huge one in the cgroup
    `cgroup_name` (below our own blkio cgroup), then remove the rule (and the cgroup if asked)."""
    blkio = proc_cgroups("self").get("blkio")
    if blkio is None:
        return  # cgroup v2 counts io.stat without this
    st = os.stat(device_path)
    dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    cgroup = blkio / cgroup_name
    cgroup.mkdir(exist_ok=True)
    try:
        knob = cgroup / "blkio.throttle.read_bps_device"
        with contextlib.suppress(OSError):
            knob.write_text(f"{dev} {1 << 50}")
            knob.write_text(f"{dev} 0")
    finally:
        if remove:
            with contextlib.suppress(OSError):
                cgroup.rmdir()


# ---- mounts and trees ----------------------------------------------------------


def mounts_under(path: str, mountinfo: str | None = None) -> list[str]:
    """Mount points at or below `path`, innermost (most recently mounted) first."""
    found = []
    prefix = path.rstrip("/") + "/"
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split(" ")[4])
        if mp == path.rstrip("/") or mp.startswith(prefix):
            found.append(mp)
    return found[::-1]


def is_mounted(mountpoint: str) -> bool:
    return any(line.split(" ")[1] == mountpoint for line in Path("/proc/mounts").read_text().splitlines() if line)


def unmount_under(path: str) -> None:
    for _ in range(20):  # stacked mounts on one point need one umount each
        mps = mounts_under(path)
        if not mps:
            return
        for mp in mps:
            if sh(["umount", mp], check=False).returncode != 0:
                sh(["umount", "-l", mp], check=False)
    raise StrataError(f"mounts under {path} do not go away: {mounts_under(path)[:5]}", "unmount them by hand")


def fs_failure(path: Path) -> str | None:
    """Why `path` cannot be looked at when the file system beneath it fails (EIO from an xfs shut
    down under a dead remote device, say); None when it can be (a path that does not exist can)."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return e.strerror or str(e)
    return None


def remove_tree(path: Path) -> None:
    """rm -rf, never crossing into another file system (nothing mounted below may be deleted); btrfs subvolumes
    below it, which are no mounts, go too."""
    if not path.exists():
        return
    unmount_under(str(path))
    for subvolume in subvolumes_under(path):
        sh(["btrfs", "subvolume", "delete", str(subvolume)], timeout=600)
    sh(["rm", "-rf", "--one-file-system", str(path)], timeout=1800)


BTRFS_SUBVOLUME_INODE = 256  # the root directory of every btrfs subvolume


def subvolumes_under(path: Path) -> list[Path]:
    """The btrfs subvolumes below `path` (not mounted anywhere), deepest first. A storage driver on btrfs (Podman's
    `btrfs`) makes one per image layer and container; each has a device number of its own, so `rm -rf
    --one-file-system` does not enter it, while it is no mount: it must be deleted as a subvolume."""
    mounted = set(mounts_under(str(path)))
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(path):
        parent_dev = os.lstat(dirpath).st_dev
        for name in dirnames:
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(full)
                if st.st_dev != parent_dev and st.st_ino == BTRFS_SUBVOLUME_INODE and full not in mounted:
                    found.append(Path(full))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def listening_sockets(text: str | None = None) -> set[str]:
    """Paths of the Unix sockets some process has bound (/proc/net/unix): in use, whoever made them."""
    if text is None:
        try:
            text = Path("/proc/net/unix").read_text()
        except OSError:
            return set()
    return {f[7] for f in (line.split() for line in text.splitlines()[1:]) if len(f) >= 8 and f[7].startswith("/")}


def remove_tree_but_live_sockets(path: Path) -> None:
    """`remove_tree` of a directory that others may use meanwhile, less their sockets (and the directories
    that hold them): every file and symlink goes, a socket some process has bound stays."""
    if not path.is_dir():
        return
    unmount_under(str(path))
    live, dev = listening_sockets(), path.stat().st_dev
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        if os.lstat(dirpath).st_dev != dev:  # a mount that would not go: nothing of it is deleted
            continue
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in filenames + links:
            entry = os.path.join(dirpath, name)
            if entry not in live:
                with contextlib.suppress(OSError):
                    os.unlink(entry)
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)  # stays while it holds a live socket


def remove_tree_unless_failing(path: Path) -> str | None:
    """`remove_tree`, unless the file system beneath `path` fails (before or while removing): then
    what is left of it is lost with that file system, and the return says so."""
    broken = fs_failure(path)
    if broken is None:
        try:
            remove_tree(path)
            return None
        except OSError as e:
            if e.errno not in (errno.EIO, errno.ENOTCONN, errno.ESTALE):
                raise
            broken = e.strerror or str(e)
        except CommandError as e:
            if "Input/output error" not in e.stderr:
                raise
            broken = "Input/output error"
    return f"{path} stays on the file system beneath it, which fails ({broken}), and is lost with it"
