"""The test bed's block volumes (StorageClass `strata-loop`): a loop device with direct I/O over an image file.

A claim of volumeMode Block of that class is served by an image file of the claim's size under `dir` (on a bed
that runs a stack: data_dir/pv-block, on the file system strata built), written through once (a sparse image
would answer reads of its holes without the disk below), and a loop device over it (`losetup --direct-io=on`),
which the PersistentVolume names as its `local` path. What the pod does moves that loop device, then the file
system that holds the image and the disks below it.

The kubelet maps a block volume into a pod by a bind mount of the device and holds it open with a loop device
of its own over that bind mount (its "reference lock"); the pod's I/O still goes to the volume's loop device,
whose /proc/diskstats line moves (measured here: 148 MB of fio's reads on the volume's loop device, none on the
kubelet's). The kubelet detaches its own when it unmaps the volume.

Only what this module made is ever detached: the loop devices `losetup -j` finds over an image of `dir` (by
the image's device and inode), and, when the bed is torn down after a kill, the kubelet's locks over those
devices (`losetup -j /dev/loopN`, by the device node's inode). The bed journals `dir` once (`UNDO`), before
the kubelet starts, so that `strata cleanup` undoes them after the kubelet and pods are gone.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject
from strata.core.proc import CommandError, sh
from strata.stack.blockdev import fill_file
from strata.stack.journal import Undos, need

SUFFIX = ".img"
_QUANTITY = re.compile(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_UNITS = {
    None: 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
MIN_BYTES = 1 << 20


def quantity_bytes(q: str) -> int:
    """A Kubernetes quantity of storage in bytes (`4Gi`, `500M`, `4294967296`); ValueError for another form."""
    m = _QUANTITY.fullmatch(q.strip())
    if not m:
        raise ValueError(f"{q!r} is not a quantity of bytes this provisioner reads (e.g. 4Gi, 512Mi, 1073741824)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def image_bytes(request: str) -> int:
    """The image that serves a claim requesting `request`: whole MiB, at least the request and at least 1 MiB."""
    n = quantity_bytes(request)
    return max(MIN_BYTES, -(-n // MIN_BYTES) * MIN_BYTES)


def image_path(dir: Path, volume: str) -> Path:
    return dir / f"{volume}{SUFFIX}"


def attached(image: Path) -> list[str]:
    """The loop devices over `image` (matched by its device and inode: never another file's)."""
    if not image.exists():
        return []
    out = sh(["losetup", "-j", str(image)], check=False, timeout=30).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.startswith("/dev/loop")]


def make(image: Path, size_bytes: int) -> str:
    """Write `image` through and attach a loop device with direct I/O over it; its path, /dev/loopN. Half-made,
    it is undone (the device detached, the file removed) and the error raised: a StrataError naming the fix."""
    image.parent.mkdir(parents=True, exist_ok=True)
    for dev in attached(image):  # a device left by a provisioner that stopped between attach and volume
        return dev
    try:
        fill_file(image, size_bytes)
        dev = sh(["losetup", "--find", "--show", "--direct-io=on", str(image)], timeout=60).stdout.strip()
    except (StrataError, CommandError):
        release(image)
        raise
    return dev


def direct_io(dev: str) -> bool:
    """Whether the loop device reads and writes its image with direct I/O (the file system may refuse it)."""
    try:
        return Path(f"/sys/block/{Path(dev).name}/loop/dio").read_text().strip() == "1"
    except OSError:
        return False


def release(image: Path, locks: bool = False) -> None:
    """Detach every loop device over `image` and remove it. With `locks` (the bed going away, its kubelet gone)
    first each loop device over one of those devices (the kubelet's reference lock of a mapped block volume)."""
    for dev in attached(image):
        if locks:
            for lock in _over_device(dev):
                sh(["losetup", "-d", lock], check=False, timeout=30)
        sh(["losetup", "-d", dev], check=False, timeout=30)
    image.unlink(missing_ok=True)


def _over_device(dev: str) -> list[str]:
    out = sh(["losetup", "-j", dev], check=False, timeout=30).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.startswith("/dev/loop")]


def release_all(dir: Path) -> None:
    """Every image of `dir` released, the kubelet's locks over their devices first."""
    for image in sorted(dir.glob(f"*{SUFFIX}")) if dir.is_dir() else []:
        release(image, locks=True)
    with contextlib.suppress(OSError):
        dir.rmdir()


def undo_loop_volumes(data: JsonObject) -> None:
    release_all(Path(need(data, "dir")))


# The undo action of the kind the bed journals for its block volumes (stack/journal.py Undoing).
UNDO: Undos = {"kube-loop-volumes": undo_loop_volumes}
