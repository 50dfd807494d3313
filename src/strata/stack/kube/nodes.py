"""The nodes of a test bed of several (`strata testbed kubernetes up --nodes N`): each node a test host.

A node is what a machine of a real cluster is to strata, made on this one:

- its own network namespace (`strata-k8s-<token>-nI`, journaled), linked by a veth pair to the bed's bridge,
  with an address of the bridge's /28 of 192.0.2.0/24: strata, the control plane and the other nodes reach it
  only over that bridge, as over a network. Its pods get a /28 of their own on a bridge inside the namespace
  (no route to it from outside: strata's agent on the node uses the node's own network);
- its own mount namespace (a slave of this machine's: the machine's mounts reach it, its own do not leave it),
  held by a file under the bed's root. The paths the kubelet and containerd use whatever they are told
  (config.FIXED_HOST_DIRS) are bound there onto the node's own directories, so that N kubelets never share
  them, and strata's agent's root (config.AGENT_ROOT) onto the node's disk;
- its own disk: a loop device (direct I/O) over a file under the bed's root, with xfs, mounted inside the node
  at config.NODE_DATA: the kubelet's root (emptyDir volumes) and the bed's provisioned volumes are there;
- its own containerd and kubelet, started inside both namespaces, with a cgroup root of their own.

Each piece is journaled before it exists and undone in reverse: `strata cleanup` after `kill -9` of the bed's
holder stops the processes and the pods (by their cgroups and containerd's socket), releases the mount
namespace (its mounts go with it), detaches the loop device and removes the namespace and files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypedDict

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue, arr, as_obj, obj
from strata.core.proc import sh
from strata.stack import netns
from strata.stack.blockdev import UNDO as BLOCK_UNDO
from strata.stack.blockdev import fill_file
from strata.stack.devices.loop import Loop
from strata.stack.journal import Journal, need, strings
from strata.stack.procfs import (
    cgroup_dirs,
    cgroup_hierarchies,
    cgroup_pids,
    procs_mentioning,
    remove_cgroups,
    signal_and_wait,
)

from . import config, images, loopvolumes
from .api import Api, ApiError
from .procs import Processes, Seqs, tracked, undo_root

DISK_BYTES = 2 << 30
MAX_NODES = 4
# inside a node: each fixed path of the kubelet and containerd on a directory of the node's own
FIXED_IN_NODE = {
    "/var/lib/kubelet": "fixed/var-lib-kubelet",
    "/var/log/containers": "fixed/var-log-containers",
    "/var/lib/cni": "fixed/var-lib-cni",
    "/run/containerd": "fixed/run-containerd",
}


class NodeFacts(TypedDict):
    buffered: bool
    name: str
    index: int
    address: str
    netns: str
    mount_ns: str
    disk: str  # its loop device, /dev/loopN
    disk_file: str
    containerd: str
    pod_block: str
    cgroup_root: str


@dataclass
class Node:
    plan: config.NodePlan
    disk: str  # /dev/loopN
    buffered: bool = False  # its disk without direct I/O: a planted cache

    def facts(self) -> NodeFacts:
        p = self.plan
        return {
            "buffered": self.buffered,
            "name": p.node_name,
            "index": p.index,
            "address": p.node_addr,
            "netns": p.netns,
            "mount_ns": str(p.mount_ns),
            "disk": self.disk,
            "disk_file": str(p.disk_file),
            "containerd": str(p.containerd_sock),
            "pod_block": p.node_block,
            "cgroup_root": p.cgroup_root,
        }

    def run(self, argv: list[str], timeout: float = 60) -> str:
        """A command inside the node (its namespaces), its output."""
        return sh(self.plan.enter(argv), timeout=timeout).stdout


# ---- undo actions -------------------------------------------------------------------


def _undo_private_dir(data: JsonObject) -> None:
    """The private mount that holds the nodes' mount-namespace files."""
    path = need(data, "path")
    sh(["umount", "-l", path], check=False, timeout=30)


def _undo_mount_ns(data: JsonObject) -> None:
    """Release the node's mount namespace: once no process is in it, its mounts (the node's disk) go with it."""
    path = need(data, "path")
    sh(["umount", "-l", path], check=False, timeout=30)
    with contextlib.suppress(OSError):
        os.unlink(path)


def _undo_node(data: JsonObject) -> None:
    """The node's pods (the processes in its cgroup root) and containerd's shims, then its cgroups."""
    parent = need(data, "cgroup_root").strip("/")
    for _ in range(5):
        pids = cgroup_pids(cgroup_dirs(parent))
        if not pids:
            break
        signal_and_wait(sorted(pids), signal.SIGKILL, 5)
    left = signal_and_wait(procs_mentioning(need(data, "containerd_sock")), signal.SIGTERM, 5)
    signal_and_wait(left, signal.SIGKILL, 5)
    remove_cgroups(cgroup_dirs(parent))


def _undo_dirs(data: JsonObject) -> None:
    """Mount points the bed made on this machine (empty there: what was bound onto them lived in the nodes)."""
    for d in reversed(strings(data, "paths", [])):
        with contextlib.suppress(OSError):
            os.rmdir(d)


# ---- bring-up ----------------------------------------------------------------------------


def plans(token: str, root: Path, addresses: list[str], pod_blocks: list[str], server: str) -> list[config.NodePlan]:
    """The nodes' plans: node I gets the bridge's address I+1 (the first is the control plane's) and a pods' /28."""
    return [
        config.NodePlan(token, i + 1, root / f"node-{i + 1}", addresses[i], pod_blocks[i], server)
        for i in range(len(pod_blocks))
    ]


def link(journal: Journal, seqs: Seqs, name: str, host_if: str, addr: str, bridge: str, prefix: int) -> None:
    """A network namespace `name` on the bed's bridge (a node's, the registry's), with its address; loopback
    up, IPv6 off."""
    ns_if = "eth0"
    tracked(journal, seqs, "netns", netns.undo_netns, name=name)
    sh(["ip", "netns", "add", name])
    tracked(journal, seqs, "veth", netns.undo_veth, host_if=host_if)
    sh(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", name])
    Path(f"/proc/sys/net/ipv6/conf/{host_if}/disable_ipv6").write_text("1")
    sh(["ip", "link", "set", host_if, "master", bridge, "up"])
    enter = ["nsenter", f"--net={netns.NETNS_DIR / name}"]
    sh([*enter, "sysctl", "-q", "-w", f"net.ipv6.conf.{ns_if}.disable_ipv6=1"])
    sh([*enter, "ip", "addr", "add", f"{addr}/{prefix}", "dev", ns_if])
    sh([*enter, "ip", "link", "set", ns_if, "up"])
    sh([*enter, "ip", "link", "set", "lo", "up"])


def write_files(node: config.NodePlan, bed_pki: Path, registries: dict[str, str] | None = None) -> None:
    """The node's certificates (its kubelet's, from the bed's CA), kubeconfig, kubelet, containerd and CNI files."""
    pki = node.path("pki")
    pki.mkdir(parents=True)
    shutil.copy(bed_pki / "ca.crt", pki / "ca.crt")
    for kind in ("kubelet", "kubelet-client"):
        for ext in ("crt", "key"):
            shutil.copy(bed_pki / f"{kind}-n{node.index}.{ext}", pki / f"{kind}.{ext}")
    node.path("kubelet.kubeconfig").write_text(config.kubeconfig(node, "kubelet-client"))
    node.path("kubelet.json").write_text(json.dumps(config.kubelet_config(node), indent=1))
    node.path("containerd").mkdir()
    node.path("containerd.toml").write_text(config.containerd_config(node, registries))
    node.path("cni").mkdir()
    node.path("cni", "10-strata.conflist").write_text(json.dumps(config.cni_config(node), indent=1))
    node.path("logs").mkdir()
    for sub in FIXED_IN_NODE.values():
        node.path(sub).mkdir(parents=True)


def private_dir(journal: Journal, seqs: Seqs, path: Path) -> None:
    """A directory under a private mount: a mount namespace can be held by a file only there."""
    path.mkdir(parents=True, exist_ok=True)
    tracked(journal, seqs, "kube-private-dir", _undo_private_dir, path=str(path))
    sh(["mount", "--bind", str(path), str(path)])
    sh(["mount", "--make-private", str(path)])


def mount_points(journal: Journal, seqs: Seqs) -> None:
    """The directories the nodes mount onto, made on this machine where they are missing (and removed after)."""
    wanted = [*FIXED_IN_NODE, str(config.NODE_DATA), str(config.AGENT_ROOT)]
    made = [d for d in wanted if not Path(d).exists()]
    tracked(journal, seqs, "kube-mount-points", _undo_dirs, paths=list[JsonValue](made))
    for d in made:
        Path(d).mkdir(parents=True)


def start(
    journal: Journal,
    seqs: Seqs,
    procs: Processes,
    node: config.NodePlan,
    kube: Path,
    disk_bytes: int,
    pause_tarball: Path,
    buffered: bool = False,
) -> Node:
    """The node's mount namespace, disk (`buffered`: its loop device without direct I/O, so this machine's page
    cache answers for it: a test bed's planted cache), cgroups, containerd (with the pause image) and kubelet."""
    tracked(journal, seqs, "kube-mount-ns", _undo_mount_ns, path=str(node.mount_ns))
    node.mount_ns.touch()
    sh(["unshare", f"--mount={node.mount_ns}", "--propagation", "slave", "true"])
    disk = _disk(journal, seqs, node, disk_bytes, buffered)
    inside: list[list[str]] = [["mount", "-o", "noatime", disk, str(config.NODE_DATA)]]
    inside += [["mkdir", "-p", str(config.NODE_DATA / d)] for d in ("kubelet", "strata", "pv")]
    inside += [["mount", "--bind", str(node.path(sub)), fixed] for fixed, sub in FIXED_IN_NODE.items()]
    inside.append(["mount", "--bind", str(config.NODE_DATA / "strata"), str(config.AGENT_ROOT)])
    for argv in inside:
        sh(["nsenter", f"--mount={node.mount_ns}", "--", *argv], timeout=60)
    # strata-loop's images on the node's disk: released once the node's pods and kubelet are gone, before its disk
    blocks = str(config.NODE_DATA / loopvolumes.DIR_NAME)
    tracked(journal, seqs, "kube-loop-volumes", loopvolumes.undo_loop_volumes, dir=blocks, mount_ns=str(node.mount_ns))
    tracked(
        journal,
        seqs,
        "kube-node-of-bed",
        _undo_node,
        cgroup_root=node.cgroup_root,
        containerd_sock=str(node.containerd_sock),
    )
    for key, (mountpoint, _) in cgroup_hierarchies().items():
        if key:
            (mountpoint / node.cgroup_root.strip("/")).mkdir(exist_ok=True)
    tracked(journal, seqs, "kube-root", undo_root, path=str(node.run_dir))
    node.run_dir.mkdir()
    name = f"n{node.index}"
    procs.start(f"containerd-{name}", node.enter(["containerd", "--config", str(node.path("containerd.toml"))]))
    _wait_containerd(procs, node, f"containerd-{name}")
    images.import_tarball(node.containerd_sock, pause_tarball)
    procs.start(f"kubelet-{name}", node.enter(config.kubelet_argv(kube, node)))
    return Node(node, disk, buffered)


def _disk(journal: Journal, seqs: Seqs, node: config.NodePlan, size: int, buffered: bool) -> str:
    """The node's loop device over its own file (with direct I/O unless `buffered`), with xfs on it."""
    tracked(journal, seqs, "file", BLOCK_UNDO["file"], path=str(node.disk_file))
    fill_file(node.disk_file, size)
    seq = tracked(journal, seqs, "loop", Loop.undo["loop"], backing_file=str(node.disk_file))
    dio = "off" if buffered else "on"
    dev = sh(["losetup", "--find", "--show", f"--direct-io={dio}", str(node.disk_file)]).stdout.strip()
    journal.update(seq, device=dev)
    sh(["mkfs.xfs", "-q", "-f", dev], timeout=120)
    return dev


def _wait_containerd(procs: Processes, node: config.NodePlan, name: str) -> None:
    sock = node.containerd_sock

    def answers() -> bool:
        return sock.exists() and sh(["ctr", "--address", str(sock), "version"], check=False, timeout=10).returncode == 0

    procs.wait_until(f"the containerd of node {node.index} did not answer", answers, name)


def wait_ready(api: Api, procs: Processes, nodes: list[Node]) -> None:
    """Every node Ready (its kubelet registered and its runtime up)."""
    for n in nodes:
        name = n.plan.node_name

        def ready(name: str = name) -> bool:
            try:
                node = api.get(f"/api/v1/nodes/{name}")
            except (ApiError, OSError):
                return False
            conditions = map(as_obj, arr(obj(node, "status"), "conditions"))
            return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

        procs.wait_until(f"node {name} was not Ready", ready, f"kubelet-n{n.plan.index}")


def remove_in(node: Node) -> Callable[[Path], None]:
    """Remove a directory inside the node (the provisioner's volumes live on its disk, in its mount namespace)."""

    def remove(path: Path) -> None:
        if not str(path).startswith(str(config.NODE_DATA) + "/"):
            raise StrataError(f"{path} is not on node {node.plan.index}'s disk", "a bug: report it")
        sh(node.plan.enter(["rm", "-rf", "--one-file-system", str(path)]), check=False, timeout=120)

    return remove


# The undo action of each kind this module journals (the namespaces' and links' are stack/netns.py's).
UNDO = {
    "kube-private-dir": _undo_private_dir,
    "kube-mount-ns": _undo_mount_ns,
    "kube-node-of-bed": _undo_node,
    "kube-mount-points": _undo_dirs,
}
