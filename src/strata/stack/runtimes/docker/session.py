"""The docker session: a daemon (private, or the user's own) with the file system under test below it.

Per trial it prepares a path (layer, volume, bind, tmpfs or the raw device)
and runs the instances as containers held at the start barrier
(cmdline.WRAPPER, containers.DockerRunning). A private daemon keeps its
data-root on the file system under test, so the storage driver's I/O lands on
the device being measured; `docker:system` uses the user's running daemon as
it is and removes only what strata created.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import secrets
import subprocess
import time
from pathlib import Path
from typing import Iterator

from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.instances import ImageSpec, InstanceRequest, Target
from strata.core.jsondoc import JsonObject
from strata.core.params import Load
from strata.core.proc import CommandError
from strata.stack.filesystems.base import Mounted
from strata.stack.journal import Journal
from strata.stack.paths import (
    DATA_IN_CONTAINER,
    DEVICE_IN_CONTAINER,
    LOG_IN_CONTAINER,
    OUT_DIR,
    SYNC_DIR,
    PathHandle,
    PerInstance,
    bind_dirs,
    need_fs,
    raw_device,
    safe_name,
)
from strata.stack.procfs import host_cgroups, prime_blkio
from strata.stack.runtimes.base import SetsUp
from strata.stack.runtimes.docker import client
from strata.stack.runtimes.docker.cmdline import create_argv, stage
from strata.stack.runtimes.docker.containers import Container, DockerRunning, undo_volume
from strata.stack.runtimes.docker.daemon import Daemon, available, private_daemon
from strata.stack.runtimes.docker.image import ensure_image, undo_image

CREATE_PARALLEL = 8
LOG_PATHS = ("volume", "bind", "tmpfs", "layer")  # where a server's log may go, beside its data (LogPaths)
DEVICE_UNDER_FS = (
    "the device path writes the raw device, which holds the mounted {fs} of this stack: use filesystem raw"
)


class DockerSession(SetsUp):
    """A docker daemon (private or the user's) with the stack's mounted file system under it."""

    engine = "dockerd"

    def __init__(
        self,
        name: str,  # the runtime's name in the spec (docker:overlay2, podman:vfs)
        mounted: Mounted,
        journal: Journal,
        sock: str,
        run_id: str,
        daemon: Daemon | None,
        facts: JsonObject,
    ) -> None:
        self.name = name
        self.mounted = mounted
        self.journal = journal
        self.sock = sock
        self.id = run_id
        self.daemon = daemon
        self.facts = facts
        self.images: dict[str, str] = {}  # image key -> tag present in the daemon
        self.setup_s = 0.0  # time spent loading images since the last trial took it (run/trial.py: not the budget's)
        self.loaded_images: list[tuple[str, int]] = []  # (tag, journal seq), user's daemon only
        self.running: list[DockerRunning] = []
        self._count = 0

    # the client, for this daemon
    def docker(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return client.docker(self.sock, *args, check=check, timeout=timeout)

    def client_argv(self, *args: str) -> list[str]:
        return client.client_argv(self.sock, *args)

    def client_env(self) -> dict[str, str]:
        return client.client_env()

    def alive(self) -> bool:
        return self.daemon.alive() if self.daemon is not None else client.answers(self.sock)

    def died(self) -> bool:
        """After a client error: whether the daemon died (a private one: its process and socket, daemon.died)."""
        return self.daemon.died() if self.daemon is not None else not self.alive()

    def watch(self) -> tuple[str, str] | None:
        if self.daemon is not None and not self.daemon.alive():
            return ("daemon_died", f"{self.engine} ({self.name}) exited with code {self.daemon.proc.poll()}")
        return None

    @property
    def private(self) -> bool:
        """strata's own store on the file system under test (not the user's daemon, left as it is)."""
        return self.daemon is not None

    @property
    def data_root(self) -> str:
        return str(self.facts.get("data_root", ""))

    def target(self, handle: PathHandle, host_out: Path) -> Target:
        return Target(handle.target_kind, handle.target_path, OUT_DIR, host_tools=False, sync_dir=SYNC_DIR)

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        n = load.containers
        if name in ("layer", "tmpfs"):
            if name == "layer" and self.private:
                need_fs(self.mounted, name)
            yield PathHandle(name, "dir", DATA_IN_CONTAINER, None, [{} for _ in range(n)])
        elif name == "device":
            dev = raw_device(self.mounted, DEVICE_UNDER_FS)
            yield PathHandle(name, "device", DEVICE_IN_CONTAINER, dev, [{} for _ in range(n)])
        elif name == "volume":
            if self.private:
                need_fs(self.mounted, name)
            with self._volumes(trial_dir, n) as handle:
                yield handle
        elif name == "bind":
            with bind_dirs(self.mounted, "strata-bind", trial_dir, n, DATA_IN_CONTAINER) as handle:
                yield handle
        else:
            raise Unsupported(f"the {self.name} runtime has no {name} path")

    @contextlib.contextmanager
    def log_path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        """A server's log on a path of its own, mounted at LOG_IN_CONTAINER beside the data (a second volume or
        bind mount, a tmpfs, or a directory of the container's layer): stack/runtimes/base.py LogSession."""
        n = load.containers
        if name not in LOG_PATHS:
            raise Unsupported(
                f"the {self.name} runtime gives a server's log the paths {', '.join(LOG_PATHS)}, not {name}"
            )
        if name in ("layer", "tmpfs"):
            if name == "layer" and self.private:
                need_fs(self.mounted, name)
            yield PathHandle(name, "dir", LOG_IN_CONTAINER, None, [{} for _ in range(n)])
        elif name == "volume":
            if self.private:
                need_fs(self.mounted, name)
            with self._volumes(trial_dir, n, "log", LOG_IN_CONTAINER) as handle:
                yield handle
        else:
            with bind_dirs(self.mounted, "strata-bind-log", trial_dir, n, LOG_IN_CONTAINER) as handle:
                yield handle

    @contextlib.contextmanager
    def _volumes(self, trial_dir: Path, n: int, tag: str = "", dst: str = DATA_IN_CONTAINER) -> Iterator[PathHandle]:
        made: list[tuple[str, int]] = []  # (volume, journal seq)
        try:
            for i in range(n):
                vname = f"strata-{self.id}-{safe_name(trial_dir.name)}-{tag + '-' if tag else ''}{i}"
                made.append((vname, self.journal.intent("volume", socket=self.sock, name=vname)))
                self.docker("volume", "create", "--label", f"strata.run={self.id}", vname)
            per = [PerInstance(volume=v, seq=seq) for v, seq in made]
            yield PathHandle("volume", "dir", dst, str(Path(self.data_root) / "volumes"), per)
        finally:
            for vname, seq in made:
                undo_volume({"socket": self.sock, "name": vname})
                self.journal.release(seq)

    def take_setup_s(self) -> float:
        """stack/runtimes/base.py SetsUp: the seconds spent loading images since the last trial took them."""
        spent, self.setup_s = self.setup_s, 0.0
        return spent

    def image_for(self, spec: ImageSpec | None) -> str:
        spec = spec or ImageSpec()
        key = spec.key()
        if key not in self.images:
            t0 = time.monotonic()
            self.images[key] = ensure_image(self, spec)
            self.setup_s += time.monotonic() - t0
        return self.images[key]

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> DockerRunning:
        sync_dir.mkdir(parents=True, exist_ok=True)
        (sync_dir / "go").unlink(missing_ok=True)
        running = DockerRunning(self, sync_dir, load.limits)
        self.running.append(running)
        if not requests:  # a host's part with no instance here (it runs only a server workload's clients)
            return running
        try:
            image = self.image_for(requests[0].image if requests else None)
            argvs = [self._journal_container(running, r, handle, image) for r in requests]  # journal first
            self._create_and_start(running, argvs)
        except (CommandError, OSError) as e:
            with contextlib.suppress(CommandError, StrataError):
                running.stop()
            if self.died():
                raise TrialFailure(
                    "daemon_died",
                    f"{self.engine} ({self.name}) died while creating containers",
                    self.daemon.log_tail() if self.daemon else "",
                    layer="runtime",
                )
            raise TrialFailure("container_start", f"could not start the containers: {e}")
        return running

    def _journal_container(
        self, running: DockerRunning, request: InstanceRequest, handle: PathHandle, image: str
    ) -> list[str]:
        """Name and journal one container before it exists; its `create` arguments."""
        stage(request)
        self._count += 1
        name = f"strata-{self.id}-{self._count}"
        seq = self.journal.intent("container", socket=self.sock, name=name)
        running.containers.append(Container(name, seq, request))
        return create_argv(
            name,
            self.id,
            request,
            handle,
            running.limits,
            self.mounted.device.path,
            image,
            running.sync_dir,
            self.create_extra(),
        )

    def create_extra(self) -> tuple[str, ...]:
        """Engine-specific `create` options (none for docker)."""
        return ()

    def _create_and_start(self, running: DockerRunning, argvs: list[list[str]]) -> None:
        """Create the journaled containers, start them (to prepare and wait at the barrier), find their cgroups."""
        # `create` takes ~0.3 s (seconds with vfs): create many at once
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
            undo_image({"socket": self.sock, "tag": tag})
            self.journal.release(seq)
        self.loaded_images.clear()


@contextlib.contextmanager
def _system_session(name: str, mounted: Mounted, journal: Journal) -> Iterator[DockerSession]:
    if not client.answers(client.SYSTEM_SOCKET):
        raise Unsupported(f"no docker daemon answers at {client.SYSTEM_SOCKET}")
    prime_blkio(mounted.device.path, f"strata-prime-{secrets.token_hex(4)}", remove=True)
    session = DockerSession(
        name,
        mounted,
        journal,
        client.SYSTEM_SOCKET,
        secrets.token_hex(4),
        None,
        client.daemon_facts(client.SYSTEM_SOCKET, "system"),
    )
    try:
        yield session
    finally:
        session.close()


@contextlib.contextmanager
def docker_session(
    name: str, driver: str, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
) -> Iterator[DockerSession]:
    """A session of strata's private daemon with `driver` (its data-root on the mounted file system, or in the
    workdir on a raw stack), or of the user's own daemon (`system`)."""
    if driver == "system":
        with _system_session(name, mounted, journal) as session:
            yield session
        return
    reason = available(driver, host)
    if reason:
        raise Unsupported(reason)
    raw = mounted.mountpoint is None
    data_root = (
        mounted.mountpoint / "docker"
        if mounted.mountpoint is not None
        else workdir / f"docker-{driver}-{secrets.token_hex(3)}"
    )
    with private_daemon(driver, data_root, journal, remove_data_root=raw, prime_device=mounted.device.path) as daemon:
        try:
            facts = {
                **client.daemon_facts(daemon.sock, "private"),
                "daemon_start_s": round(daemon.start_s, 3),
                "cgroup_parent": daemon.paths.cgroup_parent,
            }
        except CommandError as e:
            if daemon.died():
                raise TrialFailure(
                    "daemon_died", f"dockerd ({driver}) died as it started: {e}", daemon.log_tail(), layer="runtime"
                ) from None
            raise
        session = DockerSession(name, mounted, journal, daemon.sock, daemon.paths.id, daemon, facts)
        try:
            yield session
        finally:
            session.close()
