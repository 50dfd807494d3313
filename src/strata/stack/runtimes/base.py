"""The runtime layer's contract: where instances run (host processes, containers, VMs).

A runtime is provisioned once per (device, file system, runtime) as a context
manager yielding a session. Per trial the session prepares a *path* (the
directory or device the workload uses: the vocabulary in params.PATHS) and
runs N instances with a synchronized start (instances.Running). A runtime
declares which paths it provides and whether it runs concurrent instances and
applies limits, so that impossible combinations are skipped with the reason
before anything is built (experiment/expand.py). It also says what it is, so that
nothing outside stack/ compares runtime names: whether it is the baseline every
other runtime is compared with (`baseline`: native), and what isolates an
instance from the host (`isolation`); a stored result names its runtime
(`trial.runtime.type`), and the analysis asks the registered plugin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ContextManager, Protocol, TypeVar, runtime_checkable

from strata.core.instances import InstanceRequest, Isolation, Running, Target
from strata.core.jsondoc import JsonObject
from strata.core.params import Limits, Load, Strict
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal
from strata.stack.paths import PathHandle

P = TypeVar("P", bound=Strict)  # a runtime's parameter model


class RuntimeSession(Protocol):
    name: str
    facts: JsonObject  # stored with every result of the session

    def path(self, name: str, trial_dir: Path, load: Load) -> ContextManager[PathHandle]: ...
    def target(self, handle: PathHandle, host_out: Path) -> Target: ...
    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> Running: ...
    def watch(self) -> tuple[str, str] | None: ...  # polled while a trial runs (a daemon that died)


class Runtime(Protocol[P]):
    name: str  # registry key = spec `type`
    params: type[P]
    baseline: bool  # the runtime every other is compared with (native): the raw device under it is validity's
    isolation: Isolation  # what isolates an instance from the host: a host process, a container, a VM
    concurrent: bool  # runs several instances at once (`containers: N`)
    limits: bool  # applies per-instance limits

    @property
    def paths(self) -> tuple[str, ...]: ...  # the paths it provides (read-only: a tuple of any length)

    def shorthand(self, text: str) -> dict[str, str] | None: ...  # a spec's one-word entry (`docker:btrfs`), or None
    def available(self, host: JsonObject, params: P | None = None) -> str | None: ...
    def impossible(self, params: P, fs: FilesystemParams) -> str | None: ...  # whatever the host
    def target_kind(self, params: P, path: str) -> str: ...  # "dir" or "device": what the workload gets
    def provision(
        self, params: P, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> ContextManager[RuntimeSession]: ...


@runtime_checkable
class RefusesLimits(Protocol):
    """A runtime that applies some limits but not all (a pod's CPU and memory, not its I/O bandwidth)."""

    def refused_limits(self, limits: Limits) -> str | None: ...  # why these limits cannot apply, or None


@runtime_checkable
class SizedPaths(Protocol):
    """A runtime whose instances get a device of a size it fixes on some paths (a Kubernetes claim of volumeMode
    Block is a device of the storage it requests): the plan refuses a workload whose data does not fit it, and
    names the runtime's parameter that sizes it (`sized_by`) in the fix."""

    sized_by: str

    def path_bytes(self, params: Any, path: str) -> int | None: ...  # the device's bytes on `path`, or None


@runtime_checkable
class LogPaths(Protocol):
    """A runtime that gives a server's log (PostgreSQL's WAL, InnoDB's redo log, Cassandra's commit log) a path
    of its own beside the data's: `log_paths` are the paths it can give it (each on the stack's device, so that
    the cache check sees the log's writes), and its session's `log_path` prepares one per trial (`LogSession`)."""

    @property
    def log_paths(self) -> tuple[str, ...]: ...


@runtime_checkable
class LogSession(Protocol):
    """A session that prepares a server's log path: mounted in each instance at LOG_IN_CONTAINER (a second
    volume, bind mount or tmpfs), or a directory of its own for host processes."""

    def log_path(self, name: str, trial_dir: Path, load: Load) -> ContextManager[PathHandle]: ...


@runtime_checkable
class SetsUp(Protocol):
    """A session that does set-up work while a trial runs which is not the trial's own (a container engine loading
    a workload's image on first use): the seconds it spent since the last trial took them, reset as they are taken
    (run/trial.py: not counted against a `repetitions: auto` budget)."""

    def take_setup_s(self) -> float: ...
