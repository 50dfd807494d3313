"""Provision the layers of a stack once and share them across consecutive trials.

Layers nest (device -> file system -> runtime); when the next trial needs a
different layer, that layer and every layer above it are torn down and built
anew. A layer that died during a trial (a daemon, a remote target: the
failure names the layer, or the kept layer's own watch says before the next
trial that it is gone) is built again for the next trial; a second death in
a row, before a trial stood on the rebuilt layer, ends that stack with a clear
message. The plugins come from the registries, which unit tests replace with
fakes. What it reads of a trial is `StackSpec`: the experiment's trial
(experiment/expand.py) is one, without stack/ importing the experiment above it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from strata.core.errors import LAYER_DIED, StrataError, TrialFailure
from strata.core.jsondoc import JsonObject
from strata.stack.blockdev import DeviceHandle
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.devices.base import Device
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems.base import Filesystem, FilesystemParams, Mounted
from strata.stack.journal import Journal
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.stack.runtimes.base import Runtime, RuntimeSession

Key = tuple[str, ...]  # a level of the stack: its layer and the specs it is built from

LEVELS = ("device", "filesystem", "runtime")


class LayerSpec(Protocol):
    """A layer's parameters as provisioning reads them: its plugin (`type`), its name, its identity (the JSON)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    def model_dump_json(self) -> str: ...


class StackSpec(Protocol):
    """What provisioning reads of a trial: the parameters of its device, file system and runtime, and its
    stack's label (for a message)."""

    @property
    def device(self) -> LayerSpec: ...
    @property
    def filesystem(self) -> FilesystemParams: ...
    @property
    def runtime(self) -> LayerSpec: ...
    @property
    def stack(self) -> str: ...


Handle: TypeAlias = DeviceHandle | Mounted | RuntimeSession  # what a level of the stack yields


@dataclass
class Registries:
    devices: dict[str, Device[Any]] = field(default_factory=lambda: dict(DEVICES))
    filesystems: dict[str, Filesystem] = field(default_factory=lambda: dict(FILESYSTEMS))
    runtimes: dict[str, Runtime[Any]] = field(default_factory=lambda: dict(RUNTIMES))


class StackCache:
    def __init__(self, journal: Journal, workdir: Path, host: JsonObject, registries: Registries | None = None) -> None:
        self.journal, self.workdir, self.host = journal, workdir, host
        self.workdir_was_there = workdir.exists()
        self.r = registries or Registries()
        self.levels: list[tuple[object, contextlib.ExitStack, Handle]] = []  # (key, stack, the layer's handle)
        self.failed: dict[Key, Exception] = {}
        self.deaths: dict[Key, int] = {}

    @staticmethod
    def keys(trial: StackSpec) -> list[Key]:
        device = trial.device
        return [
            ("device", device.model_dump_json()),
            ("fs", device.name, trial.filesystem.model_dump_json()),
            ("rt", device.name, trial.filesystem.name, trial.runtime.model_dump_json()),
        ]

    def get(self, trial: StackSpec) -> tuple[DeviceHandle, Mounted, RuntimeSession]:
        """(device handle, mounted fs, runtime session) for the trial; raises what provisioning raised."""
        for depth, key in enumerate(self.keys(trial)):
            if key in self.failed:
                raise self.failed[key]
            if depth < len(self.levels) and self.levels[depth][0] == key:
                if not self._found_dead(depth):
                    self.deaths.pop(key, None)  # it stood through a trial: only deaths in a row end a stack
                    continue
                self.died(trial, LEVELS[depth])  # died after the last trial, or it was not told: built again
                if key in self.failed:
                    raise self.failed[key]
            self._close_from(depth)
            try:
                self._open(depth, trial)
            except TrialFailure as e:  # a layer that died as it was built: died() counts it, a second ends it
                if not e.layer:
                    self.failed[key] = e
                raise
            except Exception as e:
                self.failed[key] = e
                raise
            self.levels[-1] = (key, *self.levels[-1][1:])
        return self._device(), self._mounted(), self._session()

    # Each level holds its layer's handle: a device's, a mounted file system, a runtime's session.
    def _device(self) -> DeviceHandle:
        v = self.levels[0][2]
        if not isinstance(v, DeviceHandle):
            raise TypeError(f"the device level holds {type(v).__name__}")
        return v

    def _mounted(self) -> Mounted:
        v = self.levels[1][2]
        if not isinstance(v, Mounted):
            raise TypeError(f"the file system level holds {type(v).__name__}")
        return v

    def _session(self) -> RuntimeSession:
        v = self.levels[2][2]
        if isinstance(v, (DeviceHandle, Mounted)):
            raise TypeError(f"the runtime level holds {type(v).__name__}")
        return v

    def _open(self, depth: int, trial: StackSpec) -> None:
        es = contextlib.ExitStack()
        device, runtime = trial.device, trial.runtime  # a plugin's params: its registry key is its `type`
        value: Handle
        try:
            if depth == 0:
                value = es.enter_context(self.r.devices[device.type].provision(device, self.journal, self.workdir))
            elif depth == 1:
                fs = self.r.filesystems[trial.filesystem.type]
                value = es.enter_context(fs.provision(trial.filesystem, self._device(), self.journal, self.workdir))
            else:
                rt = self.r.runtimes[runtime.type]
                value = es.enter_context(rt.provision(runtime, self._mounted(), self.journal, self.workdir, self.host))
        except BaseException:
            es.close()
            raise
        self.levels.append((None, es, value))

    def _found_dead(self, depth: int) -> bool:
        """A kept layer that died since, read from its own watch: a remote device's target or link, a runtime's
        daemon (its process, the Kubernetes bed's). A file system has none: it dies with its device."""
        handle = self.levels[depth][2]
        if isinstance(handle, Mounted):
            return False
        watch = handle.watch  # a device's is None unless it is remote
        failure = watch() if watch is not None else None
        return failure is not None and LAYER_DIED.get(failure[0]) == LEVELS[depth]

    def died(self, trial: StackSpec, layer: str) -> None:
        """A layer of the trial's stack died: tear it (and those above) down, to be built again for the next
        trial; a second death in a row ends the stack."""
        depth = LEVELS.index(layer)
        key = self.keys(trial)[depth]
        self.deaths[key] = self.deaths.get(key, 0) + 1
        while len(self.levels) > depth:  # what died cannot always say goodbye: close each level anyway
            _, es, _ = self.levels.pop()
            with contextlib.suppress(Exception):
                es.close()
        if self.deaths[key] > 1:
            self.failed[key] = StrataError(
                f"the {layer} layer of {trial.stack} died twice in a row, each time before a trial could stand on it; "
                "its remaining trials in this run are not run",
                "look at the failed trials' stderr (the log of what died), then "
                "`strata run SPEC --resume` once the cause is fixed",
            )

    def _close_from(self, depth: int) -> None:
        while len(self.levels) > depth:
            _, es, _ = self.levels.pop()
            es.close()

    def close(self) -> None:
        self._close_from(0)
        # Leave the workdir as found: drop the mount point parent, and the workdir if this run made it.
        for d in [self.workdir / "mnt"] + ([] if self.workdir_was_there else [self.workdir]):
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: never removes anything else
