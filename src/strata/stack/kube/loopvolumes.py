"""The test bed's block volumes (StorageClass `strata-loop`): a loop device with direct I/O over an image file.

A claim of volumeMode Block of that class is served by an image file of the claim's size under `dir`, written
through once (a sparse image would answer reads of its holes without the disk below), and a loop device over it
(`losetup --direct-io=on`), which the PersistentVolume names as its `local` path. On a bed of one node `dir` is
data_dir/pv-block, on the file system strata built (else under the bed's root); on a bed of several it is
config.NODE_DATA/pv-block on the node's own disk, and every command runs inside the node's mount namespace
(`enter`: nsenter into it; loop devices are the machine's, one kernel for every node). What the pod does moves
that loop device, then the file system that holds the image and the disks below it.

The kubelet maps a block volume into a pod by a bind mount of the device and holds it open with a loop device
of its own over that bind mount (its "reference lock"); the pod's I/O still goes to the volume's loop device,
whose /proc/diskstats line moves (measured here: 148 MB of fio's reads on the volume's loop device, none on the
kubelet's). The kubelet detaches its own when it unmaps the volume.

Only what this module made is ever detached: the loop devices `losetup -j` finds over an image of `dir` (by
the image's device and inode), and, when the bed is torn down after a kill, the kubelet's locks over those
devices (`losetup -j /dev/loopN`, by the device node's inode). The bed journals `dir` once per node (`UNDO`),
before its kubelet starts, so that `strata cleanup` undoes them after the kubelet and pods are gone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from strata.core.jsondoc import JsonObject
from strata.core.proc import CommandError, sh
from strata.stack.journal import Undos, need

Enter = Callable[[list[str]], list[str]]  # a command as it runs where the images are (here, or inside a node)
SUFFIX = ".img"
DIR_NAME = "pv-block"  # the images' directory, beside the provisioner's directories (`pv`)
_QUANTITY = re.compile(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_UNITS = {
    None: 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
MIB = 1 << 20


def here(argv: list[str]) -> list[str]:
    """A command run on this machine, as it is."""
    return argv


def in_mount_ns(mount_ns: str) -> Enter:
    """A command run inside the mount namespace held by the file `mount_ns` (a node's of a bed of several)."""
    return lambda argv: ["nsenter", f"--mount={mount_ns}", "--", *argv]


def quantity_bytes(q: str) -> int:
    """A Kubernetes quantity of storage in bytes (`4Gi`, `500M`, `4294967296`); ValueError for another form."""
    m = _QUANTITY.fullmatch(q.strip())
    if not m:
        raise ValueError(f"{q!r} is not a quantity of bytes this provisioner reads (e.g. 4Gi, 512Mi, 1073741824)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def image_bytes(request: str) -> int:
    """The image that serves a claim requesting `request`: whole MiB, at least the request and at least 1 MiB."""
    return max(MIB, -(-quantity_bytes(request) // MIB) * MIB)


def image_path(dir: Path, volume: str) -> Path:
    return dir / f"{volume}{SUFFIX}"


def _loops(out: str) -> list[str]:
    return [line.split(":", 1)[0] for line in out.splitlines() if line.startswith("/dev/loop")]


def attached(image: Path, enter: Enter = here) -> list[str]:
    """The loop devices over `image` (matched by its device and inode: never another file's; none when it is gone)."""
    return _loops(sh(enter(["losetup", "-j", str(image)]), check=False, timeout=30).stdout)


def free_bytes(dir: Path, enter: Enter = here) -> int:
    """The bytes free on the file system of `dir`."""
    out = sh(enter(["df", "--output=avail", "-B1", str(dir)]), timeout=30).stdout.split()
    return int(out[-1])


def make(image: Path, size_bytes: int, enter: Enter = here) -> str:
    """Write `image` through (O_DIRECT) and attach a loop device with direct I/O over it; its path, /dev/loopN.
    Half-made, it is undone (the device detached, the file removed) and the CommandError raised."""
    for dev in attached(image, enter):  # a device left by a provisioner that stopped between attach and volume
        return dev
    fill = ["dd", "if=/dev/zero", f"of={image}", "bs=1M", f"count={size_bytes // MIB}", "oflag=direct", "conv=fsync"]
    try:
        sh(enter(["mkdir", "-p", str(image.parent)]), timeout=30)
        sh(enter([*fill, "status=none"]), timeout=3600)
        return sh(enter(["losetup", "--find", "--show", "--direct-io=on", str(image)]), timeout=60).stdout.strip()
    except CommandError:
        release(image, enter=enter)
        raise


def direct_io(dev: str) -> bool:
    """Whether the loop device reads and writes its image with direct I/O (the file system may refuse it)."""
    try:
        return Path(f"/sys/block/{Path(dev).name}/loop/dio").read_text().strip() == "1"
    except OSError:
        return False


def release(image: Path, locks: bool = False, enter: Enter = here) -> None:
    """Detach every loop device over `image` and remove it. With `locks` (the bed going away, its kubelet gone)
    first each loop device over one of those devices (the kubelet's reference lock of a mapped block volume)."""
    for dev in attached(image, enter):
        if locks:
            for lock in _loops(sh(enter(["losetup", "-j", dev]), check=False, timeout=30).stdout):
                sh(["losetup", "-d", lock], check=False, timeout=30)
        sh(["losetup", "-d", dev], check=False, timeout=30)
    sh(enter(["rm", "-f", str(image)]), check=False, timeout=60)


def release_all(dir: Path, enter: Enter = here) -> None:
    """Every image of `dir` released, the kubelet's locks over their devices first."""
    found = sh(enter(["find", str(dir), "-maxdepth", "1", "-name", f"*{SUFFIX}"]), check=False, timeout=30).stdout
    for image in sorted(found.split()):
        release(Path(image), locks=True, enter=enter)
    sh(enter(["rmdir", str(dir)]), check=False, timeout=30)


def undo_loop_volumes(data: JsonObject) -> None:
    """The journal's entry of a bed's (or a node's: `mount_ns`) images: each released."""
    ns = data.get("mount_ns")
    release_all(Path(need(data, "dir")), in_mount_ns(ns) if isinstance(ns, str) and ns else here)


# The undo action of the kind the bed journals for its block volumes (stack/journal.py Undoing).
UNDO: Undos = {"kube-loop-volumes": undo_loop_volumes}
