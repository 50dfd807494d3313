"""The typed spec: the only place options live (STYLE.md item 5).

A spec lists choices for each layer of the stack; the experiment is their
product (see expand.py). Every model forbids unknown keys so a typo is an
error, not a silently ignored option.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from strata.units import parse_size


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _size(v):
    return parse_size(v)


# ---- device -----------------------------------------------------------------

class LoopDevice(Strict):
    """A loop device over a file that strata fills (a sparse file would answer reads from holes)."""
    type: Literal["loop"] = "loop"
    name: str = Field(default="loop", description="the name used in results and stack labels")
    size: int = Field(default=4 * 2**30, description="bytes; accepts 4GiB, 512M")
    direct_io: bool = Field(default=True, description="losetup --direct-io=on; false makes a buffered loop device")
    backing_file: str | None = Field(default=None, description="default: WORKDIR/<name>.img")
    _v = field_validator("size", mode="before")(_size)

    @field_validator("size")
    @classmethod
    def _whole_mib(cls, v):
        if v < 64 << 20 or v % (1 << 20):
            raise ValueError("a loop device size is a whole number of MiB, at least 64MiB")
        return v


class ZramDevice(Strict):
    """A compressed RAM block device (RAM speed: a ceiling, not a disk)."""
    type: Literal["zram"] = "zram"
    name: str = "zram"
    size: int = Field(default=2 * 2**30, description="bytes")
    _v = field_validator("size", mode="before")(_size)


class BlockDevice(Strict):
    """An existing device. Written only if it is blank or `destroy: true` names it."""
    type: Literal["block"] = "block"
    name: str = Field(default="", description="default: the device's kernel name")
    path: str = Field(description="e.g. /dev/nvme0n1")
    destroy: bool = Field(default=False, description="allow strata to erase this exact device")

    @model_validator(mode="after")
    def _default_name(self):
        if not self.name:
            object.__setattr__(self, "name", self.path.rsplit("/", 1)[-1])
        return self


Device = Annotated[Union[LoopDevice, ZramDevice, BlockDevice], Field(discriminator="type")]


# ---- filesystem -------------------------------------------------------------

FS_TYPES = ("raw", "ext4", "xfs", "btrfs")


class Filesystem(Strict):
    """The file system made on the device (mkfs without discard), or raw (none)."""
    type: Literal["raw", "ext4", "xfs", "btrfs"] = Field(description="raw = no file system (path device)")
    name: str = Field(default="", description="default: type plus mount options, e.g. ext4-dioread_nolock")
    mkfs_options: list[str] = Field(default_factory=list, description="extra mkfs arguments, e.g. [-m, '0']")
    mount_options: list[str] = Field(default_factory=list, description="e.g. [dioread_nolock], [nodatacow]")

    @model_validator(mode="after")
    def _check(self):
        if self.type == "raw" and (self.mkfs_options or self.mount_options):
            raise ValueError("raw means no file system: it takes no mkfs_options or mount_options")
        if not self.name:
            name = self.type + "".join("-" + o.replace("=", "") for o in self.mount_options)
            object.__setattr__(self, "name", name)
        return self


# ---- runtime ----------------------------------------------------------------

STORAGE_DRIVERS = ("overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "zfs", "aufs")


class Runtime(Strict):
    """Where the workload runs: on the host, or in containers of a private dockerd per driver."""
    type: Literal["native", "docker"] = Field(description="native, or docker with a private daemon")
    storage_driver: Literal[
        "overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "zfs", "aufs", "system"
    ] | None = Field(default=None, description="docker only (default overlay2); `system` = your running daemon, as it is")
    name: str = Field(default="", description="default: native or docker:DRIVER")

    @model_validator(mode="after")
    def _check(self):
        if self.type == "native" and self.storage_driver:
            raise ValueError("the native runtime has no storage_driver")
        if self.type == "docker" and not self.storage_driver:
            object.__setattr__(self, "storage_driver", "overlay2")
        if not self.name:
            name = self.type if self.type == "native" else f"docker:{self.storage_driver}"
            object.__setattr__(self, "name", name)
        return self

    @property
    def is_container(self) -> bool:
        return self.type == "docker"


PATHS = ("layer", "volume", "bind", "tmpfs", "device")
PathName = Literal["layer", "volume", "bind", "tmpfs", "device"]


# ---- load -------------------------------------------------------------------

class Limits(Strict):
    """Per-container cgroup limits; bps/iops apply to the device under test."""
    cpus: float | None = Field(default=None, gt=0, description="docker --cpus")
    memory: int | None = Field(default=None, description="bytes (docker --memory, swap equal)")
    read_bps: int | None = Field(default=None, description="bytes/s on the device under test")
    write_bps: int | None = Field(default=None, description="bytes/s on the device under test")
    read_iops: int | None = Field(default=None, gt=0, description="IOPS on the device under test")
    write_iops: int | None = Field(default=None, gt=0, description="IOPS on the device under test")

    @field_validator("memory", "read_bps", "write_bps", mode="before")
    @classmethod
    def _sizes(cls, v):
        return None if v is None else parse_size(v)

    def is_empty(self) -> bool:
        return all(v is None for v in self.model_dump().values())


LOAD_PRESETS = {"low": {"numjobs": 1, "iodepth": 1}, "high": {"numjobs": 32, "iodepth": 32}}


class Load(Strict):
    """How hard and how many: jobs, queue depth, concurrent containers, cgroup limits."""
    name: str = Field(default="", description="default: j<numjobs>xqd<iodepth>[x<containers>c]")
    numjobs: int = Field(default=1, ge=1, le=4096, description="fio jobs per instance (threads for filebench)")
    iodepth: int = Field(default=1, ge=1, le=65536, description="fio queue depth per job")
    containers: int = Field(default=1, ge=1, le=256, description="concurrent instances, synchronized start")
    limits: Limits = Field(default_factory=Limits, description="per-container cgroup limits")

    @model_validator(mode="after")
    def _name(self):
        if not self.name:
            name = f"j{self.numjobs}xqd{self.iodepth}"
            if self.containers > 1:
                name += f"x{self.containers}c"
            object.__setattr__(self, "name", name)
        return self


# ---- experiment -------------------------------------------------------------

class Exclude(Strict):
    """Leave out every combination whose names all match (shell globs: `docker:*`)."""
    device: str | None = None
    filesystem: str | None = None
    runtime: str | None = None
    path: str | None = None
    workload: str | None = None
    load: str | None = None

    def matches(self, names: dict[str, str]) -> bool:
        from fnmatch import fnmatchcase
        pairs = [(k, v) for k, v in self.model_dump().items() if v is not None]
        return bool(pairs) and all(fnmatchcase(names[k], v) for k, v in pairs)


class Experiment(Strict):
    """A whole spec file. Workload entries are validated by their plugin (workloads/)."""
    name: str = Field(description="names the results directory (results/<name>)")
    description: str = ""
    workdir: str = Field(default="/var/tmp/strata", description="loop images and mount points go here")
    repetitions: int = Field(default=1, ge=1, le=1000, description="runs of each trial (for confidence intervals)")
    devices: list[Device] = Field(min_length=1, description="see the device sections below")
    filesystems: list[Filesystem] = Field(min_length=1)
    runtimes: list[Runtime] = Field(min_length=1)
    paths: list[PathName] = Field(min_length=1, description="see paths below")
    workloads: list[dict] = Field(min_length=1, description="`{fio: {...}}` or `{filebench: {...}}`, see below")
    loads: list[Load] = Field(default=[Load(name="low", **LOAD_PRESETS["low"])], description="default: low")
    exclude: list[Exclude] = Field(default_factory=list, description="combinations to leave out, by layer name (globs)")
