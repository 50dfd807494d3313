"""The path under test as a runtime provides it, and where an isolated instance sees its files.

Below every runtime plugin: a runtime's session yields a `PathHandle` per trial, and a container, a
pod or a guest mounts its out dir, barrier dir, data and device at the same places, so the runtimes
(stack/runtimes) and the VM machinery (stack/vm) share them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Inside a container, a pod or a guest, the out dir, the barrier dir, the data and the device are always here.
OUT_DIR = "/strata-out"
SYNC_DIR = "/strata-sync"
DEVICE_IN_CONTAINER = "/dev/strata-dev"
DATA_IN_CONTAINER = "/data"
LOG_IN_CONTAINER = "/log"  # a server's log on a path of its own (PostgreSQL's WAL), beside the data's


@dataclass
class PathHandle:
    name: str  # layer, volume, bind, tmpfs, device, image
    target_kind: str  # "dir" or "device"
    target_path: str  # as the instance sees it
    host_path: str | None = None  # where the data lives on the host, when known
    per_instance: list[dict[str, Any]] = field(default_factory=list)  # runtime-specific (volume names, bind dirs)
    # When the path's storage is not the stack's device (a Kubernetes claim of the cluster's own storage):
    # the kernel names of the disks that hold it, for the collectors and the cache check ([] = not
    # visible from this host: the check cannot be made), and what is known of it (stored with the result).
    # A runtime may fill them once the instances run (a claim bound when its first pod starts).
    disks: list[str] | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    # A server's log (PostgreSQL's WAL) on a path of its own, beside this one: the runtime mounts it in each
    # instance at its `target_path` (LOG_IN_CONTAINER), or gives native instances a directory of its own.
    log: PathHandle | None = None


def path_target_kind(path: str) -> str:
    """What an instance gets on a path: the block device itself, or a directory."""
    return "device" if path == "device" else "dir"
