"""Containers of one trial: created and started (waiting at the barrier), released, waited for, removed.

Everything is journaled before it is made; the undo actions here remove a
container, a volume and an image loaded into the user's own daemon, from the
journal entry alone (`strata cleanup`). A container the OOM killer struck
ends the trial at once as `oom` (its memory cgroup's counter, or docker's
OOMKilled), never by the generic timeout.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from strata.collectors.cgroup import final_counters, oom_kills
from strata.core import release
from strata.core.errors import StrataError, TrialFailure
from strata.core.instances import InstanceOutput, InstanceRequest, Watch
from strata.core.jsondoc import JsonObject, as_obj
from strata.core.params import Limits
from strata.core.proc import CommandError
from strata.stack.journal import Journal, Undos, need
from strata.stack.runtimes.docker import client
from strata.stack.runtimes.docker.cmdline import PREPARE_FAILED
from strata.stack.runtimes.docker.daemon import Daemon

POLL_S = 0.5


class Engine(Protocol):
    """What the containers of a trial need of their session (docker's or podman's, session.py): its client,
    its daemon (none for podman or the user's own), its journal and the trials it runs."""

    engine: str  # the engine's name in messages: dockerd, podman
    name: str
    sock: str
    journal: Journal
    daemon: Daemon | None
    running: list[DockerRunning]

    @property
    def private(self) -> bool: ...  # strata's own store (a daemon's data-root, a podman store)

    def docker(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]: ...
    def client_argv(self, *args: str) -> list[str]: ...
    def client_env(self) -> dict[str, str]: ...
    def alive(self) -> bool: ...
    def died(self) -> bool: ...  # after a client error: the daemon's own state, given a moment to show


def undo_container(data: JsonObject) -> str | None:
    sock, name = need(data, "socket"), need(data, "name")
    if not client.answers(sock):
        if sock == client.SYSTEM_SOCKET:
            raise StrataError(
                f"the docker daemon at {sock} does not answer; container {name} may remain",
                "start the daemon and run `strata cleanup` again",
            )
        return f"no engine answers at {sock}: the undo of that engine (its daemon or store) stops what ran in it"
    r = client.docker(sock, "rm", "-f", "-v", name, check=False, timeout=120)
    # a container that stays (its layer on a file system that fails) would keep its volume in use
    if r.returncode != 0 and "no such container" not in r.stderr.lower():
        raise CommandError(["docker", "rm", "-f", "-v", name], r.returncode, r.stderr)
    return None


def undo_volume(data: JsonObject) -> str | None:
    sock, name = need(data, "socket"), need(data, "name")
    if sock != client.SYSTEM_SOCKET and not client.answers(sock):
        return f"no engine answers at {sock}: the volume is lost with that engine's data root"
    r = client.docker(sock, "volume", "rm", "-f", name, check=False, timeout=120)
    if r.returncode != 0 and "no such volume" not in r.stderr.lower():
        raise CommandError(["docker", "volume", "rm", name], r.returncode, r.stderr)
    return None


UNDO: Undos = {"container": undo_container, "volume": undo_volume}


def _final(out_dir: Path) -> dict[str, int | None]:  # collectors/cgroup.py final_counters
    f = out_dir / "cgroup-final.txt"
    return final_counters(f.read_text()) if f.exists() else {}


def read_time(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-client.STDERR_TAIL_CHARS :]
    except OSError:
        return ""


@dataclass
class Container:
    name: str
    seq: int
    request: InstanceRequest
    removed: bool = False


class DockerRunning:
    """instances.Running over the containers of one trial."""

    def __init__(self, session: Engine, sync_dir: Path, limits: Limits) -> None:
        self.session = session
        self.sync_dir = sync_dir
        self.limits = limits
        self.containers: list[Container] = []
        self.cgroups: list[dict[str, str]] = []

    def ready(self, timeout_s: float) -> None:
        """Wait until every container has run its prepare step (the `ready` file), or failed it."""
        deadline = time.monotonic() + timeout_s
        waiting = list(self.containers)
        while waiting:
            waiting = [c for c in waiting if not (c.request.out_dir / "ready").exists()]
            if not waiting:
                return
            gone = self._exited([c.name for c in waiting])
            if gone:
                c = next(c for c in waiting if c.name in gone)
                code = gone[c.name]
                oom_killed = self._state(c, check=False).get("OOMKilled")  # before stop() removes it
                self.stop()
                err = tail(c.request.out_dir / "stderr")
                if oom_killed:  # laying out its files under a memory limit: the page cache counts
                    raise self._oom([c.request.index], err)
                what = "its prepare step failed" if code == PREPARE_FAILED else f"it exited {code} before the start"
                raise TrialFailure("prepare", f"instance {c.request.index}: {what}", err)
            self._check_daemon()
            if time.monotonic() > deadline:
                self.stop()
                raise TrialFailure(
                    "timeout",
                    f"{len(waiting)} container(s) were not ready {timeout_s:.0f} s "
                    "after they started (preparing their files)",
                )
            time.sleep(0.05)

    def go(self) -> float:
        return release.release(self.sync_dir)

    def wait(self, timeout_s: float, watch: Watch | None = None) -> list[InstanceOutput]:
        codes = self._exit_codes(timeout_s, watch)
        outputs, oom = [], []
        for c, code in zip(self.containers, codes):
            try:
                out = self._output(c, code)
            except CommandError:  # `docker inspect` after the exit: the daemon may have died since
                self._check_daemon(after_error=True)
                raise
            if out is None:
                oom.append(c.request.index)
                out = InstanceOutput(c.request.index, c.request.out_dir, code, tail(c.request.out_dir / "stderr"))
            outputs.append(out)
        self.stop()
        if oom:
            raise self._oom(oom, outputs[oom[0]].stderr)
        return outputs

    def check(self, watch: Watch | None = None) -> None:
        """instances.Running.check: a container that ended (OOM-killed: `oom`), the daemon, the layers."""
        problem = self._problem(watch)
        if problem:
            raise problem
        gone = self._exited([c.name for c in self.containers if not c.removed])
        for c in self.containers:
            if c.name in gone:
                state = self._state(c, check=False)
                counters = _final(c.request.out_dir)
                err = tail(c.request.out_dir / "stderr")
                if state.get("OOMKilled") or (counters.get("oom_kills") or 0) > 0:
                    raise self._oom([c.request.index], err)
                raise TrialFailure(
                    "instance_died",
                    f"instance {c.request.index} (container {c.name}) ended with code {gone[c.name]} "
                    "while it should have run",
                    err,
                )

    def _state(self, c: Container, check: bool = True) -> JsonObject:
        """docker's State of the container (OOMKilled: the OOM killer struck any process of its cgroup)."""
        out = self.session.docker("inspect", "--format", "{{json .State}}", c.name, check=check).stdout
        return as_obj(json.loads(out or "{}"), "docker's State")

    def _oom(self, indexes: list[int], stderr: str = "") -> TrialFailure:
        return TrialFailure(
            "oom",
            f"instance(s) {indexes} ran out of memory (limit {self.limits.memory} bytes) "
            "and were killed by the OOM killer",
            stderr,
        )

    def _exited(self, names: list[str]) -> dict[str, int]:
        """Containers among `names` that are no longer running: name -> exit code."""
        r = self.session.docker(
            "inspect", "--format", "{{.Name}} {{.State.Running}} {{.State.ExitCode}}", *names, check=False, timeout=60
        )
        out = {}
        for line in r.stdout.splitlines():
            name, running, code = (line.strip().lstrip("/").split() + ["", "", ""])[:3]
            if running == "false":
                out[name] = int(code or 0)
        return out

    def _check_daemon(self, after_error: bool = False) -> None:
        """While polling, a glance at the daemon's process; after a client error, its death is waited for a
        moment (session.died), so that a killed daemon is named as such and not as the client's EOF."""
        s = self.session
        if s.daemon is not None and (s.died() if after_error else not s.daemon.alive()):
            self._daemon_died()

    def _exit_codes(self, timeout_s: float, watch: Watch | None) -> list[int]:
        """`docker wait` for all, watching the daemon, the OOM killer, the layers below and the deadline."""
        s = self.session
        names = [c.name for c in self.containers]
        if not names:
            return []
        p = subprocess.Popen(
            s.client_argv("wait", *names), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=s.client_env()
        )
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                out, err = p.communicate(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                problem = self._problem(watch)
                if problem or time.monotonic() > deadline:
                    p.kill()
                    p.communicate()
                    self._check_daemon()
                    self.stop()
                    raise problem or TrialFailure(
                        "timeout", f"{len(names)} container(s) still ran {timeout_s:.0f} s after their expected end"
                    )
        if p.returncode != 0:
            self._check_daemon(after_error=True)
            self.stop()
            raise TrialFailure("runtime", f"docker wait failed: {err.strip()}")
        return [int(x) for x in out.split()]

    def _problem(self, watch: Watch | None) -> TrialFailure | None:
        self._check_daemon()
        hit = [i for i, cg in enumerate(self.cgroups) if oom_kills(cg)]
        if hit:
            return self._oom(hit)
        failure = watch() if watch else None
        return TrialFailure(*failure) if failure else None

    def _output(self, c: Container, code: int) -> InstanceOutput | None:
        """What one exited container left; None if the OOM killer struck in it."""
        state = self._state(c)
        out_dir = c.request.out_dir
        final_file = out_dir / "cgroup-final.txt"
        counters = final_counters(final_file.read_text()) if final_file.exists() else {}
        if state.get("OOMKilled") or (counters.get("oom_kills") or 0) > 0:
            return None
        return InstanceOutput(
            c.request.index,
            out_dir,
            code,
            tail(out_dir / "stderr"),
            read_time(out_dir / "start"),
            read_time(out_dir / "end"),
        )

    def _daemon_died(self) -> None:
        s = self.session
        code = s.daemon.proc.poll() if s.daemon else None
        log = s.daemon.log_tail() if s.daemon else ""
        with contextlib.suppress(Exception):
            self.stop()
        how = f"exited with code {code}" if code is not None else "stopped answering on its socket"
        raise TrialFailure(
            "daemon_died",
            f"{s.engine} ({s.name}) {how} during the trial; strata starts it again for the next trial",
            log,
            layer="runtime",
        )

    def stop(self) -> None:
        """Kill and remove every container of this run (idempotent)."""
        s = self.session
        live = [c for c in self.containers if not c.removed]
        if live and s.alive():
            try:
                r = s.docker("rm", "-f", "-v", *[c.name for c in live], check=False, timeout=180)
                gone = r.returncode == 0 or all("no such container" in line.lower() for line in r.stderr.splitlines())
            except CommandError:
                gone = False
            if not gone and not s.private:
                # the user's daemon keeps them: leave the journal entries for `strata cleanup`
                raise StrataError(
                    f"could not remove containers {[c.name for c in live]} from {s.sock}",
                    "run `strata cleanup` once the docker daemon answers",
                )
            # a private daemon's teardown kills whatever is left in its cgroups
        for c in live:
            c.removed = True
            s.journal.release(c.seq)
        with contextlib.suppress(ValueError):
            s.running.remove(self)
