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

from pathlib import Path
from typing import ContextManager, Protocol, TypeVar, runtime_checkable

from strata.core.jsondoc import JsonObject
from strata.core.params import Strict
from strata.stack.blockdev import DeviceHandle
from strata.stack.journal import Journal

P = TypeVar("P", bound=Strict)  # a device's parameter model
P_contra = TypeVar("P_contra", bound=Strict, contravariant=True)


class DeviceSpec(Protocol):
    """What strata reads of any device's parameters: its plugin (`type`, the registry key) and its `name`."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...


class Device(Protocol[P]):
    name: str  # registry key = spec `type` = JSON `device.type`
    params: type[P]

    def shorthand(
        self, text: str
    ) -> dict[str, str] | None: ...  # a spec's one-word entry (`loop`, `/dev/sdb`), or None
    def available(self, host: JsonObject, params: P | None = None) -> str | None: ...
    def problems(self, params: P) -> list[str]: ...  # why it must not be written (empty: safe)
    def writes(self, params: P, workdir: Path) -> str: ...  # what a run writes, in words (the plan)
    def size_bytes(self, params: P) -> int | None: ...  # known before provisioning, for fit checks
    def provision(self, params: P, journal: Journal, workdir: Path) -> ContextManager[DeviceHandle]: ...


@runtime_checkable
class Served(Protocol[P_contra]):
    """A device another host of the experiment may serve (a remote device's storage host, `host:`): that host's
    agent serves it (hosts/storage.py) and tells where (`served_at`, which the manager sets on the trial's device,
    never a spec), and the client hosts attach to it there."""

    def served_by(self, params: P_contra) -> str | None: ...  # the host of `hosts:` that serves it; None: here
    def served_at(self, params: P_contra) -> str | None: ...  # ADDR:PORT/TOKEN once the manager set it


@runtime_checkable
class HostDevice(Protocol[P_contra]):
    """A device that is one of the host's own block devices (`block`): the destroy guard's fix names its path."""

    def device_path(self, params: P_contra) -> str: ...
