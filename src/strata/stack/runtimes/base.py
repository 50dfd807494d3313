"""The runtime layer's contract: where instances run (host processes, containers, VMs).

A runtime is provisioned once per (device, file system, runtime) as a context
manager yielding a session. Per trial the session prepares a *path* (the
directory or device the workload uses: the vocabulary in params.PATHS) and
runs N instances with a synchronized start (instances.Running). A runtime
declares which paths it provides and whether it runs concurrent instances and
applies limits, so that impossible combinations are skipped with the reason
before anything is built (experiment/expand.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ContextManager, Protocol

from strata.instances import InstanceRequest, Running, Target
from strata.params import Load, Strict
from strata.stack.filesystems.base import FilesystemParams, Mounted


@dataclass
class PathHandle:
    name: str  # layer, volume, bind, tmpfs, device, image
    target_kind: str  # "dir" or "device"
    target_path: str  # as the instance sees it
    host_path: str | None = None  # where the data lives on the host, when known
    per_instance: list[dict] = field(default_factory=list)  # runtime-specific (volume names, bind dirs)


def path_target_kind(path: str) -> str:
    """What an instance gets on a path: the block device itself, or a directory."""
    return "device" if path == "device" else "dir"


class RuntimeSession(Protocol):
    name: str
    facts: dict  # stored with every result of the session

    def path(self, name: str, trial_dir: Path, load: Load) -> ContextManager[PathHandle]: ...
    def target(self, handle: PathHandle, host_out: Path) -> Target: ...
    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> Running: ...
    def watch(self) -> tuple[str, str] | None: ...  # polled while a trial runs (a daemon that died)


class Runtime(Protocol):
    name: str  # registry key = spec `type`
    params: type[Strict]
    kind: str  # "native", "container" or "vm": what the analysis compares (containers near native, ...)
    paths: tuple[str, ...]  # the paths it provides
    concurrent: bool  # runs several instances at once (`containers: N`)
    limits: bool  # applies per-instance limits

    def available(self, host: dict, params: Strict | None = None) -> str | None: ...
    def impossible(self, params: Strict, fs: FilesystemParams) -> str | None: ...  # whatever the host
    def target_kind(self, params: Strict, path: str) -> str: ...  # "dir" or "device": what the workload gets
    def provision(
        self, params: Strict, mounted: Mounted, journal, workdir: Path, host: dict
    ) -> ContextManager[RuntimeSession]: ...
