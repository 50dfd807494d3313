"""The `vm` runtime's parameters: accelerator, virtual disk, data image, guest file system.

Every field is stored with each result (the session's facts), because each
one changes what a VM measures: the host page cache answers a
`cache=writeback` disk, `aio=threads` adds a thread hop, an iothread moves
the disk off the vCPU thread, a qcow2 image adds a mapping layer.

Semantics of the paths (see session.py):
- `device`: the device under test, as a virtio-blk disk. The host stack must
  be raw (a file system mounted on the host cannot also be a guest's disk);
  `guest_filesystem` says what the guest makes on it: `none` gives the
  instance the block device itself (the same meaning as `device` natively
  and in Docker), ext4/xfs/btrfs give it a directory on that guest file system.
- `image`: a raw or qcow2 file on the host file system under test, as the
  guest's data disk (the VM counterpart of the writable layer); the same
  `guest_filesystem` rule applies.
- `bind`: a host directory on the file system under test, shared through
  virtiofs (else 9p).
"""

from __future__ import annotations

import math
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.params import Limits, Strict
from strata.core.units import parse_size

GUEST_FILESYSTEMS = ("none", "ext4", "xfs", "btrfs")
DEFAULT_MEMORY_BYTES = 1 << 30
MIN_MEMORY_BYTES = 128 << 20  # a Debian guest kernel with the agent


class VmRuntime(Strict):
    """A QEMU virtual machine per instance (direct kernel boot of a Debian guest strata builds)."""

    type: Literal["vm"] = "vm"
    name: str = Field(default="", description="default: vm, plus the parameters that differ from the defaults")
    accel: Literal["auto", "kvm", "tcg"] = Field(
        default="auto", description="auto = KVM if a test boot under it works, else TCG (emulated, ~100x slower)"
    )
    vcpus: int = Field(default=1, ge=1, le=64, description="vCPUs per VM unless limits.cpus says otherwise")
    memory: int = Field(
        default=DEFAULT_MEMORY_BYTES, description="guest RAM per VM unless limits.memory says otherwise"
    )
    disk_cache: Literal["none", "writeback", "writethrough", "directsync", "unsafe"] = Field(
        default="none", description="QEMU's cache mode of the data disk (none = O_DIRECT on the host)"
    )
    disk_aio: Literal["native", "threads", "io_uring"] = Field(
        default="native", description="QEMU's aio= of the data disk"
    )
    iothread: bool = Field(default=False, description="serve the data disk from its own iothread")
    queues: int = Field(default=1, ge=1, le=64, description="virtio-blk num-queues of the data disk")
    image_format: Literal["raw", "qcow2"] = Field(default="qcow2", description="the `image` path's disk file")
    image_size: int = Field(default=4 << 30, description="the `image` path's virtual disk size (capped by free space)")
    guest_filesystem: Literal["none", "ext4", "xfs", "btrfs"] = Field(
        default="none",
        description="what the guest makes on its data disk (device, image paths); none = the block device",
    )
    guest_mount_options: list[str] = Field(default_factory=list, description="mount options of guest_filesystem")
    share: Literal["auto", "virtiofs", "9p"] = Field(
        default="auto", description="how host directories reach the guest: auto = virtiofs where it works, else 9p"
    )
    boot_timeout_s: float | None = Field(
        default=None, gt=0, description="default: 60 s under KVM, 240 s under TCG, scaled by VMs per host CPU"
    )

    _sizes = field_validator("memory", "image_size", mode="before")(lambda v: parse_size(v))

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.disk_aio == "native" and self.disk_cache not in ("none", "directsync"):
            raise ValueError(
                f"disk_aio native needs O_DIRECT on the host (disk_cache none or directsync), "
                f"not {self.disk_cache}: use disk_aio threads or io_uring"
            )
        if self.memory < MIN_MEMORY_BYTES:
            raise ValueError("memory: the guest needs at least 128MiB")
        if self.guest_mount_options and self.guest_filesystem == "none":
            raise ValueError("guest_mount_options need a guest_filesystem")
        if not self.name:
            object.__setattr__(self, "name", default_name(self))
        return self

    @property
    def is_container(self) -> bool:
        return True  # instances are isolated, N of them per trial (containers: N)


def default_name(p: VmRuntime) -> str:
    """`vm`, `vm:xfs` (the guest file system), then every disk parameter off its default: `vm-writeback-threads`."""
    name = "vm" if p.guest_filesystem == "none" else f"vm:{p.guest_filesystem}"
    defaults, values = VmRuntime.model_fields, p.model_dump()
    for key in ("accel", "disk_cache", "disk_aio", "image_format", "share"):
        value = values[key]
        if value != defaults[key].default:
            name += f"-{value}"
    if p.iothread:
        name += "-iothread"
    if p.queues != 1:
        name += f"-q{p.queues}"
    return name


def vcpus_for(params: VmRuntime, limits: Limits) -> int:
    """limits.cpus -> whole vCPUs (a fraction rounds up: a VM cannot have half a CPU)."""
    return max(1, math.ceil(limits.cpus)) if limits.cpus is not None else params.vcpus


def memory_for(params: VmRuntime, limits: Limits) -> int:
    """limits.memory is the guest's RAM, in whole MiB (the session refuses less than MIN_MEMORY_BYTES)."""
    return params.memory if limits.memory is None else limits.memory >> 20 << 20
