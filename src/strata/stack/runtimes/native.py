"""`native`: processes on the host, doing I/O on the mount point (path `bind`) or the raw device.

The baseline of every comparison: no container, no VM, the workload's tools
as installed on the host. One instance only, and no limits (those need a
container runtime): the expansion skips such combinations with the reason.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Iterator, Literal

from pydantic import Field

from strata.core.errors import Unsupported
from strata.core.instances import InstanceRequest, Isolation, Target
from strata.core.jsondoc import JsonObject
from strata.core.params import Load, Strict, shorthand
from strata.stack import hostprocs
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.hostprocs import HostProcesses
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.paths import PathHandle, path_target_kind


class NativeParams(Strict):
    """The workload's tools on the host, on the mount point or the raw device."""

    type: Literal["native"] = "native"
    name: str = Field(default="native", description="the name used in results and stack labels")


@contextlib.contextmanager
def _own_dir(d: Path) -> Iterator[PathHandle]:
    """A `bind` path natively: one directory on the mount point, the same for the host and the instance."""
    d.mkdir(exist_ok=True)
    try:
        yield PathHandle("bind", "dir", str(d), str(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


class NativeSession:
    name = "native"

    def __init__(self, mounted: Mounted, journal: Journal | None = None) -> None:
        self.mounted, self.journal = mounted, journal
        self.facts: JsonObject = {"runtime": "native"}

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        if name == "device":
            yield PathHandle(name, "device", self.mounted.device.path, self.mounted.device.path)
            return
        if name != "bind" or self.mounted.mountpoint is None:
            raise Unsupported(f"the native runtime has no {name} path")
        with _own_dir(self.mounted.mountpoint / "strata-data") as handle:
            yield handle

    @contextlib.contextmanager
    def log_path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        """A server's log on a directory of its own on the mount point (stack/runtimes/base.py LogSession)."""
        if name != "bind" or self.mounted.mountpoint is None:
            raise Unsupported(f"the native runtime gives a server's log the bind path only, not {name}")
        with _own_dir(self.mounted.mountpoint / "strata-log") as handle:
            yield handle

    def target(self, handle: PathHandle, host_out: Path) -> Target:
        # the trial's barrier directory sits beside the instances' out dirs (trial.py)
        return Target(
            handle.target_kind,
            handle.target_path,
            str(host_out),
            host_tools=True,
            sync_dir=str(host_out.parent / "sync"),
        )

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> HostProcesses:
        # stdout to a file, as in a container: what an instance says while it runs (fio's status line) is read
        # by the progress line (workloads/base.py LiveRate)
        return HostProcesses(requests, self.journal, stdout_to_file=True, sync_dir=sync_dir)

    def watch(self) -> tuple[str, str] | None:
        return None


class Native(Undoing):
    name = "native"
    params = NativeParams
    undo: Undos = hostprocs.UNDO  # the instances' cgroups
    baseline = True
    isolation: Isolation = "process"
    paths = ("bind", "device")
    log_paths = ("bind",)  # a server's log in a directory of its own on the mount point (LogPaths)
    concurrent = False
    limits = False

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def available(self, host: JsonObject, params: NativeParams | None = None) -> str | None:
        return None

    def impossible(self, params: NativeParams, fs: FilesystemParams) -> str | None:
        return None

    def target_kind(self, params: NativeParams, path: str) -> str:
        return path_target_kind(path)

    @contextlib.contextmanager
    def provision(
        self, params: NativeParams, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> Iterator[NativeSession]:
        yield NativeSession(mounted, journal)


NATIVE = Native()
