"""File system plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from strata.stack.filesystems.base import FS_TYPES, Filesystem, FilesystemParams, Mounted
from strata.stack.filesystems.mkfs import BTRFS, EXT4, RAW, XFS

REGISTRY: dict[str, Filesystem] = {f.name: f for f in (RAW, EXT4, XFS, BTRFS)}
assert tuple(REGISTRY) == FS_TYPES

__all__ = ["REGISTRY", "FS_TYPES", "Filesystem", "FilesystemParams", "Mounted"]
