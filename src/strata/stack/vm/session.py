"""The vm runtime's session: its paths (device, image, bind) and the start of N VMs.

Paths, named as in the other runtimes where the meaning carries over:
- `device`: the device under test itself as the guest's virtio-blk data disk.
  The host stack must be raw: a file system the host has mounted cannot be a
  guest's disk at the same time (both kernels would write it). What the guest
  puts on it is the runtime's `guest_filesystem`: `none` (the default) hands
  the instance the block device, so `device` means the same thing natively,
  in Docker and in a VM; ext4/xfs/btrfs are made by the guest (the same mkfs
  options as on the host) and the instance gets a directory on it.
- `image`: a raw or qcow2 file per VM on the host file system under test, as
  the guest's data disk: the VM counterpart of a container's writable layer.
  The same `guest_filesystem` rule applies.
- `bind`: a host directory per VM on the file system under test, shared
  into the guest (virtiofs, else 9p: the session's `share` fact).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from strata.core.errors import Unsupported
from strata.core.instances import InstanceRequest, Target
from strata.core.jsondoc import JsonObject
from strata.core.params import Load
from strata.core.proc import sh
from strata.stack.filesystems.base import Mounted
from strata.stack.journal import Journal, Undos, need
from strata.stack.paths import OUT_DIR, PathHandle, PerInstance, bind_dirs, need_fs, raw_device, safe_name
from strata.stack.vm.agent import DATA_DIR, DEVICE_IN_GUEST
from strata.stack.vm.guest import BARE, Guest, ensure_guest, guest_facts
from strata.stack.vm.params import MIN_MEMORY_BYTES, VmRuntime
from strata.stack.vm.running import VmRunning

PATHS = ("device", "image", "bind")
DEVICE_UNDER_FS = (
    "the vm device path gives the guest the raw device, which holds the host's mounted {fs}: use filesystem raw "
    "(the guest makes guest_filesystem on it)"
)
MIN_IMAGE_BYTES = 64 << 20


def undo_vm_image(data: JsonObject) -> None:
    """The image, and its trial's directory and `strata-vm` once they are empty."""
    path = Path(need(data, "path"))
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()
        path.parent.parent.rmdir()


class VmSession:
    """A guest image, an accelerator and a share kind chosen; VMs made per trial."""

    def __init__(
        self,
        params: VmRuntime,
        mounted: Mounted,
        journal: Journal,
        guest: Guest,
        accel: str,
        share: str,
        facts: JsonObject,
    ):
        self.name = params.name
        self.params, self.mounted, self.journal = params, mounted, journal
        self.guest, self.accel, self.share = guest, accel, share
        self.facts = facts
        self.running: list[VmRunning] = []

    def target(self, handle: PathHandle, host_out: Path) -> Target:
        return Target(handle.target_kind, handle.target_path, OUT_DIR, host_tools=False)

    def watch(self) -> tuple[str, str] | None:
        return None  # a VM that dies ends its trial from VmRunning.wait

    def _target(self) -> tuple[str, str]:
        return ("device", DEVICE_IN_GUEST) if self.params.guest_filesystem == "none" else ("dir", DATA_DIR)

    def _check_load(self, load: Load) -> None:
        memory = load.limits.memory
        if memory is not None and memory < MIN_MEMORY_BYTES:
            raise Unsupported(
                f"limits.memory {memory >> 20} MiB is a VM's RAM here: a guest needs at least "
                f"{MIN_MEMORY_BYTES >> 20} MiB"
            )

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        n = load.containers
        self._check_load(load)
        if name == "device":
            dev = raw_device(self.mounted, DEVICE_UNDER_FS)
            if n > 1 and self.params.guest_filesystem != "none":
                raise Unsupported(
                    f"{n} guests cannot each make a {self.params.guest_filesystem} on one device: "
                    f"use guest_filesystem none, or the image path"
                )
            yield PathHandle(name, *self._target(), dev, [{"disk": dev, "format": "raw"} for _ in range(n)])
        elif name == "image":
            with self._images(trial_dir, n) as handle:
                yield handle
        elif name == "bind":
            with bind_dirs(self.mounted, "strata-bind", trial_dir, n, DATA_DIR) as handle:
                yield handle
        else:
            raise Unsupported(f"the vm runtime has the paths {', '.join(PATHS)}, not {name}")

    def image_size(self, base: Path, n: int) -> int:
        """The runtime's image_size, capped so N images fit in 90% of the free space."""
        st = os.statvfs(base)
        fits = int(st.f_bavail * st.f_frsize * 0.9 / n)
        size = min(self.params.image_size, fits) >> 20 << 20
        if size < MIN_IMAGE_BYTES:
            raise Unsupported(
                f"{n} image(s) of at least {MIN_IMAGE_BYTES >> 20} MiB do not fit on "
                f"{self.mounted.mountpoint} ({st.f_bavail * st.f_frsize >> 20} MiB free)"
            )
        return size

    @contextlib.contextmanager
    def _images(self, trial_dir: Path, n: int) -> Iterator[PathHandle]:
        fmt = self.params.image_format
        base = need_fs(self.mounted, "image") / "strata-vm" / safe_name(trial_dir.name)
        made: list[tuple[int, Path]] = []
        try:
            base.mkdir(parents=True, exist_ok=True)
            size = self.image_size(base, n)
            per: list[PerInstance] = []
            for i in range(n):
                path = base / f"{i}.{fmt}"
                made.append((self.journal.intent("vm_image", path=str(path)), path))
                sh(["qemu-img", "create", "-q", "-f", fmt, str(path), str(size)])
                per.append(PerInstance(disk=str(path), format=fmt, size_bytes=size))
            yield PathHandle("image", *self._target(), str(base), per)
        finally:
            for seq, path in made:
                undo_vm_image({"path": str(path)})
                self.journal.release(seq)
            for d in (base, base.parent):
                with contextlib.suppress(OSError):
                    d.rmdir()

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> VmRunning:
        image = requests[0].image if requests and requests[0].image is not None else BARE
        guest = ensure_guest(image)  # the workload's image in a guest: built once per machine (strata prepare)
        self.facts["guest"] = guest_facts(guest)
        running = VmRunning(self, handle, load, sync_dir, guest)
        self.running.append(running)
        running.launch(requests)  # stops what it made and raises TrialFailure on failure
        return running

    def close(self) -> None:
        for r in list(self.running):
            r.stop()


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "vm_image": undo_vm_image,
}
