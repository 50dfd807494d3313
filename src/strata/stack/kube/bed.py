"""A single-node Kubernetes cluster on this machine, from real parts, every piece journaled.

Parts: etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager,
kube-scheduler and the kubelet (built here: build.py), containerd with runc
and the CNI bridge and host-local plugins (Debian's). Addresses: config.py
(the network rule). Each piece is journaled before it exists:

- the bed's root directory (certificates, configuration, the data of etcd,
  containerd and the kubelet, logs), removed last;
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
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Callable, Iterator, TypedDict

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue, arr, as_obj, num, obj, text
from strata.core.proc import sh
from strata.stack import netns
from strata.stack.journal import Journal, Undos, cleanup, need, state_dir, strings
from strata.stack.procfs import (
    cgroup_dirs,
    cgroup_hierarchies,
    cgroup_pids,
    cmdline,
    is_running,
    procs_mentioning,
    remove_cgroups,
    remove_tree,
    remove_tree_but_live_sockets,
    signal_and_wait,
    unmount_under,
)

from . import build, config, images, pki, provisioner
from .api import Api, ApiError, items, name_of

STOP_TIMEOUT_S = 15
JOURNAL_PREFIX = "kubernetes-"
READY_TIMEOUT_S = 180


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


@dataclass
class Bed:
    plan: config.Plan
    kube: Path
    api: Api
    pids: dict[str, int] = field(default_factory=dict)

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
        }

    def load_image(self, tarball: Path) -> str:
        return images.import_tarball(self.plan.containerd_sock, tarball)

    def dead(self) -> list[str]:
        return [name for name, pid in self.pids.items() if not is_running(pid)]


# ---- undo actions -------------------------------------------------------------------


def _undo_root(data: JsonObject) -> None:
    remove_tree(Path(need(data, "path")))


def _undo_bridge(data: JsonObject) -> None:
    name = need(data, "name")
    if Path(f"/sys/class/net/{name}").exists():
        sh(["ip", "link", "delete", name], timeout=30)


def _undo_route(data: JsonObject) -> None:
    sh(["ip", "route", "del", "blackhole", need(data, "block")], check=False, timeout=30)


def _undo_process(data: JsonObject) -> None:
    """Stop one of the bed's processes, only if that pid still is it (its command line names the bed's root)."""
    pid = int(num(data, "pid") or 0)
    if pid and need(data, "marker") in cmdline(pid) and is_running(pid):
        if signal_and_wait([pid], signal.SIGTERM, STOP_TIMEOUT_S):
            signal_and_wait([pid], signal.SIGKILL, 5)


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


Undo = Callable[[JsonObject], object]
Seqs = list[tuple[int, JsonObject, Undo]]  # what was made, undone in reverse on the way out


def _tracked(journal: Journal, seqs: Seqs, kind: str, undo: Undo, **data: JsonValue) -> int:
    seq = journal.intent(kind, **data)
    seqs.append((seq, data, undo))
    return seq


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((config.LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


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
def kubernetes_bed(journal: Journal, log: Callable[[str], None] = print, data_dir: Path | None = None) -> Iterator[Bed]:
    """Build (once), start and yield a single-node cluster; drain and undo all of it on exit.
    With `data_dir` (a directory on the file system under test) the kubelet's root, where emptyDir
    volumes live, is bound onto data_dir/kubelet and the provisioner's volumes go to data_dir/pv, so
    that what pods write lands on that file system, as a private dockerd's data-root does."""
    missing = missing_parts()
    if missing:
        raise StrataError(f"the Kubernetes test bed needs {', '.join(missing)}", "run scripts/install")
    kube, pause = build.binaries(log=log)
    token = secrets.token_hex(3)
    root = beds_dir() / token
    seqs: Seqs = []
    bed = None
    try:
        _tracked(journal, seqs, "kube-root", _undo_root, path=str(root))
        root.mkdir(parents=True)
        plan = _network(journal, seqs, token, root)
        for short in (plan.run_dir, plan.kubelet_dir):
            _tracked(journal, seqs, "kube-root", _undo_root, path=str(short))
            short.mkdir()
        if data_dir is not None:  # undone with the kubelet's dir (remove_tree unmounts what is below it)
            (data_dir / "kubelet").mkdir(parents=True, exist_ok=True)
            sh(["mount", "--bind", str(data_dir / "kubelet"), str(plan.kubelet_dir)])
        _write_files(plan)
        log(f"certificates and configuration in {root}")
        bed = Bed(plan, kube, _admin_api(plan))
        _node_cgroups(journal, seqs, plan)
        _start(journal, seqs, bed, "etcd", config.etcd_argv(plan))
        _wait_etcd(bed)
        _start(journal, seqs, bed, "kube-apiserver", config.apiserver_argv(kube, plan))
        bed.api.wait("the apiserver was not ready", bed.api.answers, READY_TIMEOUT_S, _fix(bed, "kube-apiserver"))
        _start(journal, seqs, bed, "kube-controller-manager", config.controller_manager_argv(kube, plan))
        _start(journal, seqs, bed, "kube-scheduler", config.scheduler_argv(kube, plan))
        _start(journal, seqs, bed, "containerd", ["containerd", "--config", str(plan.path("containerd.toml"))])
        _wait_containerd(bed)
        bed.load_image(images.pause_tarball(pause, plan.path("pause.tar")))
        _start(journal, seqs, bed, "kubelet", config.kubelet_argv(kube, plan))
        _wait_node(bed)
        log(f"node {plan.node_name} Ready at {plan.node_addr}; apiserver {plan.server}")
        with provisioner.serving(bed.api, plan.node_name, (data_dir or root) / "pv"):
            yield bed
    finally:
        if bed is not None:
            with contextlib.suppress(Exception):  # best effort: the undo below removes what is left anyway
                _drain(bed)
        for seq, data, undo in reversed(seqs):
            try:
                undo(data)
            finally:
                journal.release(seq)


def _network(journal: Journal, seqs: Seqs, token: str, root: Path) -> config.Plan:
    """The node's /28 on a bridge strata makes and addresses, and the service /28 beside it."""
    with netns.allocation_lock():
        used, routes = netns.host_usage()
        node = netns.pick_block(netns.POOL, used, routes, prefix=config.BLOCK_PREFIX)
        service = node and netns.pick_block(netns.POOL, used, [*routes, node], prefix=config.BLOCK_PREFIX)
        if node is None or service is None:
            raise StrataError(f"no two free /{config.BLOCK_PREFIX} in {netns.POOL}", "remove stale namespaces")
        plan = config.Plan(token, root, str(node), str(service), _free_port(), _free_port(), _free_port())
        _tracked(journal, seqs, "kube-bridge", _undo_bridge, name=plan.bridge)
        sh(["ip", "link", "add", plan.bridge, "type", "bridge"])
        Path(f"/proc/sys/net/ipv6/conf/{plan.bridge}/disable_ipv6").write_text("1")
        prefix = ipaddress.ip_network(plan.node_block).prefixlen
        sh(["ip", "addr", "add", f"{plan.node_addr}/{prefix}", "dev", plan.bridge])
        sh(["ip", "link", "set", plan.bridge, "up"])
        # the service /28 is routed nowhere: a blackhole keeps any stray packet off eth0's /24
        _tracked(journal, seqs, "kube-route", _undo_route, block=plan.service_block)
        sh(["ip", "route", "add", "blackhole", plan.service_block])
    return plan


def _write_files(plan: config.Plan) -> None:
    pki.make_all(plan.path("pki"), config.certificates(plan))
    for user in ("admin", "controller-manager", "scheduler", "kubelet-client"):
        name = "kubelet" if user == "kubelet-client" else user
        plan.path(f"{name}.kubeconfig").write_text(config.kubeconfig(plan, user))
    plan.path("kubelet.json").write_text(json.dumps(config.kubelet_config(plan), indent=1))
    plan.path("containerd").mkdir()
    plan.path("containerd.toml").write_text(config.containerd_config(plan))
    plan.path("cni").mkdir()
    plan.path("cni", "10-strata.conflist").write_text(json.dumps(config.cni_config(plan), indent=1))
    plan.path("logs").mkdir()


def _admin_api(plan: config.Plan) -> Api:
    p = plan.path("pki")
    return Api(plan.server, str(p / "ca.crt"), str(p / "admin.crt"), str(p / "admin.key"))


def _node_cgroups(journal: Journal, seqs: Seqs, plan: config.Plan) -> None:
    """The kubelet's cgroup root, made in every v1 hierarchy (the kubelet requires that it exists)."""
    _tracked(
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


def _start(journal: Journal, seqs: Seqs, bed: Bed, name: str, argv: list[str]) -> None:
    seq = _tracked(journal, seqs, "kube-process", _undo_process, name=name, marker=str(bed.plan.root))
    with open(bed.plan.path("logs", f"{name}.log"), "w") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    journal.update(seq, pid=proc.pid)
    seqs[-1][1]["pid"] = proc.pid
    bed.pids[name] = proc.pid


def log_tail(bed: Bed, name: str, chars: int = 1500) -> str:
    try:
        return bed.plan.path("logs", f"{name}.log").read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _fix(bed: Bed, name: str) -> str:
    return f"read {bed.plan.path('logs', name + '.log')}; its end:\n{log_tail(bed, name)}"


def _wait_until(what: str, test: Callable[[], object], bed: Bed, name: str, timeout_s: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(bed.pids[name]):
            raise StrataError(f"{name} exited while starting", _fix(bed, name))
        if test():
            return
        time.sleep(0.3)
    raise StrataError(f"{what} within {timeout_s:.0f} s", _fix(bed, name))


def _wait_etcd(bed: Bed) -> None:
    import urllib.request

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://{config.LOOPBACK}:{bed.plan.etcd_port}/health", timeout=2) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    _wait_until("etcd was not healthy", healthy, bed, "etcd")


def _wait_containerd(bed: Bed) -> None:
    sock = bed.plan.containerd_sock

    def answers() -> bool:
        return sock.exists() and sh(["ctr", "--address", str(sock), "version"], check=False, timeout=10).returncode == 0

    _wait_until("containerd did not answer", answers, bed, "containerd")


def _wait_node(bed: Bed) -> None:
    name = bed.plan.node_name

    def ready() -> bool:
        try:
            node = bed.api.get(f"/api/v1/nodes/{name}")
        except (ApiError, OSError):
            return False
        conditions = map(as_obj, arr(obj(node, "status"), "conditions"))
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    _wait_until(f"node {name} was not Ready", ready, bed, "kubelet")

    def default_account() -> bool:  # pods are admitted only once their namespace's service account exists
        try:
            return bool(bed.api.get("/api/v1/namespaces/default/serviceaccounts/default"))
        except (ApiError, OSError):
            return False

    _wait_until("the default service account did not appear", default_account, bed, "kube-controller-manager")


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


# ---- the bed as a background service (strata testbed kubernetes up/down) ------------------------


def current_file() -> Path:
    return beds_dir() / "current.json"


def current() -> JsonObject | None:
    """The running bed's facts (holder pid, kubeconfig, addresses), or None when none runs."""
    try:
        facts = as_obj(json.loads(current_file().read_text()), str(current_file()))
        holder = int(num(facts, "holder") or 0)
    except (OSError, ValueError):
        return None
    return facts if holder and is_running(holder) else None


class Stop(Exception):
    pass


def hold(log: Callable[[str], None] = print) -> None:
    """Bring a bed up and keep it until SIGTERM/SIGINT (or one of its processes dies), then undo it all.
    The journal is this process's: `strata cleanup` leaves the bed alone while it lives, undoes it after."""
    if current():
        raise StrataError("a Kubernetes test bed already runs here", "strata testbed kubernetes down")
    n = undo_orphans(log=log)  # a bed whose holder was killed still runs: it goes first
    if n:
        log(f"undid {n} resource(s) of a test bed whose holder was killed")

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        raise Stop()

    signal.signal(signal.SIGTERM, stop)
    journal = Journal(f"{JOURNAL_PREFIX}{os.getpid()}")
    try:
        with kubernetes_bed(journal, log=log) as bed:
            facts = {**bed.facts(), "holder": os.getpid(), "state": "ready"}
            current_file().write_text(json.dumps(facts, indent=1))
            log(f"ready; kubeconfig {bed.kubeconfig}")
            while not bed.dead():
                time.sleep(1)
            log(f"stopping: {', '.join(bed.dead())} exited (see {bed.plan.path('logs')})")
    except (Stop, KeyboardInterrupt):
        log("stopping")
    finally:
        current_file().unlink(missing_ok=True)
        journal.close()


def undo_orphans(log: Callable[[str], None] = print) -> int:
    """Undo the beds whose holder died (kill -9) from their journals; returns the resources undone."""
    return cleanup(log=log, pattern=f"{JOURNAL_PREFIX}*.jsonl", undo=UNDO)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "kube-root": _undo_root,
    "kube-bridge": _undo_bridge,
    "kube-route": _undo_route,
    "kube-process": _undo_process,
    "kube-node": _undo_node,
}
