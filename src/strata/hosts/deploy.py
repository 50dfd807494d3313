"""strata's agent on every host, as Swarm services: build the image, load it, start, find, remove.

Swarm services cannot be privileged nor share the host's PID namespace (not in
Docker 20.10, nor since), and the agent needs both (loop devices, mounts,
cgroups, private daemons). So each host gets one small service, the
*launcher* (constrained to that host's node, `--network host`, the node's
docker socket mounted), which runs the agent itself on its node's daemon:
`docker run --privileged --pid host --network host` with the host's `/dev`,
`/sys`, its state dir and its workdir (launcher.py). Removing the service stops
the launcher, which stops its agent.

The image is built here like every image strata makes (no registry: a Debian
minbase, the Debian packages of the layers' tools, strata's own source and
the few Python packages it imports, the engine binary) and reaches each node
with `docker load` through the node's daemon endpoint (`hosts.<h>.docker`:
unix:// or ssh://); a node without an endpoint must hold the image already.

Every service is journaled before it is made; its undo removes the service
and, through the node's endpoint, the agent container a killed launcher left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import strata
from strata.core.errors import StrataError
from strata.core.instances import ImageSpec
from strata.core.jsondoc import JsonObject, as_obj, obj, text
from strata.core.proc import CommandError, sh
from strata.stack.journal import Journal, Undos
from strata.stack.runtimes.docker.client import client_env, docker_cli

from .agentimage import for_experiment
from .client import AgentClient, AgentRefused, AgentUnreachable
from .executor import HostAgent

if TYPE_CHECKING:
    from strata.experiment.hosts import HostSpec
    from strata.experiment.model import Experiment

AGENT_PACKAGES = (
    "python3",
    "util-linux",
    "mount",
    "e2fsprogs",
    "xfsprogs",
    "btrfs-progs",
    "iproute2",
    "kmod",
    "procps",
    "docker.io",
    "nbdkit",  # a remote device's store served from this host (stack/remote/serve.py)
    "libnbd-bin",  # nbdfuse: a remote device's client on this host
    "fuse3",
)
PYTHON_PACKAGES = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection", "yaml", "_yaml")
PYTHON_MODULES = ("typing_extensions.py",)
SRC_IN_IMAGE = "/opt/strata/src"
SITE_IN_IMAGE = "/opt/strata/site"
PYTHONPATH = f"{SRC_IN_IMAGE}:{SITE_IN_IMAGE}"
HEALTH_TIMEOUT_S = 120.0  # the container start and the first facts (tool versions)
LOAD_TIMEOUT_S = 1800


# ---- the image ------------------------------------------------------------------------


def _site_tree() -> Path:
    """The Python packages strata imports at run time, copied from this interpreter's site-packages."""
    import pydantic

    site = Path(pydantic.__file__).resolve().parent.parent
    out = Path(os.environ.get("STRATA_CACHE_DIR", "/var/cache/strata")) / "agent-site"
    stamp = json.dumps([str(site), sorted(p.name for p in site.iterdir() if p.name.endswith(".dist-info"))])
    if not (out / ".stamp").exists() or (out / ".stamp").read_text() != stamp:
        tmp = out.with_name(f".agent-site.{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in PYTHON_PACKAGES:
            if (site / name).is_dir():
                shutil.copytree(site / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in PYTHON_MODULES:
            if (site / name).is_file():
                shutil.copy2(site / name, tmp / name)
        for so in site.glob("_yaml*.so"):
            shutil.copy2(so, tmp / so.name)
        (tmp / ".stamp").write_text(stamp)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


def tools_image() -> ImageSpec:
    """The agent's tools image: the layers' tools, the Python packages strata imports, the engine. Built
    like every workload image (stack/runtimes/docker/image.py) and cached: it changes with the engine. A
    workload's tools are not among them: an experiment's agent image adds those it runs (agentimage.py)."""
    files = []
    engine = shutil.which("strata-wml") or str(Path(sys.executable).parent / "strata-wml")
    if os.access(engine, os.X_OK):
        files.append(("strata-wml", engine))
    return ImageSpec(
        name="agent-tools", packages=AGENT_PACKAGES, files=tuple(files), trees=((SITE_IN_IMAGE, str(_site_tree())),)
    )


def code_tree() -> Path:
    """strata's own code, the one running here."""
    return Path(strata.__file__).resolve().parent


def agent_tag(tools_tag: str) -> str:
    """The agent image: the tools image and this strata's code (a new code layer per code change)."""
    h = hashlib.sha256(tools_tag.encode())
    for p in sorted(code_tree().rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(code_tree())).encode() + b"\0" + p.read_bytes())
    return f"strata-agent:{h.hexdigest()[:12]}"


def docker_at(endpoint: str, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The docker client against a node's daemon endpoint (unix:///PATH, ssh://USER@HOST, tcp://...)."""
    return sh([docker_cli(), "-H", endpoint, *args], check=check, timeout=timeout)


def _has(endpoint: str, tag: str) -> bool:
    return docker_at(endpoint, "image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode == 0


def install_agent(endpoint: str, tools_tarball: Path, tools_tag: str, tag: str) -> None:
    """The agent image in a node's daemon: `docker load` of the tools image (once per node), then the
    code layer built on it by that daemon (`FROM` a local tag: nothing is pulled)."""
    if _has(endpoint, tag):
        return
    if not _has(endpoint, tools_tag):
        docker_at(endpoint, "load", "-q", "-i", str(tools_tarball), timeout=LOAD_TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="strata-agent-ctx-") as ctx:
        shutil.copytree(code_tree(), Path(ctx) / "strata", ignore=shutil.ignore_patterns("__pycache__"))
        (Path(ctx) / "Dockerfile").write_text(f"FROM {tools_tag}\nCOPY strata/ {SRC_IN_IMAGE}/strata/\n")
        argv = [docker_cli(), "-H", endpoint, "build", "--network", "none", "--pull=false", "-q", "-t", tag, ctx]
        cp = subprocess.run(
            argv, capture_output=True, text=True, timeout=LOAD_TIMEOUT_S, env=client_env(DOCKER_BUILDKIT="0")
        )
        if cp.returncode != 0:
            raise StrataError(f"the agent image could not be built at {endpoint}: {cp.stderr[-800:]}", "read the error")


# ---- the Swarm's nodes --------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    id: str
    hostname: str
    addr: str
    labels: dict[str, str]
    state: str
    availability: str

    def to_json(self) -> JsonObject:
        return {"id": self.id, "hostname": self.hostname, "address": self.addr, "state": self.state}


def nodes(manager: str) -> list[Node]:
    """Every node of the Swarm, as the manager sees it."""
    try:
        ids = docker_at(manager, "node", "ls", "-q").stdout.split()
        docs = json.loads(docker_at(manager, "node", "inspect", *ids).stdout) if ids else []
    except CommandError as e:
        raise StrataError(
            f"the Swarm manager at {manager} did not list its nodes: {e.stderr[-500:]}",
            "run strata on a Swarm manager (`docker swarm init`), or set `swarm.manager` to its daemon",
        )
    out = []
    for v in docs:
        d = as_obj(v, "a node of `docker node inspect`")
        status, spec = obj(d, "Status"), obj(d, "Spec")
        addr = text(status, "Addr")
        if addr in ("", "0.0.0.0"):  # a manager may report no address of its own: its manager address
            addr = text(obj(d, "ManagerStatus"), "Addr", ":").rsplit(":", 1)[0]
        labels = {k: label for k, label in obj(spec, "Labels").items() if isinstance(label, str)}
        out.append(
            Node(
                text(d, "ID"),
                text(obj(d, "Description"), "Hostname"),
                addr,
                labels,
                text(status, "State"),
                text(spec, "Availability"),
            )
        )
    return out


def find_node(name: str, spec: HostSpec, all_nodes: list[Node]) -> Node:
    """The one node a host of the experiment names, or a StrataError saying why not."""
    if spec.node is not None:
        found = [n for n in all_nodes if spec.node in (n.id, n.hostname)]
        what = f"node {spec.node!r}"
    else:
        assert spec.label is not None, "a host names its node or a node label (HostSpec)"
        key, value = spec.label.split("=", 1)
        found = [n for n in all_nodes if n.labels.get(key) == value]
        what = f"node label {spec.label}"
    if len(found) != 1:
        known = ", ".join(f"{n.hostname} ({n.id[:12]})" for n in all_nodes) or "none"
        raise StrataError(
            f"host {name}: {len(found)} Swarm nodes match {what} (nodes: {known})",
            "name exactly one node: its hostname, its ID, or a label only it carries (docker node update --label-add)",
        )
    node = found[0]
    if node.state != "ready" or node.availability != "active":
        raise StrataError(f"host {name}: node {node.hostname} is {node.state}/{node.availability}", "bring it back")
    return node


# ---- the services ------------------------------------------------------------------------


def _undo_service(data: JsonObject) -> None:
    """Remove the launcher service, then whatever agent container its launcher left on the node."""
    docker_at(str(data["manager"]), "service", "rm", str(data["service"]), check=False, timeout=60)
    node_docker = str(data.get("node_docker") or "")
    if node_docker:
        deadline = time.monotonic() + 30  # the launcher stops its agent on the way out
        while time.monotonic() < deadline:
            cp = docker_at(node_docker, "ps", "-aq", "--filter", f"name=^{data['container']}$", check=False)
            if cp.returncode != 0 or not cp.stdout.strip():
                return
            time.sleep(1)
        docker_at(node_docker, "rm", "-f", str(data["container"]), check=False, timeout=60)


def service_argv(
    name: str, container: str, host: str, spec: HostSpec, node: Node, image: str, token: str, workdir: str
) -> list[str]:
    """`docker service create` of one host's launcher."""
    launch = [
        "--host", host, "--container", container, "--image", image, "--address", node.addr,
        "--port", str(spec.port), "--state-dir", spec.state_dir, "--workdir", workdir,
        "--docker-socket", spec.docker_socket,
    ]  # fmt: skip
    return [
        "service", "create", "--detach", "--quiet", "--name", name,
        "--constraint", f"node.id=={node.id}", "--network", "host",
        "--restart-condition", "any", "--restart-delay", "2s", "--stop-grace-period", "40s",
        "--mount", f"type=bind,source={spec.docker_socket},target={spec.docker_socket}",
        "--env", f"STRATA_AGENT_TOKEN={token}", "--env", f"PYTHONPATH={PYTHONPATH}",
        "--label", "strata.agent=1",
        image, "python3", "-m", "strata.hosts.main", "launch", *launch,
    ]  # fmt: skip


@contextlib.contextmanager
def agents(exp: Experiment, journal: Journal, log: Callable[[str], None] = print) -> Iterator[dict[str, HostAgent]]:
    """One agent per host of the experiment, answering; removed (services and agents) on exit. Hosts that
    are Kubernetes nodes get theirs on this machine (kubenodes.py)."""
    from .kubenodes import is_kubernetes, node_agents

    if is_kubernetes(exp):
        with node_agents(exp, journal, log) as found:
            yield found
        return
    manager = exp.swarm.manager
    all_nodes = nodes(manager)
    placed = {name: find_node(name, spec, all_nodes) for name, spec in exp.hosts.items()}
    from strata.stack.runtimes.docker.image import build_image_tarball, image_tag

    tools = for_experiment(tools_image(), exp)  # agentimage.py: the workloads' and the probe's host-side tools
    tools_tag, tarball = image_tag(tools), build_image_tarball(tools)
    tag = agent_tag(tools_tag)
    log(f"swarm: agent image {tag} (on {tools_tag})")
    token = secrets.token_hex(16)
    run = secrets.token_hex(3)
    seqs: list[tuple[int, JsonObject]] = []
    try:
        for name, spec in exp.hosts.items():
            if spec.docker:
                install_agent(spec.docker, tarball, tools_tag, tag)
            service, container = f"strata-agent-{name}-{run}", f"strata-agent-{name}-{run}-a"
            data: JsonObject = {
                "manager": manager,
                "service": service,
                "container": container,
                "node_docker": spec.docker or "",
            }
            seqs.append((journal.intent("swarm-service", **data), data))
            workdir = spec.workdir or exp.workdir
            docker_at(
                manager,
                *service_argv(service, container, name, spec, placed[name], tag, token, workdir),
            )
        found = {}
        for name, spec in exp.hosts.items():
            node = placed[name]
            client = AgentClient(f"http://{_url_host(node.addr)}:{spec.port}", token, name)
            found[name] = _answering(name, node, client)
            log(f"swarm: host {name} on node {node.hostname} ({node.addr}): agent {found[name].agent_id}")
        yield found
    finally:
        for seq, data in reversed(seqs):
            try:
                _undo_service(data)
            finally:
                journal.release(seq)


def _url_host(addr: str) -> str:
    return f"[{addr}]" if ":" in addr else addr


def _answering(name: str, node: Node, client: AgentClient, timeout_s: float = HEALTH_TIMEOUT_S) -> HostAgent:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            health = client.health()
            facts = client.facts()
            return HostAgent(name, node.to_json(), client, text(health, "agent"), facts)
        except (AgentUnreachable, AgentRefused) as e:
            last = str(e)
            time.sleep(1)
    raise StrataError(
        f"host {name}: the agent on node {node.hostname} did not answer at {client.url} within {timeout_s:.0f} s "
        f"({last})",
        "read the service's log: docker service logs strata-agent-...; check that the node can reach this address",
    )


# The undo action of each kind the manager journals (`strata cleanup` declares it beside the plugins').
UNDO: Undos = {"swarm-service": _undo_service}
