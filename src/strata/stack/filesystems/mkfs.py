"""ext4, xfs and btrfs: mkfs and mount on the device.

mkfs runs without discard (-E nodiscard / -K): discarding a loop device punches
holes into its image, and holes answer reads without disk I/O. The minimum
sizes are what each mkfs accepts (xfs refuses devices under 300 MiB since
xfsprogs 5.19); the metadata shares are measured on empty file systems here
(df on a fresh 1 GiB file system) and rounded up.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path
from typing import Iterator

from strata.core.jsondoc import JsonObject
from strata.core.proc import sh
from strata.stack.blockdev import DeviceHandle
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal, Undoing, Undos, need
from strata.stack.procfs import is_mounted


def _undo_mount(data: JsonObject) -> None:
    mp = need(data, "mountpoint")
    for _ in range(20):  # busy for a moment while killed processes release their files
        if not is_mounted(mp) or sh(["umount", mp], check=False).returncode == 0:
            break
        time.sleep(0.25)
    else:
        sh(["umount", "-l", mp])
    for _ in range(8):  # a mount point just let go of can be busy for a moment
        try:
            Path(mp).rmdir()
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.25)
    with contextlib.suppress(OSError):
        if Path(mp).parent.name == "mnt":  # strata's own parent of mount points, when it is empty
            Path(mp).parent.rmdir()


def mount_options_of(mountpoint: str) -> str:
    for line in Path("/proc/mounts").read_text().splitlines():
        f = line.split(" ")
        if len(f) > 3 and f[1] == mountpoint:
            return f[3]
    return ""


class Mkfs(Undoing):
    """A file system made by `mkfs.<type>` and mounted under WORKDIR/mnt."""

    params = FilesystemParams
    undo: Undos = {"mount": _undo_mount}

    def __init__(self, name: str, argv: list[str], package: str, min_size_bytes: int, metadata_share: float):
        self.name, self.argv, self.package = name, argv, package
        self.min_size_bytes, self.metadata_share = min_size_bytes, metadata_share

    def available(self, host: JsonObject, params: FilesystemParams | None = None) -> str | None:
        if not shutil.which(self.argv[0]):
            return f"{self.argv[0]} not found (apt-get install {self.package})"
        if self.name not in Path("/proc/filesystems").read_text().split():
            r = sh(["modprobe", self.name], check=False)
            if r.returncode != 0 and self.name not in Path("/proc/filesystems").read_text().split():
                return f"the kernel has no {self.name} (modprobe {self.name}: {r.stderr.strip() or 'failed'})"
        return None

    def usable_bytes(self, device_bytes: int) -> int:
        return int(device_bytes * (1 - self.metadata_share))

    @contextlib.contextmanager
    def provision(
        self, params: FilesystemParams, device: DeviceHandle, journal: Journal, workdir: Path
    ) -> Iterator[Mounted]:
        sh([*self.argv, *params.mkfs_options, device.path], timeout=1200)
        mp = workdir / "mnt" / f"{device.name}-{params.name}"
        seq = journal.intent("mount", mountpoint=str(mp), device=device.path)  # before its directory exists
        try:
            mp.mkdir(parents=True, exist_ok=True)
            opts = ["-o", ",".join(params.mount_options)] if params.mount_options else []
            sh(["mount", "-t", self.name, *opts, device.path, str(mp)])
            yield Mounted(params, device, mp, mount_options_of(str(mp)))
        finally:
            _undo_mount({"mountpoint": str(mp)})
            journal.release(seq)


class Raw:
    """No file system: the workload uses the block device itself (path `device`)."""

    name = "raw"
    params = FilesystemParams
    min_size_bytes = 0

    def available(self, host: JsonObject, params: FilesystemParams | None = None) -> str | None:
        return None

    def usable_bytes(self, device_bytes: int) -> int:
        return device_bytes

    @contextlib.contextmanager
    def provision(
        self, params: FilesystemParams, device: DeviceHandle, journal: Journal, workdir: Path
    ) -> Iterator[Mounted]:
        yield Mounted(params, device, None)


RAW = Raw()
EXT4 = Mkfs("ext4", ["mkfs.ext4", "-F", "-q", "-E", "nodiscard"], "e2fsprogs", 8 << 20, 0.07)
XFS = Mkfs("xfs", ["mkfs.xfs", "-f", "-q", "-K"], "xfsprogs", 300 << 20, 0.04)
BTRFS = Mkfs("btrfs", ["mkfs.btrfs", "-f", "-q", "-K"], "btrfs-progs", 114 << 20, 0.10)
