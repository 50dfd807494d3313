"""A Cassandra node in a container of a bare Docker daemon, for the benches that set one beside a native
node (ycsb_native_container.py). A trial never runs one this way: its nodes are instances of the
runtime under test (workloads/ycsb/script.py), so this lives with the benches, not the workload.

The same NodeConfig and argv (cassandra.py) run as natively; only the paths the node sees differ. Its
stdout goes to a bind-mounted file and the container has no log driver, so no log is written into the
daemon's data root on the file system being measured. The container is journaled with the docker
runtime's `container` kind (`docker rm -f`).
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from strata.stack.journal import Journal  # noqa: E402
from strata.stack.runtimes.docker import image as dimage  # noqa: E402
from strata.stack.runtimes.docker.client import docker  # noqa: E402
from strata.workloads.ycsb import cassandra  # noqa: E402
from strata.workloads.ycsb.cassandra import NodeConfig  # noqa: E402
from strata.workloads.ycsb.image import image_spec  # noqa: E402
from strata.workloads.ycsb.node import STOP_TIMEOUT_S, Node, stage  # noqa: E402

CONF_IN_CONTAINER = "/etc/strata-cassandra"
DATA_IN_CONTAINER = "/var/lib/cassandra"
LIB_IN_CONTAINER = "/opt/cassandra/lib"
LOG_IN_CONTAINER = "/var/log/strata-cassandra"


@dataclass
class ContainerNode(Node):
    socket: str = ""  # the daemon
    container: str = ""

    def alive(self) -> bool:
        return _inspect(self.socket, self.container, "{{.State.Running}}") == "true"

    def kill(self) -> None:
        docker(self.socket, "kill", self.container, check=False, timeout=60)


def _inspect(sock: str, name: str, fmt: str) -> str:
    cp = docker(sock, "inspect", "--format", fmt, name, check=False, timeout=30)
    return cp.stdout.strip() if cp.returncode == 0 else ""


def ensure_image(sock: str, cassandra_home: Path | None = None) -> str:
    """The workload's image (workloads/ycsb/image.py) present in the daemon at `sock`."""
    spec = image_spec(cassandra_home)
    tag = dimage.image_tag(spec)
    if docker(sock, "image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode != 0:
        docker(sock, "load", "-q", "-i", str(dimage.build_image_tarball(spec)), timeout=dimage.BUILD_TIMEOUT_S)
    return tag


def container_config(cfg: NodeConfig) -> NodeConfig:
    """The same node with the paths it sees inside strata-cassandra's container."""
    return replace(cfg, data_dir=DATA_IN_CONTAINER, conf_dir=CONF_IN_CONTAINER, lib_dir=LIB_IN_CONTAINER)


def docker_run_args(
    name: str,
    host_data: Path,
    host_conf: Path,
    host_log_dir: Path,
    memory_limit_bytes: int | None,
    extra: list[str] | None = None,
) -> list[str]:
    args = [
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "host",
        "--log-driver",
        "none",
        "--mount",
        f"type=bind,src={host_data},dst={DATA_IN_CONTAINER}",
        "--mount",
        f"type=bind,src={host_conf},dst={CONF_IN_CONTAINER},readonly",
        "--mount",
        f"type=bind,src={host_log_dir},dst={LOG_IN_CONTAINER}",
    ]
    if memory_limit_bytes:
        args += ["--memory", str(memory_limit_bytes), "--memory-swap", str(memory_limit_bytes)]
    return args + list(extra or [])


@contextlib.contextmanager
def container_node(
    cfg: NodeConfig,
    jar_names: list[str],
    journal: Journal,
    sock: str,
    image: str,
    host_data: Path,
    host_conf: Path,
    host_log_dir: Path,
    extra_docker_args: list[str] | None = None,
) -> Iterator[ContainerNode]:
    """Start a node in a container (`--network host`); `cfg` has the in-container paths."""
    stage(cfg, host_conf)
    host_log_dir.mkdir(parents=True, exist_ok=True)
    name = f"strata-cassandra-{secrets.token_hex(4)}"
    log = f"{LOG_IN_CONTAINER}/node.log"
    shell = "exec " + " ".join(shlex.quote(a) for a in cassandra.node_argv(cfg, jar_names)) + f" >{log} 2>&1"
    seq = journal.intent("container", socket=sock, name=name)
    try:
        docker(
            sock,
            *docker_run_args(name, host_data, host_conf, host_log_dir, cfg.memory_limit_bytes, extra_docker_args),
            image,
            "sh",
            "-c",
            shell,
            timeout=120,
        )
        yield ContainerNode(cfg, host_log_dir / "node.log", socket=sock, container=name)
    finally:
        docker(sock, "stop", "-t", str(STOP_TIMEOUT_S), name, check=False, timeout=STOP_TIMEOUT_S + 30)
        docker(sock, "rm", "-f", "-v", name, check=False, timeout=120)
        journal.release(seq)
