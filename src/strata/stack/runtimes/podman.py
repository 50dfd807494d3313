"""`podman:DRIVER`: rootful Podman with a private store on the file system under test.

Podman has no daemon: every call is a `podman` process with strata's own `--root` (images, layers,
volumes: on the file system under test, as a private dockerd's data-root), `--runroot` (under /run),
`--storage-driver`, the cgroupfs manager and a cgroup parent of its own, so that the containers are
strata's and findable after a crash. Everything above the client call is the docker session's: the
same paths, limits, start barrier, wrapper, collectors and images (a `docker save` tarball loads into
Podman as it is).

Without CAP_SYS_RESOURCE (this VM) the OCI runtime cannot raise a container's rlimits to their
defaults, and every start fails with "error setting rlimits": strata then passes explicit limits below
the host's (`--ulimit nofile=20000:20000 --ulimit nproc=4096:4096`) and records that in the facts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Iterator, Literal, Self

from pydantic import Field, model_validator

from strata.core.errors import StrataError, Unsupported
from strata.core.jsondoc import JsonObject, text
from strata.core.params import Strict
from strata.core.proc import CommandError
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal, Undos, need
from strata.stack.procfs import (
    cgroup_dirs,
    cgroup_pids,
    exe_name,
    fs_failure,
    procs_using,
    remove_cgroups,
    remove_tree,
    remove_tree_unless_failing,
    signal_and_wait,
    unmount_under,
)
from strata.stack.runtimes.docker.client import STDERR_TAIL_CHARS
from strata.stack.runtimes.docker.runtime import ContainerEngine
from strata.stack.runtimes.docker.session import DockerSession

PODMAN = "podman"
CONF_NAME = "containers.conf"
RUN_ROOT = Path("/run/strata")
Driver = Literal["overlay", "vfs", "btrfs", "zfs", "devicemapper", "aufs"]
DRIVERS: tuple[Driver, ...] = ("overlay", "vfs", "btrfs", "zfs", "devicemapper", "aufs")
CAP_SYS_RESOURCE = 24
ULIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096")
# The client's environment: no registry can be reached by anything podman does on its own (the network rule).
CLIENT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
}


class PodmanParams(Strict):
    """Containers of rootful Podman with a private store on the file system under test."""

    type: Literal["podman"] = "podman"
    storage_driver: Driver = Field(default="overlay", description="Podman's storage driver")
    name: str = Field(default="", description="default: podman:DRIVER")

    @model_validator(mode="after")
    def _name(self) -> Self:
        if not self.name:
            object.__setattr__(self, "name", f"podman:{self.storage_driver}")
        return self


def global_args(data: dict[str, str]) -> list[str]:
    """The options of every podman call on one private store."""
    return [
        "--root",
        data["root"],
        "--runroot",
        data["runroot"],
        "--storage-driver",
        data["driver"],
        "--cgroup-manager",
        "cgroupfs",
        "--events-backend",
        "file",
        "--tmpdir",
        str(Path(data["runroot"]) / "libpod"),
    ]


def client_env(data: dict[str, str]) -> dict[str, str]:
    """CLIENT_ENV, and the store's own containers.conf once it is written (see `write_conf`)."""
    conf = Path(data["runroot"]) / CONF_NAME
    return {**CLIENT_ENV, "CONTAINERS_CONF": str(conf)} if conf.exists() else dict(CLIENT_ENV)


def write_conf(data: dict[str, str]) -> None:
    """File locks in the store's run root instead of Podman's one shared-memory lock table
    (/dev/shm/libpod_lock, shared by every store on the host and the user's own podman): a
    client killed while it holds a lock, or a `podman wait` left blocked on the lock of a container
    `rm` freed, then blocks nothing but this store, and the kernel drops a killed holder's flock. An image's
    temporary copy goes to the store too, not to /var/tmp, where a `podman load` killed mid-copy left its
    blobs (hundreds of MiB each; found by bench/chaos.py), and is removed with the store."""
    tmp = Path(data["root"]) / "tmp"  # an image's copy, in the store: a killed `podman load` leaves none in /var/tmp
    tmp.mkdir(parents=True, exist_ok=True)
    (Path(data["runroot"]) / CONF_NAME).write_text(f'[engine]\nlock_type = "file"\nimage_copy_tmp_dir = "{tmp}"\n')


def podman(
    data: dict[str, str], *args: str, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    argv = [PODMAN, *global_args(data), *args]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=client_env(data))
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f} s")
    if check and cp.returncode != 0:
        raise CommandError(argv, cp.returncode, cp.stderr.strip() or cp.stdout.strip())
    return cp


def needs_ulimits() -> bool:
    """Whether this process lacks CAP_SYS_RESOURCE (then containers need explicit rlimits)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        eff = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("CapEff:"))
        return not (int(eff.split()[1], 16) >> CAP_SYS_RESOURCE) & 1
    return True


def _undo_store(data: JsonObject) -> str | None:
    store = {k: need(data, k) for k in ("root", "runroot", "cgroup_parent")}
    return _remove_store(store | {"driver": text(data, "driver")})  # the driver: only to ask podman itself


def _remove_store(data: dict[str, str]) -> str | None:
    """Remove every container, mount, process, cgroup and file of a private store, from the journal entry.
    When the file system that holds the store fails, everything but the store's files still goes."""
    broken = fs_failure(Path(data["root"]))
    # Clients of a killed strata (a `podman wait` on its containers) go first: they are orphans.
    signal_and_wait([p for p in procs_using(data["runroot"]) if exe_name(p) == PODMAN], signal.SIGKILL, 5)
    if shutil.which(PODMAN) and not broken and Path(data["root"]).exists():
        with contextlib.suppress(CommandError):
            podman(data, "rm", "-af", "-t", "0", check=False, timeout=120)
    cgroups = cgroup_dirs(data["cgroup_parent"])
    for _ in range(5):
        pids = cgroup_pids(cgroups)
        if not pids:
            break
        signal_and_wait(sorted(pids), signal.SIGKILL, 5)
    for path in (data["root"], data["runroot"]):
        signal_and_wait(procs_using(path), signal.SIGKILL, 5)
    for path in (data["root"], data["runroot"]):
        unmount_under(path)
    remove_cgroups(cgroup_dirs(data["cgroup_parent"]))
    remove_tree(Path(data["runroot"]))
    return remove_tree_unless_failing(Path(data["root"]))


class PodmanSession(DockerSession):
    """The docker session's paths, barrier and containers over podman calls on a private store."""

    engine = "podman"

    def __init__(
        self, params: PodmanParams, mounted: Mounted, journal: Journal, data: dict[str, str], facts: JsonObject
    ):
        super().__init__(params.name, mounted, journal, data["runroot"], data["id"], None, facts)
        self.data = data
        self.ulimits = needs_ulimits()

    @property
    def private(self) -> bool:
        return True

    def docker(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return podman(self.data, *args, check=check, timeout=timeout)

    def client_argv(self, *args: str) -> list[str]:
        return [PODMAN, *global_args(self.data), *args]

    def client_env(self) -> dict[str, str]:
        return client_env(self.data)

    def alive(self) -> bool:
        return True  # no daemon to die: each call is its own process

    def watch(self) -> tuple[str, str] | None:
        return None

    def create_extra(self) -> tuple[str, ...]:
        return ULIMITS if self.ulimits else ()


class Podman(ContainerEngine[PodmanParams]):
    """Docker's plugin (ContainerEngine) over a private Podman store: its own checks, doctor and store."""

    name = "podman"
    params = PodmanParams
    undo: Undos = {**ContainerEngine.undo, "podman-store": _undo_store}

    def available(self, host: JsonObject, params: PodmanParams | None = None) -> str | None:
        if os.geteuid() != 0:
            return "needs root (strata runs rootful Podman)"
        if not shutil.which(PODMAN):
            return "podman is not installed (apt-get install podman)"
        if (
            params is not None
            and params.storage_driver == "btrfs"
            and "btrfs" not in Path("/proc/filesystems").read_text().split()
        ):
            return "the kernel has no btrfs"
        return None

    def impossible(self, params: PodmanParams, fs: FilesystemParams) -> str | None:
        if params.storage_driver == "btrfs" and fs.type != "btrfs":
            return f"the btrfs storage driver needs its store on a btrfs file system, not {fs.type}"
        return None

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]:
        """Each driver: Podman's own answer on a scratch store (cheap: no daemon to start)."""
        rows = []
        for driver in DRIVERS:
            reason = self.available(host, PodmanParams(storage_driver=driver))
            if reason is None and probe:
                reason = probe_driver(driver)
            rows.append((f"podman:{driver}", reason))
        return rows

    @contextlib.contextmanager
    def provision(
        self, params: PodmanParams, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> Iterator[PodmanSession]:
        reason = self.available(host, params)
        if reason:
            raise Unsupported(reason)
        with store(params.storage_driver, mounted, journal, workdir) as (data, facts):
            session = PodmanSession(params, mounted, journal, data, facts)
            if session.ulimits:
                facts["ulimits"] = " ".join(ULIMITS[1::2]) + " (no CAP_SYS_RESOURCE: the defaults cannot be set)"
            try:
                yield session
            finally:
                session.close()


@contextlib.contextmanager
def store(
    driver: str, mounted: Mounted | None, journal: Journal, workdir: Path
) -> Iterator[tuple[dict[str, str], JsonObject]]:
    """A private Podman store (journaled first); yields (data, facts) once Podman accepts it."""
    sid = secrets.token_hex(4)
    base = mounted.mountpoint if mounted is not None and mounted.mountpoint is not None else workdir / f"podman-{sid}"
    data: dict[str, str] = {
        "id": sid,
        "driver": driver,
        "root": str(base / "podman"),
        "runroot": str(RUN_ROOT / f"p-{sid}"),
        "cgroup_parent": f"strata-podman-{sid}",
    }
    seq = journal.intent("podman-store", **data)
    try:
        Path(data["root"]).mkdir(parents=True, exist_ok=True)
        Path(data["runroot"]).mkdir(parents=True, exist_ok=True)
        write_conf(data)
        yield data, _facts(data)
    finally:
        _remove_store(data)
        if mounted is None or mounted.mountpoint is None:
            with contextlib.suppress(OSError):
                base.rmdir()
        journal.release(seq)


def _facts(data: dict[str, str]) -> JsonObject:
    """Podman's own view of the store; its error text when it refuses the driver (stored as unsupported)."""
    fmt = (
        "{{.Version.Version}}|{{.Store.GraphDriverName}}|{{.Store.GraphRoot}}|{{.Host.CgroupManager}}|"
        "{{.Host.OCIRuntime.Name}}"
    )
    cp = podman(data, "info", "--format", fmt, check=False, timeout=120)
    if cp.returncode != 0:
        raise Unsupported((cp.stderr or cp.stdout).strip()[-STDERR_TAIL_CHARS:].removeprefix("Error: "))
    version, driver, root, manager, oci = (cp.stdout.strip().split("|") + [""] * 5)[:5]
    backing = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", root], capture_output=True, text=True
    ).stdout.strip()
    locks = Path(data["runroot"]) / "libpod" / "locks"  # where `write_conf` put them, if Podman took it
    return {
        "runtime": "podman",
        "podman_version": version,
        "storage_driver": driver,
        "data_root": root,
        "backing_fs": backing,
        "cgroup_manager": manager,
        "oci_runtime": oci,
        "cgroup_parent": data["cgroup_parent"],
        "locks": str(locks) if locks.is_dir() else "shared memory (/dev/shm/libpod_lock)",
    }


def probe_driver(driver: str) -> str | None:
    """Podman's answer for `driver` on a scratch store under /var/tmp (None: it works)."""
    journal = Journal(f"probe-podman-{driver}-{secrets.token_hex(2)}")
    try:
        with store(driver, None, journal, Path("/var/tmp/strata-doctor")):
            return None
    except Unsupported as e:
        return str(e)
    except StrataError as e:
        return e.message()
    finally:
        journal.close()
        with contextlib.suppress(OSError):  # the scratch folder, once empty
            Path("/var/tmp/strata-doctor").rmdir()


PODMAN_RUNTIME = Podman()
