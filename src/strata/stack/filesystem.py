"""Filesystem layer: mkfs and mount on the device, or `raw` (no file system).

mkfs runs without discard (-E nodiscard / -K): discarding a loop device punches
holes into its image, and holes answer reads without disk I/O.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from strata.proc import sh
from strata.spec.model import Filesystem
from strata.stack.device import DeviceHandle
from strata.stack.journal import Journal, undo_action

MKFS = {
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "nodiscard"],
    "xfs": ["mkfs.xfs", "-f", "-q", "-K"],
    "btrfs": ["mkfs.btrfs", "-f", "-q", "-K"],
}


@dataclass
class Mounted:
    fs: Filesystem
    device: DeviceHandle
    mountpoint: Path | None          # None for raw
    mount_options: str = ""          # as the kernel shows them in /proc/mounts


def available(fs_type: str) -> str | None:
    if fs_type == "raw":
        return None
    tool = MKFS[fs_type][0]
    if not shutil.which(tool):
        pkg = {"ext4": "e2fsprogs", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}[fs_type]
        return f"{tool} not found (apt-get install {pkg})"
    known = Path("/proc/filesystems").read_text().split()
    if fs_type not in known:
        r = sh(["modprobe", fs_type], check=False)
        if r.returncode != 0 and fs_type not in Path("/proc/filesystems").read_text().split():
            return f"the kernel has no {fs_type} (modprobe {fs_type}: {r.stderr.strip() or 'failed'})"
    return None


@undo_action("mount")
def _undo_mount(data: dict) -> None:
    mp = data["mountpoint"]
    for _ in range(20):  # busy for a moment while killed processes release their files
        if not is_mounted(mp) or sh(["umount", mp], check=False).returncode == 0:
            break
        time.sleep(0.25)
    else:
        sh(["umount", "-l", mp])
    with contextlib.suppress(OSError):
        Path(mp).rmdir()
        if Path(mp).parent.name == "mnt":  # strata's own parent of mount points, when it is empty
            Path(mp).parent.rmdir()


def is_mounted(mountpoint: str) -> bool:
    return any(line.split(" ")[1] == mountpoint for line in Path("/proc/mounts").read_text().splitlines() if line)


def mount_options_of(mountpoint: str) -> str:
    for line in Path("/proc/mounts").read_text().splitlines():
        f = line.split(" ")
        if len(f) > 3 and f[1] == mountpoint:
            return f[3]
    return ""


@contextlib.contextmanager
def provision(fs: Filesystem, device: DeviceHandle, journal: Journal, workdir: Path):
    if fs.type == "raw":
        yield Mounted(fs, device, None)
        return
    sh([*MKFS[fs.type], *fs.mkfs_options, device.path], timeout=1200)
    mp = workdir / "mnt" / f"{device.name}-{fs.name}"
    mp.mkdir(parents=True, exist_ok=True)
    seq = journal.intent("mount", mountpoint=str(mp), device=device.path)
    try:
        opts = ["-o", ",".join(fs.mount_options)] if fs.mount_options else []
        sh(["mount", "-t", fs.type, *opts, device.path, str(mp)])
        yield Mounted(fs, device, mp, mount_options_of(str(mp)))
    finally:
        _undo_mount({"mountpoint": str(mp)})
        journal.release(seq)
