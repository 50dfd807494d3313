"""Docker runtime: containers on a private dockerd per (file system, storage driver), or the user's own.

The session (`provision_docker`) brings up the daemon (`dockerd`, which keeps
its data-root on the file system under test) and, per trial, prepares a path
(layer, volume, bind, tmpfs or the raw device) and runs the instances as
containers held at a start barrier (`WRAPPER`). Containers run with
`--network none` and `--pull never`; their output goes to files in the
instance's out dir, never to container logs on the data-root.

Everything is journaled before it is made: containers, volumes and images
loaded into the user's daemon have undo actions here, the daemon its own in
`dockerd`; importing this module registers them all (`strata cleanup`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import re
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from strata.collectors.cgroup import final_counters, final_sections
from strata.errors import StrataError, TrialFailure
from strata.proc import CommandError
from strata.spec.model import Filesystem, Limits, LoopDevice, Load, Runtime
from strata.stack.dockerd import (STDERR_TAIL_CHARS, SYSTEM_SOCKET, Daemon, answers, available, client_argv,
                                  client_env, daemon_facts, docker, private_daemon)
from strata.stack.filesystem import Mounted
from strata.stack.image import ensure_image
from strata.stack.journal import Journal, undo_action
from strata.stack.procfs import host_cgroups, prime_blkio, remove_tree
from strata.stack.runtime import OUT_DIR, SYNC_DIR, InstanceRequest, PathHandle, Unsupported
from strata.workloads.base import InstanceOutput

# Reached through this module by callers and the integration tests (`dk.incompatible`, `dk.mounts_under`, ...).
from strata.stack.dockerd import incompatible  # noqa: F401
from strata.stack.procfs import cgroup_dirs, cgroup_pids, mounts_under, procs_mentioning  # noqa: F401
from strata.stack.procfs import is_running as _running  # noqa: F401

DEVICE_IN_CONTAINER = "/dev/strata-dev"
DATA_IN_CONTAINER = "/data"
CREATE_PARALLEL = 8

# Counters each container copies from its own cgroup before it exits (the host
# directory disappears with the container). v1 names first, then v2 names.
CGROUP_FINAL_FILES = (
    "cpuacct/cpuacct.usage", "cpu/cpu.stat", "memory/memory.usage_in_bytes", "memory/memory.max_usage_in_bytes",
    "memory/memory.failcnt", "memory/memory.oom_control", "blkio/blkio.throttle.io_service_bytes",
    "blkio/blkio.throttle.io_serviced",
    "cpu.stat", "memory.current", "memory.peak", "memory.events", "io.stat",
)

# The barrier and timing wrapper each container runs as `sh -c WRAPPER strata-wrap ARGV...`.
# Output goes to files in the out dir (not to container logs, which would be
# written to the data-root on the file system under test during the measurement).
WRAPPER = f"""exec >{OUT_DIR}/stdout 2>{OUT_DIR}/stderr
while [ ! -e {SYNC_DIR}/go ]; do sleep 0.005; done
date +%s.%N >{OUT_DIR}/start
"$@"
rc=$?
date +%s.%N >{OUT_DIR}/end
for f in {' '.join(CGROUP_FINAL_FILES)}; do
  if [ -r /sys/fs/cgroup/$f ]; then echo "== $f"; cat /sys/fs/cgroup/$f; fi
done >{OUT_DIR}/cgroup-final.txt
exit $rc
"""



# ---- undo (the daemon's own is in dockerd) ----------------------------------------

@undo_action("container")
def _undo_container(data: dict) -> None:
    sock = data["socket"]
    if not answers(sock):
        if sock == SYSTEM_SOCKET:
            raise StrataError(f"the docker daemon at {sock} does not answer; container {data['name']} may remain",
                              "start the daemon and run `strata cleanup` again")
        return  # a private daemon: its own undo kills what ran in its cgroups
    docker(sock, "rm", "-f", "-v", data["name"], check=False, timeout=120)


@undo_action("volume")
def _undo_volume(data: dict) -> None:
    sock = data["socket"]
    if sock != SYSTEM_SOCKET and not answers(sock):
        return  # gone with the private daemon's data-root
    r = docker(sock, "volume", "rm", "-f", data["name"], check=False, timeout=120)
    if r.returncode != 0 and "no such volume" not in r.stderr.lower():
        raise CommandError(["docker", "volume", "rm", data["name"]], r.returncode, r.stderr)


@undo_action("docker-image")
def _undo_image(data: dict) -> None:
    """An image strata loaded into the user's own daemon (a private daemon's go with its data-root)."""
    if answers(data["socket"]):
        docker(data["socket"], "rmi", data["tag"], check=False, timeout=120)


# ---- command lines ------------------------------------------------------------

def path_args(handle: PathHandle, index: int, device_path: str) -> list[str]:
    inst = handle.per_instance[index] if index < len(handle.per_instance) else {}
    if handle.name == "layer":
        return []
    if handle.name == "volume":
        return ["--mount", f"type=volume,src={inst['volume']},dst={DATA_IN_CONTAINER}"]
    if handle.name == "bind":
        return ["--mount", f"type=bind,src={inst['dir']},dst={DATA_IN_CONTAINER}"]
    if handle.name == "tmpfs":
        return ["--tmpfs", DATA_IN_CONTAINER]
    if handle.name == "device":
        return ["--device", f"{device_path}:{DEVICE_IN_CONTAINER}"]
    raise ValueError(f"unknown path {handle.name}")


def limit_args(limits: Limits, device_path: str) -> list[str]:
    args: list[str] = []
    if limits.cpus is not None:
        args += ["--cpus", f"{limits.cpus:g}"]
    if limits.memory is not None:
        args += ["--memory", str(limits.memory), "--memory-swap", str(limits.memory)]  # no swap
    for key, flag in (("read_bps", "--device-read-bps"), ("write_bps", "--device-write-bps"),
                      ("read_iops", "--device-read-iops"), ("write_iops", "--device-write-iops")):
        value = getattr(limits, key)
        if value is not None:
            args += [flag, f"{device_path}:{value}"]
    return args


def create_argv(name: str, run_id: str, request: InstanceRequest, handle: PathHandle, limits: Limits,
                device_path: str, image: str, sync_dir: Path) -> list[str]:
    for p in (request.out_dir, sync_dir):
        if "," in str(p):
            raise StrataError(f"{p}: docker --mount cannot take a path with a comma", "choose another results dir")
    return ["create", "--name", name, "--label", f"strata.run={run_id}", "--network", "none", "--pull", "never",
            "--log-driver", "none",
            "--mount", f"type=bind,src={request.out_dir},dst={OUT_DIR}",
            "--mount", f"type=bind,src={sync_dir},dst={SYNC_DIR}",
            *path_args(handle, request.index, device_path), *limit_args(limits, device_path),
            image, "/bin/sh", "-c", WRAPPER, "strata-wrap", *request.argv]


parse_cgroup_final = final_sections  # one parser of cgroup-final.txt (collectors/cgroup.py)


def _read_time(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-STDERR_TAIL_CHARS:]
    except OSError:
        return ""


def _safe(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", text)[:60]


# ---- containers ---------------------------------------------------------------

@dataclass
class Container:
    name: str
    seq: int
    request: InstanceRequest
    removed: bool = False


class DockerRunning:
    """Containers created, started and waiting at the barrier."""

    def __init__(self, session: "DockerSession", sync_dir: Path, limits: Limits):
        self.session = session
        self.sync_dir = sync_dir
        self.limits = limits
        self.containers: list[Container] = []
        self.cgroups: list[dict[str, str]] = []

    def go(self) -> float:
        t = time.time()
        (self.sync_dir / "go").touch()
        return t

    def wait(self, timeout_s: float) -> list[InstanceOutput]:
        codes = self._exit_codes(timeout_s)
        outputs, oom = [], []
        for c, code in zip(self.containers, codes):
            out = self._output(c, code)
            if out is None:
                oom.append(c.request.index)
                out = InstanceOutput(c.request.index, c.request.out_dir, code, _tail(c.request.out_dir / "stderr"))
            outputs.append(out)
        self.stop()
        if oom:
            raise TrialFailure("oom", f"instance(s) {oom} ran out of memory (limit {self.limits.memory} bytes) "
                                      f"and were killed by the OOM killer", outputs[oom[0]].stderr)
        return outputs

    def _exit_codes(self, timeout_s: float) -> list[int]:
        """`docker wait` for all, watching the daemon and the deadline."""
        s = self.session
        names = [c.name for c in self.containers]
        p = subprocess.Popen(client_argv(s.sock, "wait", *names), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=client_env())
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                out, err = p.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                died = s.daemon is not None and not s.daemon.alive()
                if died or time.monotonic() > deadline:
                    p.kill()
                    p.communicate()
                    if died:
                        self._daemon_died()
                    self.stop()
                    raise TrialFailure("timeout", f"{len(names)} container(s) still ran {timeout_s:.0f} s "
                                                  f"after their expected end")
        if p.returncode != 0:
            if not s.alive():
                self._daemon_died()
            self.stop()
            raise TrialFailure("runtime", f"docker wait failed: {err.strip()}")
        return [int(x) for x in out.split()]

    def _output(self, c: Container, code: int) -> InstanceOutput | None:
        """What one exited container left; None if the OOM killer struck in it."""
        state = json.loads(self.session.docker("inspect", "--format", "{{json .State}}", c.name).stdout)
        out_dir = c.request.out_dir
        final_file = out_dir / "cgroup-final.txt"
        counters = final_counters(final_file.read_text()) if final_file.exists() else {}
        if state.get("OOMKilled") or counters.get("oom_kills", 0) > 0:
            return None
        return InstanceOutput(c.request.index, out_dir, code, _tail(out_dir / "stderr"),
                              _read_time(out_dir / "start"), _read_time(out_dir / "end"))

    def _daemon_died(self) -> None:
        s = self.session
        code = s.daemon.proc.poll() if s.daemon else None
        log = s.daemon.log_tail() if s.daemon else ""
        with contextlib.suppress(Exception):
            self.stop()
        raise TrialFailure("daemon_died", f"dockerd ({s.name}) exited with code {code} during the trial", log)

    def stop(self) -> None:
        """Kill and remove every container of this run (idempotent)."""
        s = self.session
        live = [c for c in self.containers if not c.removed]
        if live and s.alive():
            try:
                r = s.docker("rm", "-f", "-v", *[c.name for c in live], check=False, timeout=180)
                gone = r.returncode == 0 or all("no such container" in l.lower() for l in r.stderr.splitlines())
            except CommandError:
                gone = False
            if not gone and s.daemon is None:
                # the user's daemon keeps them: leave the journal entries for `strata cleanup`
                raise StrataError(f"could not remove containers {[c.name for c in live]} from {s.sock}",
                                  "run `strata cleanup` once the docker daemon answers")
            # a private daemon's teardown kills whatever is left in its cgroups
        for c in live:
            c.removed = True
            s.journal.release(c.seq)
        with contextlib.suppress(ValueError):
            s.running.remove(self)


# ---- the session --------------------------------------------------------------

class DockerSession:
    """A docker daemon (private or the user's) with the stack's mounted file system under it."""

    def __init__(self, runtime: Runtime, mounted: Mounted, journal: Journal, sock: str, run_id: str,
                 daemon: Daemon | None, facts: dict):
        self.name = runtime.name
        self.mounted = mounted
        self.journal = journal
        self.sock = sock
        self.id = run_id
        self.daemon = daemon
        self.facts = facts
        self.image: str | None = None
        self.loaded_images: list[tuple[str, int]] = []   # (tag, journal seq), user's daemon only
        self.running: list[DockerRunning] = []
        self._count = 0

    @property
    def data_root(self) -> str:
        return self.facts.get("data_root", "")

    def docker(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return docker(self.sock, *args, **kw)

    def alive(self) -> bool:
        return self.daemon.alive() if self.daemon is not None else answers(self.sock)

    def out_dir_in_instance(self, host_out: Path) -> str:
        return OUT_DIR

    def _need_fs(self, name: str) -> Path:
        if self.mounted.mountpoint is None:
            raise Unsupported(f"the {name} path needs a file system on the device under test (this stack is raw)")
        return self.mounted.mountpoint

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        n = load.containers
        if name in ("layer", "tmpfs"):
            if name == "layer" and self.daemon is not None:
                self._need_fs(name)
            yield PathHandle(name, "dir", DATA_IN_CONTAINER, None, [{} for _ in range(n)])
        elif name == "device":
            if self.mounted.mountpoint is not None:
                raise Unsupported(f"the device path writes the raw device, which holds the mounted "
                                  f"{self.mounted.fs.type} of this stack: use filesystem raw")
            yield PathHandle(name, "device", DEVICE_IN_CONTAINER, self.mounted.device.path, [{} for _ in range(n)])
        elif name == "volume":
            if self.daemon is not None:
                self._need_fs(name)
            with self._volumes(trial_dir, n) as handle:
                yield handle
        elif name == "bind":
            with self._binds(trial_dir, n) as handle:
                yield handle
        else:
            raise Unsupported(f"unknown path {name}")

    @contextlib.contextmanager
    def _volumes(self, trial_dir: Path, n: int) -> Iterator[PathHandle]:
        made: list[dict] = []
        try:
            for i in range(n):
                vname = f"strata-{self.id}-{_safe(trial_dir.name)}-{i}"
                seq = self.journal.intent("volume", socket=self.sock, name=vname)
                made.append({"volume": vname, "seq": seq})
                self.docker("volume", "create", "--label", f"strata.run={self.id}", vname)
            yield PathHandle("volume", "dir", DATA_IN_CONTAINER, str(Path(self.data_root) / "volumes"), made)
        finally:
            for v in made:
                _undo_volume({"socket": self.sock, "name": v["volume"]})
                self.journal.release(v["seq"])

    @contextlib.contextmanager
    def _binds(self, trial_dir: Path, n: int) -> Iterator[PathHandle]:
        base = self._need_fs("bind") / "strata-bind" / _safe(trial_dir.name)
        dirs = [base / str(i) for i in range(n)]
        try:
            for d in dirs:
                d.mkdir(parents=True, exist_ok=True)
            yield PathHandle("bind", "dir", DATA_IN_CONTAINER, str(base), [{"dir": str(d)} for d in dirs])
        finally:
            remove_tree(base)
            with contextlib.suppress(OSError):
                base.parent.rmdir()

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> DockerRunning:
        sync_dir.mkdir(parents=True, exist_ok=True)
        (sync_dir / "go").unlink(missing_ok=True)
        running = DockerRunning(self, sync_dir, load.limits)
        self.running.append(running)
        try:
            if self.image is None:
                ensure_image(self)
            argvs = [self._journal_container(running, r, handle) for r in requests]  # journal first, one writer
            self._create_and_start(running, argvs)
        except (CommandError, OSError) as e:
            with contextlib.suppress(CommandError, StrataError):
                running.stop()
            if not self.alive():
                raise TrialFailure("daemon_died", f"dockerd ({self.name}) died while creating containers",
                                   self.daemon.log_tail() if self.daemon else "")
            raise TrialFailure("container_start", f"could not start the containers: {e}")
        return running

    def _journal_container(self, running: DockerRunning, request: InstanceRequest, handle: PathHandle) -> list[str]:
        """Name and journal one container before it exists; its `docker create` arguments."""
        request.out_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("start", "end", "stdout", "stderr", "cgroup-final.txt"):
            (request.out_dir / stale).unlink(missing_ok=True)
        self._count += 1
        name = f"strata-{self.id}-{self._count}"
        seq = self.journal.intent("container", socket=self.sock, name=name)
        running.containers.append(Container(name, seq, request))
        return create_argv(name, self.id, request, handle, running.limits, self.mounted.device.path,
                           self.image, running.sync_dir)

    def _create_and_start(self, running: DockerRunning, argvs: list[list[str]]) -> None:
        """Create the journaled containers, start them (to wait at the barrier) and find their cgroups."""
        # `docker create` takes ~0.3 s (seconds with vfs): create many at once
        with concurrent.futures.ThreadPoolExecutor(CREATE_PARALLEL) as pool:
            ids = list(pool.map(lambda argv: self.docker(*argv, timeout=600).stdout.strip(), argvs))
        for c, cid in zip(running.containers, ids):
            self.journal.update(c.seq, id=cid)
        names = [c.name for c in running.containers]
        self.docker("start", *names, timeout=600)
        pids = self.docker("inspect", "--format", "{{.State.Pid}}", *names).stdout.split()
        running.cgroups = [host_cgroups(int(p)) if int(p) > 0 else {} for p in pids]

    def close(self) -> None:
        """Remove our containers and (on the user's daemon) the images we loaded."""
        for r in list(self.running):
            r.stop()
        for tag, seq in self.loaded_images:
            _undo_image({"socket": self.sock, "tag": tag})
            self.journal.release(seq)
        self.loaded_images.clear()


# ---- provisioning -------------------------------------------------------------

@contextlib.contextmanager
def provision_docker(runtime: Runtime, mounted: Mounted, journal: Journal, workdir: Path,
                     host: dict) -> Iterator[DockerSession]:
    driver = runtime.storage_driver or "overlay2"
    if driver == "system":
        if not answers(SYSTEM_SOCKET):
            raise Unsupported(f"no docker daemon answers at {SYSTEM_SOCKET}")
        prime_blkio(mounted.device.path, f"strata-prime-{secrets.token_hex(4)}", remove=True)
        session = DockerSession(runtime, mounted, journal, SYSTEM_SOCKET, secrets.token_hex(4), None,
                                daemon_facts(SYSTEM_SOCKET, "system"))
        try:
            yield session
        finally:
            session.close()
        return
    reason = available(driver, host)
    if reason:
        raise Unsupported(reason)
    raw = mounted.mountpoint is None
    data_root = (workdir / f"docker-{driver}-{secrets.token_hex(3)}") if raw else mounted.mountpoint / "docker"
    with private_daemon(driver, data_root, journal, remove_data_root=raw,
                        prime_device=mounted.device.path) as daemon:
        facts = {**daemon_facts(daemon.sock, "private"), "daemon_start_s": round(daemon.start_s, 3),
                 "cgroup_parent": daemon.paths.cgroup_parent}
        session = DockerSession(runtime, mounted, journal, daemon.sock, daemon.paths.id, daemon, facts)
        try:
            yield session
        finally:
            session.close()


def probe_driver(driver: str, workdir: Path) -> str | None:
    """Really start a daemon with `driver` on a small loop file system (for `strata doctor`):
    None if it works, else the daemon's own error text."""
    from strata.stack.device import provision_loop
    from strata.stack.filesystem import provision as provision_fs

    reason = available(driver, {})
    if reason or driver == "system":
        return reason if reason or answers(SYSTEM_SOCKET) else f"no docker daemon answers at {SYSTEM_SOCKET}"
    tag = secrets.token_hex(3)
    journal = Journal(f"probe-{driver}-{tag}")
    fs_type = "btrfs" if driver == "btrfs" else "ext4"
    try:
        with provision_loop(LoopDevice(name=f"probe-{tag}", size=256 << 20), journal, workdir) as dev, \
                provision_fs(Filesystem(type=fs_type), dev, journal, workdir) as mounted, \
                provision_docker(Runtime(type="docker", storage_driver=driver), mounted, journal, workdir, {}):
            return None
    except Unsupported as e:
        return str(e)
    finally:
        journal.close()
