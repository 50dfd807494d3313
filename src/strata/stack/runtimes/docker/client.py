"""The docker client: the one way strata talks to a docker daemon (private or the user's).

Debian's client matches its daemon (20.10); a newer client on PATH also works.
The client's environment drops the variables that would point it elsewhere
than `-H`, so a user's DOCKER_HOST never redirects a measurement.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue, ShapeError, as_obj, text
from strata.core.proc import CommandError, sh

DEBIAN_CLI = "/usr/bin/docker"  # Debian's client, the daemon's own version
SYSTEM_SOCKET = "/var/run/docker.sock"
STDERR_TAIL_CHARS = 4000
# Client variables that would point the CLI somewhere else than `-H`.
CLIENT_ENV_DROP = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")
# Stored in the facts of every result on these drivers: their numbers need a second look.
CAVEATS = {
    "fuse-overlayfs": "fuse-overlayfs accepts O_DIRECT but does not honor it, and blkio throttles do not "
    "apply through it: layer-path numbers may come from the page cache",
    "vfs": "vfs copies every layer in full: container creation is slow and uses much space",
}


def docker_cli() -> str:
    """Debian's client matches the daemon (20.10); a newer client on PATH also works."""
    if os.access(DEBIAN_CLI, os.X_OK):
        return DEBIAN_CLI
    cli = shutil.which("docker")
    if not cli:
        raise StrataError("the docker client is not installed", "apt-get install docker.io")
    return cli


def client_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV_DROP}
    env.update(extra)
    return env


def client_argv(sock: str, *args: str) -> list[str]:
    return [docker_cli(), "-H", f"unix://{sock}", *args]


def docker(
    sock: str, *args: str, check: bool = True, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = client_argv(sock, *args)
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or client_env())
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f} s")
    if check and cp.returncode != 0:
        raise CommandError(argv, cp.returncode, cp.stderr.strip() or cp.stdout.strip())
    return cp


def answers(sock: str, timeout: float = 5) -> bool:
    if not os.path.exists(sock):
        return False
    try:
        return docker(sock, "version", "--format", "{{.Server.Version}}", check=False, timeout=timeout).returncode == 0
    except CommandError:
        return False


def info(sock: str) -> JsonObject:
    return as_obj(json.loads(docker(sock, "info", "--format", "{{json .}}", timeout=30).stdout), "docker info")


def daemon_facts(sock: str, kind: str) -> JsonObject:
    """What a result records about the daemon it ran on (`kind`: private or system)."""
    i = info(sock)
    status: JsonObject = {str(p[0]): p[1] for p in _pairs(i.get("DriverStatus"))}
    root = text(i, "DockerRootDir")
    backing = (
        text(status, "Backing Filesystem")
        or sh(["findmnt", "-n", "-o", "FSTYPE", "--target", root], check=False).stdout.strip()
    )
    facts: JsonObject = {
        "runtime": "docker",
        "daemon": kind,
        "socket": sock,
        "dockerd_version": i.get("ServerVersion"),
        "storage_driver": i.get("Driver"),
        "driver_status": status,
        "data_root": root,
        "backing_fs": backing,
        "cgroup_driver": i.get("CgroupDriver"),
        "cgroup_version": i.get("CgroupVersion"),
        "kernel": i.get("KernelVersion"),
        "warnings": i.get("Warnings") or [],
    }
    driver = i.get("Driver")
    if isinstance(driver, str) and driver in CAVEATS:
        facts["caveats"] = [CAVEATS[driver]]
    return facts


def _pairs(v: JsonValue) -> list[list[JsonValue]]:
    """docker's DriverStatus: [[name, value], ...] (null on some drivers)."""
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
        raise ShapeError(f"docker info's DriverStatus should be pairs, not {v!r:.80}")
    return [p for p in v if isinstance(p, list)]
