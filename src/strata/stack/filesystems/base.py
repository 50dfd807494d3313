"""The file system layer's contract: a mount point on the device, or `raw` (none).

A file system plugin says what it needs (`available`), the smallest device its
mkfs accepts and how much of a device its own metadata takes (so that
`strata validate` refuses a plan whose data cannot fit, before anything is
built), and provisions a `Mounted` file system as a context manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager, Literal, Protocol

from pydantic import Field, model_validator

from strata.core.jsondoc import JsonObject
from strata.core.params import Strict
from strata.stack.blockdev import DeviceHandle
from strata.stack.journal import Journal

FS_TYPES = ("raw", "ext4", "xfs", "btrfs")


class FilesystemParams(Strict):
    """The file system made on the device (mkfs without discard), or raw (none)."""

    type: Literal["raw", "ext4", "xfs", "btrfs"] = Field(description="raw = no file system (path device)")
    name: str = Field(default="", description="default: type plus mount options, e.g. ext4-dioread_nolock")
    mkfs_options: list[str] = Field(
        default_factory=list, max_length=64, description="extra mkfs arguments, e.g. [-m, '0']"
    )
    mount_options: list[str] = Field(
        default_factory=list, max_length=64, description="e.g. [dioread_nolock], [nodatacow]"
    )

    @model_validator(mode="after")
    def _check(self) -> "FilesystemParams":
        if self.type == "raw" and (self.mkfs_options or self.mount_options):
            raise ValueError("raw means no file system: it takes no mkfs_options or mount_options")
        if not self.name:
            name = self.type + "".join("-" + o.replace("=", "") for o in self.mount_options)
            object.__setattr__(self, "name", name)
        return self


@dataclass
class Mounted:
    fs: FilesystemParams
    device: DeviceHandle
    mountpoint: Path | None  # None for raw
    mount_options: str = ""  # as the kernel shows them in /proc/mounts


class Filesystem(Protocol):
    name: str  # registry key = spec `type`
    params: type[FilesystemParams]
    min_size_bytes: int  # the smallest device its mkfs accepts

    def available(self, host: JsonObject, params: FilesystemParams | None = None) -> str | None: ...
    def usable_bytes(self, device_bytes: int) -> int: ...  # what is left for data after metadata
    def provision(
        self, params: FilesystemParams, device: DeviceHandle, journal: Journal, workdir: Path
    ) -> ContextManager[Mounted]: ...
