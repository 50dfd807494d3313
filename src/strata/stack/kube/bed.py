"""A single-node Kubernetes cluster on this machine, from real parts, every piece journaled.

Parts: etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager,
kube-scheduler and the kubelet (built here: build.py), containerd with runc
and the CNI bridge and host-local plugins (Debian's). Addresses: config.py
(the network rule). Each piece is journaled before it exists:

- the bed's root directory (certificates, configuration, the data of etcd,
  containerd and the kubelet, logs), removed last;
- the directory of `strata-loop`'s images (loopvolumes.py; on a bed of several
  nodes, one inside each node, nodes.py): the loop devices over them detached,
  and the kubelet's locks over those, once everything made after it is undone
  (the pods and the kubelet gone);
- the pods' bridge, holding the node's /28 of 192.0.2.0/24 (chosen free, under
  stack/netns.py's lock, with the service /28 beside it);
- the node: the kubelet's cgroup root in every hierarchy, the pods' processes
  in it, containerd's shims and every mount below the root (pod network
  namespaces, root file systems, volumes);
- each process (etcd, the four Kubernetes components, containerd), by pid
  and by a marker (the root's path) in its command line, since pids are
  reused.

`strata cleanup` after `kill -9` undoes them from the journal alone.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TypedDict

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.core.proc import sh
from strata.stack import netns
from strata.stack.journal import Journal, Undos, need, state_dir, strings
from strata.stack.procfs import (
    cgroup_dirs,
    cgroup_hierarchies,
    cgroup_pids,
    procs_mentioning,
    remove_cgroups,
    remove_tree_but_live_sockets,
    signal_and_wait,
    unmount_under,
)

from . import bedregistry, build, config, images, loopvolumes, pki, provisioner
from . import nodes as nodes_mod
from .api import Api, ApiError, items, name_of
from .procs import READY_TIMEOUT_S, Processes, Seqs, free_port, tracked, undo_process, undo_root, unwind

JOURNAL_PREFIX = "kubernetes-"


def beds_dir() -> Path:
    return state_dir() / "kubernetes"


class BedFacts(TypedDict):
    """What a running bed is: stored with its session's facts and in `current.json` for `strata testbed`."""

    version: str
    token: str
    root: str
    run_dir: str
    kubelet_dir: str
    node: str
    kubeconfig: str
    server: str
    containerd: str
    addresses: dict[str, str]
    pids: dict[str, int]
    nodes: list[nodes_mod.NodeFacts]  # a bed of several nodes: each node; []: the single node is this machine
    registry: JsonObject | None  # its own registry: {address, port, prefix, ca}


@dataclass
class Bed:
    plan: config.Plan
    kube: Path
    api: Api
    procs: Processes
    # a bed of several nodes (nodes.py): each node, a test host; none: the single node is this machine
    nodes: list[nodes_mod.Node] = field(default_factory=list)
    registry: JsonObject | None = None  # its own registry (bedregistry.py): address, prefix, CA

    @property
    def pids(self) -> dict[str, int]:
        return self.procs.pids

    @property
    def kubeconfig(self) -> Path:
        return self.plan.path("admin.kubeconfig")

    def facts(self) -> BedFacts:
        return {
            "version": config.KUBERNETES_VERSION,
            "token": self.plan.token,
            "root": str(self.plan.root),
            "run_dir": str(self.plan.run_dir),
            "kubelet_dir": str(self.plan.kubelet_dir),
            "node": self.plan.node_name,
            "kubeconfig": str(self.kubeconfig),
            "server": self.plan.server,
            "containerd": str(self.plan.containerd_sock),
            "addresses": config.addresses(self.plan),
            "pids": dict(self.pids),
            "nodes": [n.facts() for n in self.nodes],
            "registry": self.registry,
        }

    def load_image(self, tarball: Path) -> str:
        """Import a `docker save` tarball into the node's containerd (every node's, on a bed of several)."""
        if self.nodes:
            return "".join(images.import_tarball(n.plan.containerd_sock, tarball) for n in self.nodes)
        return images.import_tarball(self.plan.containerd_sock, tarball)

    def dead(self) -> list[str]:
        return self.procs.dead()


# ---- undo actions -------------------------------------------------------------------


def _undo_bridge(data: JsonObject) -> None:
    name = need(data, "name")
    if Path(f"/sys/class/net/{name}").exists():
        sh(["ip", "link", "delete", name], timeout=30)


def _undo_route(data: JsonObject) -> None:
    sh(["ip", "route", "del", "blackhole", need(data, "block")], check=False, timeout=30)


def _undo_node(data: JsonObject) -> None:
    """The pods: their processes (in the kubelet's cgroup root), containerd's shims, every mount below
    the root (pod network namespaces, root file systems, volumes), then the cgroups themselves."""
    parent = need(data, "cgroup_root").strip("/")
    for _ in range(5):
        pids = cgroup_pids(cgroup_dirs(parent))
        if not pids:
            break
        signal_and_wait(sorted(pids), signal.SIGKILL, 5)
    left = signal_and_wait(procs_mentioning(need(data, "containerd_sock")), signal.SIGTERM, 5)
    signal_and_wait(left, signal.SIGKILL, 5)
    for root in (need(data, "root"), *strings(data, "short_dirs", [])):
        unmount_under(root)
    remove_cgroups(cgroup_dirs(parent))
    _undo_fixed_dirs(need(data, "root"), strings(data, "made_fixed_dirs", []))


def _undo_fixed_dirs(root: str, made: list[str]) -> None:
    """The kubelet's and containerd's fixed paths: those the bed made go, but for the sockets others bound
    there meanwhile (a private dockerd's containerd keeps its shims' sockets in /run/containerd/s too, and
    a shim whose socket went can no longer be told to stop its container); elsewhere the container-log
    symlinks into the bed go."""
    logs = Path("/var/log/containers")
    if logs.is_dir() and str(logs) not in made:
        for link in logs.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(root.rstrip("/") + "/"):
                    link.unlink()
    for d in made:
        remove_tree_but_live_sockets(Path(d))


# ---- bring-up ----------------------------------------------------------------------------


PARTS = {  # program -> the Debian package that has it
    "etcd": "etcd-server",
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "openssl": "openssl",
    "ip": "iproute2",
}
CNI_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")


def missing_parts(which: Callable[[str], str | None] = shutil.which, cni_dir: Path = CNI_DIR) -> list[str]:
    """What this machine lacks to run the bed, each with the package that brings it (empty: nothing)."""
    missing = [f"{prog} (package {pkg})" for prog, pkg in PARTS.items() if not which(prog)]
    missing += [
        f"CNI plugin {cni_dir / p} (package containernetworking-plugins)"
        for p in CNI_PLUGINS
        if not (cni_dir / p).is_file()
    ]
    return missing


@contextlib.contextmanager
def kubernetes_bed(
    journal: Journal,
    log: Callable[[str], None] = print,
    data_dir: Path | None = None,
    nodes: int = 0,
    disk_bytes: int = nodes_mod.DISK_BYTES,
    registries: dict[str, str] | None = None,
    registry: bool = False,
    buffered: tuple[int, ...] = (),
) -> Iterator[Bed]:
    """Build (once), start and yield a cluster; drain and undo all of it on exit.

    With `nodes` = 0, one node: this machine, its kubelet and containerd beside the control plane. With `data_dir`
    (a directory on the file system under test) the kubelet's root, where emptyDir volumes live, is bound onto
    data_dir/kubelet and the provisioner's volumes go to data_dir/pv, so that what pods write lands on that file
    system, as a private dockerd's data-root does. With `nodes` = N (1 to 4), N nodes, each a test host of its
    own (nodes.py) with a disk of `disk_bytes`, the control plane on this machine; `registries` (host:port -> CA
    file) are the registries their containerd trusts for pulls; with `registry`, the bed serves one of its own on a
    test host of its bridge (bedregistry.py), which they trust by the bed's CA; the nodes of `buffered` get a disk
    without direct I/O (this machine's page cache answers for it: a planted cache to test the cache check on)."""
    missing = missing_parts()
    if missing:
        raise StrataError(f"the Kubernetes test bed needs {', '.join(missing)}", "run scripts/install")
    if not 0 <= nodes <= nodes_mod.MAX_NODES:
        raise StrataError(f"a test bed of {nodes} nodes", f"give from 1 to {nodes_mod.MAX_NODES} nodes")
    kube, pause = build.binaries(log=log)
    token = secrets.token_hex(3)
    root = beds_dir() / token
    seqs: Seqs = []
    bed = None
    try:
        tracked(journal, seqs, "kube-root", undo_root, path=str(root))
        root.mkdir(parents=True)
        (root / "logs").mkdir()
        blocks = (data_dir or root) / provisioner.BLOCKS  # strata-loop's images: released after the kubelet and pods
        if not nodes:
            tracked(journal, seqs, "kube-loop-volumes", loopvolumes.undo_loop_volumes, dir=str(blocks))
        plan, node_plans, registry_addr = _network(journal, seqs, token, root, nodes, registry)
        trusted = dict(registries or {})
        if registry_addr:
            trusted[f"{registry_addr}:{bedregistry.PORT}"] = str(plan.path("pki", "ca.crt"))
        if not nodes:
            for short in (plan.run_dir, plan.kubelet_dir):
                tracked(journal, seqs, "kube-root", undo_root, path=str(short))
                short.mkdir()
            if data_dir is not None:  # undone with the kubelet's dir (remove_tree unmounts what is below it)
                (data_dir / "kubelet").mkdir(parents=True, exist_ok=True)
                sh(["mount", "--bind", str(data_dir / "kubelet"), str(plan.kubelet_dir)])
        _write_files(plan, node_plans, trusted, registry_addr)
        log(f"certificates and configuration in {root}")
        bed = Bed(plan, kube, _admin_api(plan), Processes(journal, seqs, str(root), root / "logs"))
        _control_plane(bed)
        if registry_addr:
            bed.registry = bedregistry.start(
                bed.procs, _registry_netns(token), registry_addr, root / "registry", plan.path("pki")
            )
        pause_tar = images.pause_tarball(pause, plan.path("pause.tar"))
        if node_plans:
            nodes_mod.private_dir(journal, seqs, root / "ns")
            nodes_mod.mount_points(journal, seqs)
            for n in node_plans:
                buffer = n.index in buffered
                bed.nodes.append(nodes_mod.start(journal, seqs, bed.procs, n, kube, disk_bytes, pause_tar, buffer))
            nodes_mod.wait_ready(bed.api, bed.procs, bed.nodes)
        else:
            _node_cgroups(journal, seqs, plan)
            bed.procs.start("containerd", ["containerd", "--config", str(plan.path("containerd.toml"))])
            _wait_containerd(bed)
            bed.load_image(pause_tar)
            bed.procs.start("kubelet", config.kubelet_argv(kube, plan))
            _wait_node(bed)
        _wait_default_account(bed)
        sides: list[config.NodeSide] = [n.plan for n in bed.nodes] or [plan]
        for side in sides:
            log(f"node {side.node_name} Ready at {side.node_addr}")
        log(f"apiserver {plan.server}")
        if bed.nodes:
            removers = {n.plan.node_name: nodes_mod.remove_in(n) for n in bed.nodes}
            enters = {n.plan.node_name: loopvolumes.in_mount_ns(str(n.plan.mount_ns)) for n in bed.nodes}
            serving = provisioner.serving_nodes(bed.api, removers, enters)
        else:
            serving = provisioner.serving(bed.api, plan.node_name, (data_dir or root) / "pv", blocks)
        with serving:
            yield bed
    finally:
        if bed is not None:
            with contextlib.suppress(Exception):  # best effort: the undo below removes what is left anyway
                _drain(bed)
        unwind(journal, seqs)


def _registry_netns(token: str) -> str:
    return f"strata-k8s-{token}-reg"


def _network(
    journal: Journal, seqs: Seqs, token: str, root: Path, nodes: int, registry: bool
) -> tuple[config.Plan, list[config.NodePlan], str | None]:
    """A bridge strata makes and addresses, holding a /28: the single node and its pods, or on a bed of several
    the control plane's address and the nodes' (each node's pods get a /28 of their own); and the service /28,
    routed nowhere."""
    with netns.allocation_lock():
        used, routes = netns.host_usage()
        blocks: list[ipaddress.IPv4Network] = []
        for _ in range(2 + nodes):  # the bridge's, the services', each node's pods'
            block = netns.pick_block(netns.POOL, used, [*routes, *blocks], prefix=config.BLOCK_PREFIX)
            if block is None:
                raise StrataError(
                    f"no {2 + nodes} free /{config.BLOCK_PREFIX} in {netns.POOL}",
                    "remove stale namespaces (strata cleanup)",
                )
            blocks.append(block)
        bridge_block, service = blocks[0], blocks[1]
        addresses = [str(a) for a in bridge_block.hosts()]
        ports = (free_port(), free_port(), free_port())
        bind = addresses[0] if nodes else config.LOOPBACK
        plan = config.Plan(token, root, str(bridge_block), str(service), *ports, bind=bind)
        node_plans = nodes_mod.plans(token, root, addresses[1:], [str(b) for b in blocks[2:]], plan.server)
        registry_addr = addresses[1 + nodes] if registry else None
        tracked(journal, seqs, "kube-bridge", _undo_bridge, name=plan.bridge)
        sh(["ip", "link", "add", plan.bridge, "type", "bridge"])
        Path(f"/proc/sys/net/ipv6/conf/{plan.bridge}/disable_ipv6").write_text("1")
        sh(["ip", "addr", "add", f"{plan.node_addr}/{bridge_block.prefixlen}", "dev", plan.bridge])
        sh(["ip", "link", "set", plan.bridge, "up"])
        # the service /28 is routed nowhere: a blackhole keeps any stray packet off eth0's /24
        tracked(journal, seqs, "kube-route", _undo_route, block=plan.service_block)
        sh(["ip", "route", "add", "blackhole", plan.service_block])
        prefix = bridge_block.prefixlen
        for n in node_plans:
            nodes_mod.link(journal, seqs, n.netns, f"skv{token}{n.index}", n.node_addr, plan.bridge, prefix)
        if registry_addr:
            nodes_mod.link(journal, seqs, _registry_netns(token), f"skv{token}r", registry_addr, plan.bridge, prefix)
    return plan, node_plans, registry_addr


def _write_files(
    plan: config.Plan, node_plans: list[config.NodePlan], registries: dict[str, str], registry_addr: str | None
) -> None:
    certs = config.certificates(plan, node_plans)
    if registry_addr:
        certs.append(config.CertSpec("registry", "strata-bed-registry", ips=(registry_addr,), server=True))
    pki.make_all(plan.path("pki"), certs)
    for user in ("admin", "controller-manager", "scheduler"):
        plan.path(f"{user}.kubeconfig").write_text(config.kubeconfig(plan, user))
    if node_plans:
        for n in node_plans:
            nodes_mod.write_files(n, plan.path("pki"), registries)
        return
    plan.path("kubelet.kubeconfig").write_text(config.kubeconfig(plan, "kubelet-client"))
    plan.path("kubelet.json").write_text(json.dumps(config.kubelet_config(plan), indent=1))
    plan.path("containerd").mkdir()
    plan.path("containerd.toml").write_text(config.containerd_config(plan, registries))
    plan.path("cni").mkdir()
    plan.path("cni", "10-strata.conflist").write_text(json.dumps(config.cni_config(plan), indent=1))


def _admin_api(plan: config.Plan) -> Api:
    p = plan.path("pki")
    return Api(plan.server, str(p / "ca.crt"), str(p / "admin.crt"), str(p / "admin.key"))


def _control_plane(bed: Bed) -> None:
    """etcd, then the apiserver, the controller manager and the scheduler."""
    plan, run = bed.plan, bed.procs
    run.start("etcd", config.etcd_argv(plan))
    _wait_etcd(bed)
    run.start("kube-apiserver", config.apiserver_argv(bed.kube, plan))
    bed.api.wait("the apiserver was not ready", bed.api.answers, READY_TIMEOUT_S, run.fix("kube-apiserver"))
    run.start("kube-controller-manager", config.controller_manager_argv(bed.kube, plan))
    run.start("kube-scheduler", config.scheduler_argv(bed.kube, plan))


def _node_cgroups(journal: Journal, seqs: Seqs, plan: config.Plan) -> None:
    """The kubelet's cgroup root, made in every v1 hierarchy (the kubelet requires that it exists)."""
    tracked(
        journal,
        seqs,
        "kube-node",
        _undo_node,
        root=str(plan.root),
        short_dirs=[str(plan.run_dir), str(plan.kubelet_dir)],
        made_fixed_dirs=[d for d in config.FIXED_HOST_DIRS if not Path(d).exists()],
        cgroup_root=plan.cgroup_root,
        containerd_sock=str(plan.containerd_sock),
    )
    for key, (mountpoint, _) in cgroup_hierarchies().items():
        if key:
            (mountpoint / plan.cgroup_root.strip("/")).mkdir(exist_ok=True)


def log_tail(bed: Bed, name: str, chars: int = 1500) -> str:
    return bed.procs.log_tail(name, chars)


def _wait_etcd(bed: Bed) -> None:
    import urllib.request

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://{config.LOOPBACK}:{bed.plan.etcd_port}/health", timeout=2) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    bed.procs.wait_until("etcd was not healthy", healthy, "etcd")


def _wait_containerd(bed: Bed) -> None:
    sock = bed.plan.containerd_sock

    def answers() -> bool:
        return sock.exists() and sh(["ctr", "--address", str(sock), "version"], check=False, timeout=10).returncode == 0

    bed.procs.wait_until("containerd did not answer", answers, "containerd")


def _wait_node(bed: Bed) -> None:
    name = bed.plan.node_name

    def ready() -> bool:
        try:
            node = bed.api.get(f"/api/v1/nodes/{name}")
        except (ApiError, OSError):
            return False
        conditions = map(as_obj, arr(obj(node, "status"), "conditions"))
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    bed.procs.wait_until(f"node {name} was not Ready", ready, "kubelet")


def _wait_default_account(bed: Bed) -> None:
    def default_account() -> bool:  # pods are admitted only once their namespace's service account exists
        try:
            return bool(bed.api.get("/api/v1/namespaces/default/serviceaccounts/default"))
        except (ApiError, OSError):
            return False

    bed.procs.wait_until("the default service account did not appear", default_account, "kube-controller-manager")


def _drain(bed: Bed, timeout_s: float = 60) -> None:
    """Delete every pod through the API and let the kubelet stop them (CNI teardown included)."""
    if not bed.api.answers():
        return
    for pod in items(bed.api.get("/api/v1/pods")):
        namespace = text(obj(pod, "metadata"), "namespace")
        with contextlib.suppress(ApiError):
            bed.api.delete(f"/api/v1/namespaces/{namespace}/pods/{name_of(pod)}?gracePeriodSeconds=0")
    sock = str(bed.plan.containerd_sock)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and "kubelet" not in bed.dead():
        out = sh(["ctr", "--address", sock, "-n", images.NAMESPACE, "tasks", "ls", "-q"], check=False, timeout=10)
        if out.returncode == 0 and not out.stdout.split():
            return
        time.sleep(0.5)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "kube-root": undo_root,
    "kube-bridge": _undo_bridge,
    "kube-route": _undo_route,
    "kube-process": undo_process,
    "kube-node": _undo_node,
    **nodes_mod.UNDO,
    **netns.UNDO,
    **loopvolumes.UNDO,
}
