"""The path under test as a runtime provides it, and where an isolated instance sees its files.

Below every runtime plugin: a runtime's session yields a `PathHandle` per trial, and a container, a
pod or a guest mounts its out dir, barrier dir, data and device at the same places, so the runtimes
(stack/runtimes) and the VM machinery (stack/vm) share them without importing each other. What every
runtime's path layer does alike is here too: a name fit for a file, a volume or a pod (`safe_name`),
the file system a path needs (`need_fs`), the refusal to hand an instance the raw device under a
mounted file system (`raw_device`), and a directory per instance on the file system under test
(`bind_dirs`: docker's and podman's bind mounts, the VM's shared directories).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TypedDict

from strata.core.errors import Unsupported
from strata.core.jsondoc import JsonObject
from strata.core.params import DEVICE_PATHS, path_kind
from strata.stack.filesystems.base import Mounted
from strata.stack.procfs import remove_tree

# Inside a container, a pod or a guest, the out dir, the barrier dir, the data and the device are always here.
OUT_DIR = "/strata-out"
SYNC_DIR = "/strata-sync"
DEVICE_IN_CONTAINER = "/dev/strata-dev"
DATA_IN_CONTAINER = "/data"
LOG_IN_CONTAINER = "/log"  # a server's log on a path of its own (PostgreSQL's WAL), beside the data's


class PerInstance(TypedDict, total=False):
    """One instance's part of a path: the members its runtime sets (a bind directory, a volume and its journal
    entry, a claim, a VM's disk image)."""

    dir: str
    volume: str
    seq: int
    claim: str
    disk: str
    format: str
    size_bytes: int


@dataclass
class PathHandle:
    name: str  # layer, volume, bind, tmpfs, device, image
    target_kind: str  # "dir" or "device"
    target_path: str  # as the instance sees it
    host_path: str | None = None  # where the data lives on the host, when known
    per_instance: list[PerInstance] = field(
        default_factory=list
    )  # what each instance gets of the path (runtime-specific)
    # When the path's storage is not the stack's device (a Kubernetes claim of the cluster's own storage):
    # the kernel names of the disks that hold it, for the collectors and the cache check ([] = not
    # visible from this host: the check cannot be made), and what is known of it (stored with the result).
    # A runtime may fill them once the instances run (a claim bound when its first pod starts).
    disks: list[str] | None = None
    facts: JsonObject = field(default_factory=dict)
    # The machine those disks are on when it is not this one (a Kubernetes node strata reaches through its agent):
    # their names mean nothing in this machine's /sys.
    disks_on: str | None = None
    # A server's log (PostgreSQL's WAL) on a path of its own, beside this one: the runtime mounts it in each
    # instance at its `target_path` (LOG_IN_CONTAINER), or gives native instances a directory of its own.
    log: PathHandle | None = None


def path_target_kind(path: str) -> str:
    """What an instance gets on a path: a block device (the device under test, a claim of volumeMode Block), or
    a directory."""
    return "device" if path_kind(path) in DEVICE_PATHS else "dir"


def safe_name(text: str) -> str:
    """`text` as a name for a directory, a volume or a pod: letters, digits, `_.-`, at most 60 characters."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", text)[:60]


def need_fs(mounted: Mounted, name: str) -> Path:
    """The mount point a path of that name lives on; Unsupported on a raw stack."""
    if mounted.mountpoint is None:
        raise Unsupported(f"the {name} path needs a file system on the device under test (this stack is raw)")
    return mounted.mountpoint


def raw_device(mounted: Mounted, refusal: str) -> str:
    """The device under test, for a path that hands it to an instance as it is; Unsupported when the host has
    a file system mounted on it (both would write it): `refusal`, with the file system's type as `{fs}`."""
    if mounted.mountpoint is not None:
        raise Unsupported(refusal.format(fs=mounted.fs.type))
    return mounted.device.path


@contextlib.contextmanager
def bind_dirs(mounted: Mounted, parent: str, trial_dir: Path, n: int, target_path: str) -> Iterator[PathHandle]:
    """A `bind` path: a directory per instance on the file system under test (under `parent`, named after the
    trial), each mounted or shared at `target_path`; removed with whatever the trial left in them."""
    base = need_fs(mounted, "bind") / parent / safe_name(trial_dir.name)
    dirs = [base / str(i) for i in range(n)]
    try:
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        yield PathHandle("bind", "dir", target_path, str(base), [{"dir": str(d)} for d in dirs])
    finally:
        remove_tree(base)
        with contextlib.suppress(OSError):
            base.parent.rmdir()
