"""Runtime layer: where instances run (native processes or containers).

A runtime is provisioned once per (device, filesystem, runtime) and then asked,
per trial, to prepare a *path* and to run N instances with a synchronized
start. The start is a barrier: every instance is created and waits for a file
to appear, the collectors start, then the file is made (`go`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol

from strata.errors import TrialFailure
from strata.spec.model import Load
from strata.stack.filesystem import Mounted
from strata.stack.journal import undo_action
from strata.workloads.base import InstanceOutput, Target

# Inside an instance, the out dir and the barrier dir are always here.
OUT_DIR = "/strata-out"
SYNC_DIR = "/strata-sync"


class Unsupported(Exception):
    """This host cannot build this runtime; the message is the runtime's own error text."""


@dataclass
class PathHandle:
    name: str                       # layer, volume, bind, tmpfs, device
    target_kind: str                # "dir" or "device"
    target_path: str                # as the instance sees it
    host_path: str | None = None    # where the data lives on the host, when known
    per_instance: list[dict] = field(default_factory=list)  # runtime-specific (volume names, bind dirs)


@dataclass
class InstanceRequest:
    index: int
    argv: list[str]
    out_dir: Path                   # on the host; the instance sees it at `target.out_dir`


class Running(Protocol):
    """Instances created and waiting at the barrier."""
    cgroups: list[dict[str, str]]   # per instance: controller -> cgroup dir on the host ({} for native)

    def go(self) -> float: ...      # release the barrier; returns the wall-clock time
    def wait(self, timeout_s: float) -> list[InstanceOutput]: ...
    def stop(self) -> None: ...     # kill whatever still runs (Ctrl-C, timeout)


class RuntimeSession(Protocol):
    name: str
    facts: dict

    def out_dir_in_instance(self, host_out: Path) -> str: ...
    def path(self, name: str, trial_dir: Path, load: Load) -> contextlib.AbstractContextManager[PathHandle]: ...
    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> Running: ...


# ---- native -------------------------------------------------------------------

def _cgroup_root() -> Path:
    """Where native instances get a cgroup of their own (v1: the pids hierarchy)."""
    v1 = Path("/sys/fs/cgroup/pids")
    return v1 if v1.is_dir() else Path("/sys/fs/cgroup")


@undo_action("native_cgroup")
def _undo_native_cgroup(data: dict) -> None:
    """Kill every process in the instance's cgroup: fio's job processes leave its process
    group, and are reparented when the parent dies, so only the cgroup finds them all."""
    path = Path(data["path"])
    for _ in range(100):
        try:
            pids = [int(x) for x in (path / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)  # the file systems below stay busy until they are gone
    with contextlib.suppress(OSError):
        path.rmdir()


def _join_cgroup(path: Path):
    def join():  # runs in the child before exec
        (path / "cgroup.procs").write_text(str(os.getpid()))
    return join


class NativeRunning:
    def __init__(self, requests: list[InstanceRequest], journal=None):
        self.requests, self.journal = requests, journal
        self.cgroups = [{} for _ in requests]
        self.procs: list[subprocess.Popen] = []
        self.starts: list[float] = []
        self.groups: list[tuple[int | None, Path]] = []

    def go(self) -> float:
        t = time.time()
        for r in self.requests:
            cg = _cgroup_root() / f"strata-native-{os.getpid()}-{time.time_ns()}"
            seq = self.journal.intent("native_cgroup", path=str(cg)) if self.journal else None
            try:
                cg.mkdir()
                self.groups.append((seq, cg))
                join = _join_cgroup(cg)
            except OSError:  # not root (unit tests): a process group is all we get
                join = None
                if seq:
                    self.journal.release(seq)
            self.starts.append(time.time())
            self.procs.append(subprocess.Popen(r.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                               start_new_session=True, preexec_fn=join))
        return t

    def wait(self, timeout_s: float) -> list[InstanceOutput]:
        deadline = time.time() + timeout_s
        outs = []
        for i, (r, p) in enumerate(zip(self.requests, self.procs)):
            try:
                _, err = p.communicate(timeout=max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.stop()
                raise TrialFailure("timeout", f"instance {i} still ran {timeout_s:.0f} s after its expected end")
            outs.append(InstanceOutput(i, r.out_dir, p.returncode, err or "", self.starts[i], time.time()))
        return outs

    def stop(self) -> None:
        for seq, cg in self.groups:
            _undo_native_cgroup({"path": str(cg)})
            if seq:
                self.journal.release(seq)
        self.groups = []
        for p in self.procs:
            p.poll() is None and p.wait()


class NativeSession:
    """Processes on the host, doing I/O on the mount point (or the raw device)."""
    name = "native"

    def __init__(self, mounted: Mounted, journal=None):
        self.mounted, self.journal = mounted, journal
        self.facts = {"runtime": "native"}

    def out_dir_in_instance(self, host_out: Path) -> str:
        return str(host_out)

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        if name == "device":
            yield PathHandle(name, "device", self.mounted.device.path, self.mounted.device.path)
            return
        if name == "tmpfs":
            raise Unsupported("the native runtime has no tmpfs path; use a container runtime")
        d = self.mounted.mountpoint / "strata-data"
        d.mkdir(exist_ok=True)
        try:
            yield PathHandle(name, "dir", str(d), str(d))
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def start(self, requests, handle, load, sync_dir) -> NativeRunning:
        return NativeRunning(requests, self.journal)


@contextlib.contextmanager
def provision_native(runtime, mounted: Mounted, journal, workdir: Path, host: dict):
    yield NativeSession(mounted, journal)


def target_for(session: RuntimeSession, handle: PathHandle, host_out: Path) -> Target:
    return Target(handle.target_kind, handle.target_path, session.out_dir_in_instance(host_out))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
