"""`kubernetes`: instances as pods, on strata's own single-node cluster or on yours.

Without `kubeconfig:` strata starts its Kubernetes test bed (stack/kube: etcd, the control plane and a
kubelet built here, containerd, runc) for each stack, with the kubelet's root and the provisioner's
volumes on the file system under test, as a private dockerd keeps its data-root there; the pods' image
is loaded into its containerd without a registry. With `kubeconfig:` the pods run on your cluster, on
`node:` (a name or a label selector; default this machine's node if it is one, else the first node that
takes the pods). On this machine's node strata reads the pods' outputs and the disks here, and imports the
image into the node's containerd (or, with `images:`, pushes it to your registry). On another node strata
places its agent there (remote.py, agent.py) and reaches the node only through the API server: the image is
pushed to `images:` and pulled by the node, the pods go to the node by its hostname label with the run's
`tolerations`, and the cache, flush and absorbed checks judge the node's own disks.

Kubernetes has no block-I/O limit: read_bps-style limits (and the BW/ALL presets) are refused with that
reason; cpus and memory become resources.limits (pods.py).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import socket
from pathlib import Path
from typing import Callable, Iterator

from strata.core.errors import StrataError, Unsupported
from strata.core.instances import Build, ImageBuilder, ImageSpec, Isolation, Prebuilds
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.core.params import Limits, shorthand
from strata.core.proc import CommandError, sh
from strata.stack import buildcache
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.kube import bed as kube_bed
from strata.stack.kube.api import ApiError, items, name_of
from strata.stack.paths import path_target_kind
from strata.stack.runtimes.base import RefusesLimits, SizedPaths
from strata.stack.runtimes.docker import daemon

from . import agent, cluster, pods, remote
from .cluster import Cluster, connect, namespace
from .params import KubernetesParams
from .session import KubernetesSession


def _load_into(sock: str, spec: ImageSpec, importer: Callable[[Path, Path], object]) -> str:
    from strata.stack.runtimes.docker.image import build_image_tarball, image_tag

    importer(Path(sock), build_image_tarball(spec))
    return image_tag(spec)


def _local_addresses() -> set[str]:
    with contextlib.suppress(OSError, ValueError, CommandError):
        links = json.loads(sh(["ip", "-j", "addr"], timeout=10).stdout)
        return {a["local"] for link in links for a in link.get("addr_info", []) if a.get("local")}
    return set()


def this_node(cluster: Cluster) -> str | None:
    """The cluster's node that is this machine: by host name, else by one of its addresses; None: none is."""
    names = {socket.gethostname(), *_local_addresses()}  # no getfqdn: it may ask a DNS server (the network rule)
    for n in items(cluster.api.get("/api/v1/nodes")):
        addrs = map(as_obj, arr(obj(n, "status"), "addresses"))
        if name_of(n) in names or any(a.get("address") in names for a in addrs):
            return name_of(n)
    return None


class Kubernetes(RefusesLimits, SizedPaths, Prebuilds, ImageBuilder, Undoing):
    name = "kubernetes"
    params = KubernetesParams
    # the run's namespace and objects in it, the test bed, and what building its image uses
    undo: Undos = {**cluster.UNDO, **kube_bed.UNDO, **daemon.UNDO, **buildcache.UNDO}
    baseline = False
    isolation: Isolation = "container"
    paths = pods.PATHS
    log_paths = pods.LOG_PATHS
    concurrent = True
    limits = True
    sized_by = "claim_size"  # a pvc-block claim's device (SizedPaths)

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def available(self, host: JsonObject, params: KubernetesParams | None = None) -> str | None:
        """With a kubeconfig: the cluster answers as its user (an exec plugin runs now, before anything is built:
        a plugin that fails stops the run with its own words, a StrataError); else the test bed can be built."""
        if params is not None and params.kubeconfig is not None:
            if not Path(params.kubeconfig).expanduser().exists():
                return f"no kubeconfig at {params.kubeconfig}"
            api = connect(params.kubeconfig, params.context).api
            try:
                api.get("/version", timeout=15)
            except (ApiError, OSError) as e:
                return f"the cluster of {params.kubeconfig} does not answer at {api.server}: {str(e)[:300]}"
            return None
        from strata.stack.kube.build import binaries_built, go_binary

        missing = kube_bed.missing_parts()
        if missing:
            return f"the Kubernetes test bed needs {', '.join(missing)} (scripts/install)"
        if not binaries_built():
            try:
                go_binary()
            except StrataError as e:
                return f"the Kubernetes test bed is not built and cannot be: {e.message()}"
        return None

    def image_build(self, name: str, image_of: Callable[[], ImageSpec]) -> Build:
        """The workload's image as a `docker save` tarball, imported into the node's containerd."""
        from strata.stack.runtimes.docker.image import image_build

        return image_build(name, image_of)

    def builds(self, params: KubernetesParams) -> list[Build]:
        """The test bed's binaries, built from the Go module proxy once per machine; a user's cluster needs none."""
        if params.kubeconfig is not None:
            return []
        from strata.stack.kube.build import binaries, binaries_built
        from strata.stack.kube.config import KUBERNETES_VERSION

        return [Build("Kubernetes test bed binaries", lambda: KUBERNETES_VERSION, binaries_built, binaries, apart=True)]

    def impossible(self, params: KubernetesParams, fs: FilesystemParams) -> str | None:
        if fs.type == "raw":
            return "the kubernetes runtime needs a file system on the device, not raw (its test bed lives there)"
        return None

    def target_kind(self, params: KubernetesParams, path: str) -> str:
        """A claim of volumeMode Block (`pvc-block:CLASS`) is a device in the pod; every other path a directory."""
        return path_target_kind(path)

    def path_bytes(self, params: KubernetesParams, path: str) -> int | None:
        """A claim of volumeMode Block is a device of the storage each claim requests (at least: a class may round
        it up), which the workload's data must fit."""
        return params.claim_size if path_target_kind(path) == "device" else None

    def refused_limits(self, limits: Limits) -> str | None:
        return pods.unsupported_limits(limits)

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]:
        return [("kubernetes (test bed)", self.available(host))]

    @contextlib.contextmanager
    def provision(
        self, params: KubernetesParams, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> Iterator[KubernetesSession]:
        if mounted.mountpoint is None:
            raise Unsupported("the kubernetes runtime needs a file system on the device (this stack is raw)")
        ns = f"strata-{secrets.token_hex(4)}"
        if params.kubeconfig is None:
            with self._bed(params, mounted, mounted.mountpoint / "strata-k8s", journal, ns) as session:
                yield session
            return
        cluster = connect(params.kubeconfig, params.context)
        if not cluster.api.answers():
            raise Unsupported(f"the cluster of {params.kubeconfig} does not answer at {cluster.api.server}")
        if params.namespace is not None:  # before anything is made in it
            remote.check_pod_security(cluster, params.namespace)
        here = this_node(cluster)
        wanted = params.node if params.node is not None else here
        node = (
            wanted
            if wanted is not None and wanted == here
            else remote.choose_node(cluster, wanted, params.toleration_docs())
        )
        facts: JsonObject = {"runtime": "kubernetes", "cluster": cluster.api.server, "node": node}
        facts |= {"node_is_here": node == here, "version": text(cluster.api.get("/version"), "gitVersion")}
        with self._namespace(cluster, params, ns, journal) as ns:
            if node == here:
                loader = (
                    remote.publisher(params) if params.images else self._user_loader(node, params.containerd_socket)
                )
                session = KubernetesSession(
                    params, mounted, journal, cluster, node, ns, facts, loader, self._placement(params, node, True)
                )
                try:
                    yield session
                finally:
                    session.close()
                return
            publish = remote.publisher(params)
            agent_ref = publish(agent.image())
            with remote.placed_agent(cluster, journal, ns, node, params, agent_ref) as rem:
                offset, within = remote.clock_offset(rem.agent)
                facts |= {"agent": {"root": rem.root, "port": params.agent_port, "clock_offset_s": offset,
                                    "clock_uncertainty_s": within, "node": rem.agent.facts()}}  # fmt: skip
                where = self._placement(params, node, False)
                session = KubernetesSession(params, mounted, journal, cluster, node, ns, facts, publish, where, rem)
                try:
                    yield session
                finally:
                    session.close()
            if session.agent_gone:  # it died with the run's files on the node: an agent in its place removes them
                with (
                    contextlib.suppress(StrataError, ApiError, OSError),
                    remote.placed_agent(cluster, journal, ns, node, params, agent_ref),
                ):
                    pass  # an agent removes its root (the run's files on the node) as it ends

    @contextlib.contextmanager
    def _namespace(self, cluster: Cluster, params: KubernetesParams, ns: str, journal: Journal) -> Iterator[str]:
        """The user's namespace as it is (`namespace:`), or one strata makes and deletes."""
        if params.namespace is not None:
            yield params.namespace
            return
        with namespace(cluster, ns, journal) as made:
            yield made

    @staticmethod
    def _placement(params: KubernetesParams, node: str, here: bool) -> pods.Placement:
        """This machine's node by name, its image loaded (or pulled from `images:`); another node by its hostname
        label with the run's tolerations, its image pulled."""
        pull = "IfNotPresent" if params.images else "Never"
        tolerations = tuple(params.toleration_docs())
        return pods.Placement(node, here, tolerations, pull, params.pull_secret)

    @contextlib.contextmanager
    def _bed(
        self, params: KubernetesParams, mounted: Mounted, data_dir: Path, journal: Journal, ns: str
    ) -> Iterator[KubernetesSession]:
        from strata.stack.kube.images import import_tarball

        with kube_bed.kubernetes_bed(journal, log=lambda _: None, data_dir=data_dir) as bed:
            cluster = Cluster(bed.api, str(bed.kubeconfig), None, own=True)
            facts: JsonObject = {
                "runtime": "kubernetes",
                "bed": True,
                "node": bed.plan.node_name,
                "node_is_here": True,
                "version": bed.facts()["version"],
                "kubelet_root": str(data_dir / "kubelet"),
            }
            sock = str(bed.plan.containerd_sock)
            with namespace(cluster, ns, journal):
                session = KubernetesSession(
                    params,
                    mounted,
                    journal,
                    cluster,
                    bed.plan.node_name,
                    ns,
                    facts,
                    lambda spec: _load_into(sock, spec, import_tarball),
                )
                session.watch_bed = bed.dead
                try:
                    yield session
                finally:
                    session.close()

    def _user_loader(self, node: str, sock: str) -> Callable[[ImageSpec], str]:
        def load(spec: ImageSpec) -> str:
            from strata.stack.kube.images import import_tarball

            if not (shutil.which("ctr") and Path(sock).exists()):
                raise Unsupported(
                    f"cannot load strata's image into node {node}: no containerd at {sock} here "
                    "(set `containerd_socket:`, or import `strata image build` output into the node by hand)"
                )
            return _load_into(sock, spec, import_tarball)

        return load


KUBERNETES = Kubernetes()
