"""The device layer's contract: a block device path for the file system (or raw) above it.

A device plugin provisions one device per stack as a context manager and says,
before any I/O, whether this host can build it (`available`) and whether the
spec may write it (`problems`: the destroy guard). The handle it yields names
the disks whose /proc/diskstats the cache check compares with the workload's
bytes, in order from the device under test down to the disk that finally
holds the bytes, and may bring collectors and a watch of its own (a remote
device's target CPU, its link; "the target is gone").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ContextManager, Protocol

from strata.instances import Watch
from strata.params import Strict


@dataclass
class DeviceHandle:
    name: str  # the spec's name of the device
    path: str  # /dev/loop3
    size_bytes: int
    diskstats: list[str]  # kernel names to sample: [device under test, ..., the disk holding the bytes]
    facts: dict = field(default_factory=dict)
    collectors: list[Any] = field(default_factory=list)  # extra collectors (collectors/base.py Collector)
    watch: Watch | None = None  # polled while a trial runs

    @property
    def kernel_name(self) -> str:
        return Path(os.path.realpath(self.path)).name

    @property
    def backing_disk(self) -> str | None:
        """Where bytes move when no cache answers (the device itself unless it sits on another)."""
        return self.diskstats[-1] if self.diskstats else None


class Device(Protocol):
    name: str  # registry key = spec `type` = JSON `device.type`
    params: type[Strict]

    def available(self, host: dict, params: Strict | None = None) -> str | None: ...
    def problems(self, params: Strict) -> list[str]: ...  # why it must not be written (empty: safe)
    def writes(self, params: Strict, workdir: Path) -> str: ...  # what a run writes, in words (the plan)
    def size_bytes(self, params: Strict) -> int | None: ...  # known before provisioning, for fit checks
    def provision(self, params: Strict, journal, workdir: Path) -> ContextManager[DeviceHandle]: ...
