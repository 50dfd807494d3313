"""Processes on the host, each in cgroups of its own, behind the start barrier.

The native runtime runs its instances this way, and a workload whose client
runs outside the stack under test (the YCSB client against a database in a
container) runs its clients this way. Each process gets a cgroup in every v1
hierarchy (or one v2 cgroup): the collectors read its CPU, memory and I/O
there, and teardown finds every process in it (fio's job processes leave its
process group and are reparented when the parent dies; only the cgroup finds
them all).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from strata.collectors.cgroup import oom_kills
from strata.core import release
from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput, InstanceRequest, Watch
from strata.core.jsondoc import JsonObject
from strata.stack.journal import Journal, Undos, need, strings
from strata.stack.procfs import cgroup_hierarchies

POLL_S = 0.1
CONTROLLERS = ("pids", "cpu", "cpuacct", "memory", "blkio")


def cgroup_parents() -> dict[str, Path]:
    """controller -> the hierarchy's mount point to make our cgroups in ("unified" for v2)."""
    out: dict[str, Path] = {}
    for key, (mountpoint, _) in cgroup_hierarchies().items():
        if key == "":
            out.setdefault("unified", mountpoint)
        for c in key.split(","):
            if c in CONTROLLERS:
                out.setdefault(c, mountpoint)
    return out


def _undo_cgroup(data: JsonObject) -> None:
    """Kill every process in the cgroups, then remove them (works from the journal entry alone)."""
    paths = [Path(p) for p in strings(data, "paths", []) or [need(data, "path")]]
    for _ in range(100):
        pids: set[int] = set()
        for path in paths:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in (path / "cgroup.procs").read_text().split())
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)  # the file systems below stay busy until they are gone
    for path in paths:
        with contextlib.suppress(OSError):
            path.rmdir()


def _join(dirs: list[Path]) -> Callable[[], None]:
    def join() -> None:  # runs in the child before exec
        for d in dirs:
            (d / "cgroup.procs").write_text(str(os.getpid()))

    return join


class HostProcesses:
    """instances.Running over host processes: prepare, ready, go, wait, stop."""

    def __init__(
        self,
        requests: list[InstanceRequest],
        journal: Journal | None = None,
        stdout_to_file: bool = False,
        sync_dir: Path | None = None,
    ) -> None:
        self.requests, self.journal = requests, journal
        self.stdout_to_file, self.sync_dir = stdout_to_file, sync_dir
        self.cgroups: list[dict[str, str]] = [{} for _ in requests]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.starts: dict[int, float] = {}
        self.groups: list[tuple[int | None, list[Path]]] = []
        self.made: dict[int, list[Path]] = {}

    def _cgroup(self, i: int) -> list[Path]:
        """Make instance i's cgroups (journaled first); [] when not root (unit tests)."""
        name = f"strata-native-{os.getpid()}-{time.time_ns()}-{i}"
        parents = cgroup_parents()
        dirs = {c: parents[c] / name for c in parents}
        paths = sorted(set(dirs.values()))
        seq = self.journal.intent("native_cgroup", paths=[str(p) for p in paths]) if self.journal else None
        try:
            for p in paths:
                p.mkdir()
        except OSError:
            _undo_cgroup({"paths": [str(p) for p in paths]})
            if seq and self.journal:
                self.journal.release(seq)
            return []
        self.groups.append((seq, paths))
        self.cgroups[i] = {c: str(d) for c, d in dirs.items()}
        return paths

    def ready(self, timeout_s: float) -> None:
        """Every instance's `prepare` step, in parallel; then the instances that hold the barrier themselves
        are started and must say they are ready (after their own setup, outside the measured window)."""
        self._prepare(timeout_s)
        tools = [(i, r) for i, r in enumerate(self.requests) if r.barrier == "tool"]
        for i, r in tools:
            (r.out_dir / "ready").unlink(missing_ok=True)
            self._launch(i, r)
        deadline = time.monotonic() + timeout_s
        for i, r in tools:
            while not (r.out_dir / "ready").exists():
                if self.procs[i].poll() is not None:
                    raise TrialFailure(
                        "prepare",
                        f"instance {i} exited {self.procs[i].returncode} before it was ready",
                        (r.out_dir / "stderr").read_text(errors="replace")[-4000:],
                    )
                if time.monotonic() > deadline:
                    self.stop()
                    raise TrialFailure("timeout", f"instance {i} was not ready {timeout_s:.0f} s after it started")
                time.sleep(0.02)

    def _prepare(self, timeout_s: float) -> None:
        todo = [r for r in self.requests if r.prepare]
        if not todo:
            return

        def prep(r: InstanceRequest) -> tuple[InstanceRequest, subprocess.CompletedProcess[str]]:
            assert r.prepare is not None  # todo holds the requests with a prepare step
            return r, subprocess.run(r.prepare, capture_output=True, text=True, timeout=timeout_s)

        try:
            with concurrent.futures.ThreadPoolExecutor(min(16, len(todo))) as pool:
                done = list(pool.map(prep, todo))
        except subprocess.TimeoutExpired:
            raise TrialFailure("timeout", f"preparing the instances took longer than {timeout_s:.0f} s")
        for r, cp in done:
            (r.out_dir / "prepare.log").write_text(cp.stdout + cp.stderr)
            if cp.returncode != 0:
                raise TrialFailure(
                    "prepare", f"instance {r.index}: its prepare step exited {cp.returncode}", cp.stderr[-4000:]
                )

    def go(self) -> float:
        """Release the instances that wait themselves (`go` names their start) and launch the others then."""
        at = release.release(self.sync_dir) if self.sync_dir is not None else time.time()
        held = [(i, r) for i, r in enumerate(self.requests) if i not in self.procs]
        if held:
            release.sleep_until(at)
        for i, r in held:
            self._launch(i, r)
        return at

    def _launch(self, i: int, r: InstanceRequest) -> None:
        dirs = self._cgroup(i)
        # files, not pipes: nobody reads a pipe while the instance runs, and a full one would block it
        out = open(r.out_dir / "stdout", "w") if self.stdout_to_file else subprocess.DEVNULL
        with open(r.out_dir / "stderr", "w") as err:
            self.starts[i] = time.time()
            try:
                self.procs[i] = subprocess.Popen(
                    r.argv, stdout=out, stderr=err, start_new_session=True, preexec_fn=_join(dirs) if dirs else None
                )
            finally:
                if not isinstance(out, int):  # a file, not subprocess.DEVNULL
                    out.close()

    def wait(self, timeout_s: float, watch: Watch | None = None) -> list[InstanceOutput]:
        deadline = time.monotonic() + timeout_s
        ends: dict[int, float] = {}
        while len(ends) < len(self.procs):
            for i, p in self.procs.items():
                if i not in ends and p.poll() is not None:
                    ends[i] = time.time()
            if len(ends) == len(self.procs):
                break
            failure = watch() if watch else None
            if failure or time.monotonic() > deadline:
                self.stop()
                if failure:
                    raise TrialFailure(*failure)
                raise TrialFailure("timeout", f"instance(s) still ran {timeout_s:.0f} s after their expected end")
            time.sleep(POLL_S)
        outs = []
        for i, r in enumerate(self.requests):
            err = (r.out_dir / "stderr").read_text(errors="replace")[-8000:]
            outs.append(InstanceOutput(i, r.out_dir, self.procs[i].returncode, err, self.starts[i], ends[i]))
        return outs

    def check(self, watch: Watch | None = None) -> None:
        """instances.Running.check: an ended process (before it was asked to stop) or a dead layer."""
        failure = watch() if watch else None
        if failure:
            raise TrialFailure(*failure)
        for i, p in self.procs.items():
            if p.poll() is not None:
                r = self.requests[i]
                f = r.out_dir / "stderr"
                err = f.read_text(errors="replace")[-4000:] if f.exists() else ""
                oom = any(oom_kills(cg) for cg in self.cgroups[i : i + 1] if cg)
                raise TrialFailure(
                    "oom" if oom else "instance_died",
                    f"instance {i} ended with code {p.returncode} while it should have run"
                    + (" (the OOM killer struck in its cgroup)" if oom else ""),
                    err,
                )

    def stop(self) -> None:
        for seq, paths in self.groups:
            _undo_cgroup({"paths": [str(p) for p in paths]})
            if seq and self.journal:
                self.journal.release(seq)
        self.groups = []
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "native_cgroup": _undo_cgroup,
}
