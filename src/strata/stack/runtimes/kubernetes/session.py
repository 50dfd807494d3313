"""The kubernetes session: a cluster, the run's namespace in it, one node the pods are pinned to.

Per trial it prepares a path and runs the instances as pods (pods.py, running.py):

- `hostpath`: a directory of the file system under test, mounted into the pod;
- `local`: the same directory as a `local` PersistentVolume, bound to a claim by name (static
  provisioning: the cluster's volume machinery, on the file system strata built);
- `emptydir`: the kubelet's own directory (on the test bed: bound onto the file system under test);
- `pvc:CLASS`: a claim of the StorageClass you name, provisioned by the cluster; its volume's storage
  is the cluster's, not the stack's device, and the result says which (`stack_facts.path`). The cache
  check reads the disks that hold the volume when this host can see them, and says it could not be
  made when it cannot (a network or CSI volume);
- `pvc-block:CLASS`: a claim of that class with volumeMode Block, attached to the pod as a device
  (`volumeDevices`, at DEVICE_IN_CONTAINER): the workload gets a block device, as on the `device` path.
  The cache and flush checks read the node's block device under the claim (the device a `local` volume
  names, else the one the kubelet mapped into the pod) and each disk below it, here or, on a node strata
  reaches through its agent, as the agent finds them; with several instances, the disks below every
  instance's device (each sees all their bytes).

Claims and volumes are journaled (cluster.py); the namespace takes every pod and claim with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
import urllib.parse
from itertools import repeat
from pathlib import Path
from typing import Callable, Iterator

from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.instances import ImageSpec, InstanceRequest, Target
from strata.core.jsondoc import JsonArray, JsonObject, JsonValue, arr, as_obj, obj, text
from strata.core.params import Load, path_kind
from strata.stack.blockdev import disk_of, loop_backing
from strata.stack.filesystems.base import Mounted
from strata.stack.journal import Journal
from strata.stack.kube import provisioner
from strata.stack.kube.api import ApiError, items, name_of
from strata.stack.paths import (
    DATA_IN_CONTAINER,
    DEVICE_IN_CONTAINER,
    LOG_IN_CONTAINER,
    OUT_DIR,
    SYNC_DIR,
    PathHandle,
    PerInstance,
    path_target_kind,
    safe_name,
)
from strata.stack.runtimes.docker.cmdline import stage

from . import pods
from .agent import AgentError
from .cluster import Cluster, cluster_object, wait_phase
from .lease import AgentPod, NodeLease
from .params import KubernetesParams
from .remote import Remote
from .running import KubeRunning, OnNode, Pod

BIND_TIMEOUT_S = 180
KUBELET_ROOT = "/var/lib/kubelet"  # a user's node: where its emptyDir volumes live (the kubelet's default)


def disks_holding(path: str) -> list[str]:
    """Kernel names of the disks that hold `path`'s bytes: its disk, and below a loop device the disk
    of its backing file ([] when no block device holds it: tmpfs, a network file system)."""
    with contextlib.suppress(OSError):
        k = disk_of(path)
        if k is None:
            return []
        below: list[str] = []
        backing = Path(f"/sys/block/{k}/loop/backing_file")
        if backing.exists():
            below = disks_holding(backing.read_text().strip())
        return [k, *[d for d in below if d != k]]
    return []


def device_name(path: str) -> str | None:
    """The kernel name of the block device at `path` (a device node, or a link to one: a partition keeps its own
    name), None when `path` is no block device."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if stat.S_ISBLK(st.st_mode):
            link = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
            return link.resolve().name if link.exists() else None
    return None


def disks_under_device(kname: str) -> list[str]:
    """A block device and each disk below it: a loop device's backing file's disks ([kname] for any other)."""
    backing = loop_backing(kname)
    below = disks_holding(str(backing)) if backing is not None else []
    return [kname, *[d for d in below if d != kname]]


def common_layers(chains: list[list[str]]) -> list[str]:
    """The disks every chain goes through, in the first chain's order: what several instances' devices share below
    them (the file system that holds each claim's image), each of which sees every instance's bytes (pure)."""
    if not chains:
        return []
    return [d for d in chains[0] if all(d in c for c in chains[1:])]


class KubernetesSession:
    def __init__(
        self,
        params: KubernetesParams,
        mounted: Mounted,
        journal: Journal,
        cluster: Cluster,
        node: str,
        namespace: str,
        facts: JsonObject,
        loader: Callable[[ImageSpec], str],
        placement: pods.Placement | None = None,
        remote: Remote | None = None,
    ) -> None:
        self.name = params.name
        self.params = params
        self.mounted = mounted
        self.journal = journal
        self.cluster = cluster
        self.node = node
        self.namespace = namespace
        self.facts = facts
        # a node of a cluster strata did not start for this stack: its kubelet may stop under the trial
        self.lease = None if cluster.own else NodeLease(cluster.api.get, node, params.node_lost_s)
        self.load_image = loader  # ImageSpec -> the image's name in the node
        self.placement = placement or pods.Placement(node)
        self.remote = remote  # a node that is not this machine: its agent
        self.agent_pod = None if remote is None else AgentPod(cluster.api.get, remote.agent.pod_path, node)
        self.images: dict[str, str] = {}
        self.running: list[KubeRunning] = []
        # the test bed's processes: a callable naming the dead ones
        self.watch_bed: Callable[[], list[str]] | None = None
        self._count = 0

    # -- RuntimeSession ---------------------------------------------------------------------------

    def target(self, handle: PathHandle, host_out: Path) -> Target:
        return Target(handle.target_kind, handle.target_path, OUT_DIR, host_tools=False, sync_dir=SYNC_DIR)

    def watch(self) -> tuple[str, str] | None:
        dead = self.watch_bed() if self.watch_bed else []
        if dead:
            return ("daemon_died", f"the Kubernetes test bed's {', '.join(dead)} exited")
        lost = self.lease.lost() if self.lease is not None else None
        lost = lost or (self.agent_pod.lost() if self.agent_pod is not None else None)
        return ("host_lost", lost) if lost else None

    @property
    def agent_gone(self) -> bool:
        return self.agent_pod is not None and self.agent_pod.why is not None

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        kind, n = path_kind(name), load.containers
        tag = safe_name(trial_dir.name).lower().replace("_", "-").replace(".", "-")[:40].strip("-")
        gone = self.agent_pod.lost() if self.agent_pod is not None else None
        if gone:  # lost between trials: this session reaches the node no more; the next places a new agent
            raise TrialFailure("host_lost", gone, layer="runtime")
        if self.remote is not None:  # the node's page cache, as a trial here drops this machine's
            self.remote.agent.drop_caches()
        if kind == "emptydir":
            handle = PathHandle(
                name, "dir", DATA_IN_CONTAINER, None, [PerInstance() for _ in range(n)], facts=self._emptydir()
            )
            if self.remote is not None:
                handle.disks = []  # the pod's volume on the node: found once the pods run (_pod_volume_disks)
            elif not self.facts.get("bed"):  # the node's kubelet directory, not the file system strata built
                handle.disks = disks_holding(KUBELET_ROOT)
            yield handle
        elif kind == "hostpath":
            with self._dirs(tag, n) as dirs:
                handle = PathHandle(
                    name, "dir", DATA_IN_CONTAINER, str(dirs[0].parent), [PerInstance(dir=str(d)) for d in dirs]
                )
                self._node_dir_disks(handle, dirs[0])
                yield handle
        elif kind == "local":
            with self._dirs(tag, n) as dirs, self._local_claims(tag, dirs) as claims:
                per = [PerInstance(dir=str(d), claim=c) for d, c in zip(dirs, claims)]
                handle = PathHandle(name, "dir", DATA_IN_CONTAINER, str(dirs[0].parent), per, facts={"volume": "local"})
                self._node_dir_disks(handle, dirs[0])
                yield handle
        elif kind in ("pvc", "pvc-block"):
            storage_class, block = name.split(":", 1)[1], kind == "pvc-block"
            if self.facts.get("bed"):
                self._bed_can_serve(storage_class, block, n)
            with self._class_claims(tag, n, storage_class, block) as (claims, facts):
                where = DEVICE_IN_CONTAINER if block else DATA_IN_CONTAINER
                per = [PerInstance(claim=c) for c in claims]
                yield PathHandle(name, path_target_kind(name), where, None, per, facts=facts)
        else:
            raise Unsupported(f"the kubernetes runtime has the paths {', '.join(pods.PATHS)}, not {name}")

    @contextlib.contextmanager
    def log_path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        """A server's log on a path of its own, on the stack's device (a hostPath directory or a `local` claim),
        mounted at LOG_IN_CONTAINER beside the data: stack/runtimes/base.py LogSession."""
        kind, n = path_kind(name), load.containers
        tag = safe_name(trial_dir.name).lower().replace("_", "-").replace(".", "-")[:36].strip("-") + "-log"
        if kind == "hostpath":
            with self._dirs(tag, n) as dirs:
                yield PathHandle(
                    name, "dir", LOG_IN_CONTAINER, str(dirs[0].parent), [PerInstance(dir=str(d)) for d in dirs]
                )
        elif kind == "local":
            with self._dirs(tag, n) as dirs, self._local_claims(tag, dirs, "log") as claims:
                per = [PerInstance(dir=str(d), claim=c) for d, c in zip(dirs, claims)]
                yield PathHandle(name, "dir", LOG_IN_CONTAINER, str(dirs[0].parent), per, facts={"volume": "local"})
        else:
            raise Unsupported(
                f"the kubernetes runtime gives a server's log the paths {', '.join(pods.LOG_PATHS)} (on the stack's "
                f"device, where the cache check sees its writes), not {name}"
            )

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> KubeRunning:
        why = pods.unsupported_limits(load.limits)
        if why:
            raise Unsupported(why)
        why = pods.unreachable_servers(requests, self.remote.node if self.remote is not None else None)
        if why:
            raise Unsupported(why)
        self._count += 1
        on_node = None
        if self.remote is not None:  # the instances' files on the node, through its agent
            trial = f"trials/{safe_name(sync_dir.parent.name)[:40]}-{self._count}"
            on_node = OnNode(self.remote, trial, {r.index: f"{trial}/inst-{r.index}" for r in requests})
        running = KubeRunning(self, sync_dir, load.limits, on_node)
        self.running.append(running)
        manifests = []
        for r in requests:
            inst = handle.per_instance[r.index] if r.index < len(handle.per_instance) else {}
            log = handle.log
            at = log.per_instance[r.index] if log is not None and r.index < len(log.per_instance) else {}
            stage(r)
            name = pods.pod_name(str(self._count), r.index)
            m = pods.pod_manifest(
                name,
                self.namespace,
                self.namespace,
                self.placement,
                r,
                handle.name,
                inst.get("dir"),
                load.limits,
                self._image(r.image),
                on_node.sync_path() if on_node else str(sync_dir),
                inst.get("claim"),
                (log.name, at.get("dir"), at.get("claim")) if log is not None else None,
                on_node.out_path(r.index) if on_node else None,
            )
            manifests.append((Pod(name, r), m))
        running.create(manifests)
        if path_kind(handle.name) in ("pvc", "pvc-block"):
            running.on_ready = lambda: self._claim_facts(handle, running)  # a WaitForFirstConsumer claim binds now
        elif self.remote is not None and path_kind(handle.name) == "emptydir":
            running.on_ready = lambda: self._pod_volume_disks(handle, running, {})
        return running

    def close(self) -> None:
        for r in list(self.running):
            r.stop()

    # -- paths ------------------------------------------------------------------------------------

    def _data_root(self) -> Path:
        if self.mounted.mountpoint is None:
            raise Unsupported("the kubernetes runtime needs a file system on the device (this stack is raw)")
        return self.mounted.mountpoint / "strata-k8s-data"

    @contextlib.contextmanager
    def _dirs(self, tag: str, n: int) -> Iterator[list[Path]]:
        """A directory per instance: on the file system under test here, or on the node through its agent (then
        as the node names them)."""
        if self.remote is not None:
            with self._node_dirs(tag, n) as dirs:
                yield dirs
            return
        base = self._data_root() / tag
        dirs = [base / str(i) for i in range(n)]
        try:
            for d in dirs:
                d.mkdir(parents=True, exist_ok=True)
            yield dirs
        finally:
            shutil.rmtree(base, ignore_errors=True)

    @contextlib.contextmanager
    def _node_dirs(self, tag: str, n: int) -> Iterator[list[Path]]:
        remote = self.remote
        assert remote is not None
        rels = [f"data/{tag}/{i}" for i in range(n)]
        remote.agent.mkdirs(rels)
        try:
            yield [Path(remote.node_path(r)) for r in rels]
        finally:
            with contextlib.suppress(AgentError):
                remote.agent.remove(f"data/{tag}")

    def _emptydir(self) -> JsonObject:
        facts: JsonObject = {"volume": "emptyDir", "where": "the kubelet's root directory on the node"}
        if self.facts.get("bed"):
            facts["where"] = "the kubelet's root, bound onto the file system under test"
        return facts

    def _claim(self, name: str, storage_class: str, volume: str | None = None, block: bool = False) -> JsonObject:
        return pods.claim_manifest(name, storage_class, self.params.claim_size, volume, block)

    def _claims_path(self, name: str = "") -> str:
        return f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims" + (f"/{name}" if name else "")

    @contextlib.contextmanager
    def _local_claims(self, tag: str, dirs: list[Path], role: str = "data") -> Iterator[list[str]]:
        """A `local` PersistentVolume per directory, each bound by name to its claim."""
        made: list[str] = []
        with contextlib.ExitStack() as stack:
            for i, d in enumerate(dirs):
                pv = f"{self.namespace}-{tag}-{i}"[:63].strip("-")
                body: JsonObject = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv, "labels": {"app.kubernetes.io/managed-by": "strata"}},
                    "spec": {
                        "capacity": {"storage": str(self.params.claim_size)},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": "",
                        "local": {"path": str(d)},
                        "nodeAffinity": _on_node(self.placement.node),
                    },
                }
                stack.enter_context(cluster_object(self.cluster, self.journal, "/api/v1/persistentvolumes", body))
                claim = f"{role}-{i}"
                stack.enter_context(
                    cluster_object(self.cluster, self.journal, self._claims_path(), self._claim(claim, "", pv))
                )
                made.append(claim)
            for c in made:
                wait_phase(self.cluster.api, self._claims_path(c), ("Bound",), BIND_TIMEOUT_S, f"claim {c}")
            yield made

    def _bed_can_serve(self, storage_class: str, block: bool, n: int) -> None:
        """On the test bed: the class serves this volume mode, and the images of `strata-loop` fit the file system
        under test (each claim is an image of claim_size there); Unsupported with the fix, else."""
        mode = "Block" if block else "Filesystem"
        why = provisioner.unservable({"spec": {"storageClassName": storage_class, "volumeMode": mode}})
        if why:
            raise Unsupported(f"the test bed's {why}")
        if storage_class == provisioner.BLOCK_CLASS and self.mounted.mountpoint is not None:
            need, free = n * self.params.claim_size, shutil.disk_usage(self.mounted.mountpoint).free
            if need > free:
                raise Unsupported(
                    f"the test bed's {storage_class} makes each claim an image of claim_size on the file system under "
                    f"test: {n} x {self.params.claim_size >> 20} MiB do not fit its {free >> 20} MiB free; set the "
                    "runtime's claim_size smaller (it must still hold the workload's data) or the device larger"
                )

    @contextlib.contextmanager
    def _class_claims(
        self, tag: str, n: int, storage_class: str, block: bool = False
    ) -> Iterator[tuple[list[str], JsonObject]]:
        """A claim of `storage_class` per instance (of volumeMode Block with `block`); bound now (Immediate) or by
        the first pod."""
        api = self.cluster.api
        try:
            sc = api.get(f"/apis/storage.k8s.io/v1/storageclasses/{storage_class}")
        except ApiError as e:
            if e.status == 404:
                have = [name_of(i) for i in items(api.get("/apis/storage.k8s.io/v1/storageclasses"))]
                raise Unsupported(
                    f"the cluster has no StorageClass {storage_class} (it has: {', '.join(have) or 'none'})"
                )
            raise
        facts: JsonObject = {"volume": "claim", "storage_class": storage_class, "provisioner": text(sc, "provisioner")}
        if block:
            facts["volume_mode"] = "Block"
        claims = [f"data-{i}" for i in range(n)]
        with contextlib.ExitStack() as stack:
            for c in claims:
                body = self._claim(c, storage_class, block=block)
                stack.enter_context(cluster_object(self.cluster, self.journal, self._claims_path(), body))
            if sc.get("volumeBindingMode", "Immediate") == "Immediate":
                for c in claims:
                    self._wait_bound(c, storage_class)
            yield claims, facts

    def _wait_bound(self, claim: str, storage_class: str) -> None:
        """Until the claim is Bound; what its provisioner said of it (its Warning events) in the error when it is not
        in time, or at once when the test bed's provisioner refused it (it does not try again)."""
        path, deadline = self._claims_path(claim), time.monotonic() + BIND_TIMEOUT_S
        while time.monotonic() < deadline:
            if obj(self.cluster.api.get(path), "status").get("phase") == "Bound":
                return
            said, final = self._claim_warnings(claim)
            if final:
                raise Unsupported(f"claim {claim} of {storage_class}: {said}")
            time.sleep(0.25)
        said, _ = self._claim_warnings(claim)
        raise StrataError(
            f"claim {claim} of {storage_class}: not Bound after {BIND_TIMEOUT_S} s"
            + (f"; its provisioner said: {said}" if said else ""),
            "look at the cluster's events (kubectl get events): does the class's provisioner run, and serve "
            "this volume mode?",
        )

    def _claim_warnings(self, claim: str) -> tuple[str, bool]:
        """The claim's Warning events' messages, and whether the test bed's provisioner gave up on it."""
        selector = urllib.parse.quote(f"involvedObject.name={claim},involvedObject.kind=PersistentVolumeClaim")
        try:
            events = items(self.cluster.api.get(f"/api/v1/namespaces/{self.namespace}/events?fieldSelector={selector}"))
        except ApiError:
            return "", False
        warned = [e for e in events if text(e, "type") == "Warning"]
        said = "; ".join(dict.fromkeys(text(e, "message") for e in warned))[-800:]
        final = any(text(obj(e, "source"), "component") == provisioner.COMPONENT for e in warned)
        return said, final

    def _claim_facts(self, handle: PathHandle, running: KubeRunning) -> None:
        """The bound volume of each claim: its source, and the disks that hold it when this host sees them (on a
        node strata reaches through its agent: as the agent finds them under each pod's volume). A claim of
        volumeMode Block: its device (the `local` path its volume names, else the one the kubelet mapped into the
        pod) and each disk below it."""
        api, disks, volumes = self.cluster.api, list[str](), JsonArray()
        if self.remote is not None:
            named = {}
            for inst in handle.per_instance:
                claim = api.get(self._claims_path(inst["claim"]))
                named[inst["claim"]] = text(obj(claim, "spec"), "volumeName")
            self._pod_volume_disks(handle, running, named)
            return
        block, chains = handle.target_kind == "device", list[list[str]]()
        for inst, uid in zip(handle.per_instance, running.uids() if block else repeat("")):
            claim = api.get(self._claims_path(inst["claim"]))
            pv_name = text(obj(claim, "spec"), "volumeName")
            if not pv_name:
                continue
            spec = obj(api.get(f"/api/v1/persistentvolumes/{pv_name}"), "spec")
            source = next((k for k in ("hostPath", "local", "csi", "nfs", "iscsi", "rbd") if k in spec), "other")
            where = text(obj(spec, source), "path") or None if source in ("hostPath", "local") else None
            vol: JsonObject = {"name": pv_name, "source": source, "capacity": obj(spec, "capacity").get("storage", "")}
            if source == "csi":
                vol["driver"] = text(obj(spec, "csi"), "driver")
            if block:
                vol["volume_mode"] = text(spec, "volumeMode", "Filesystem")
                chain = self._block_disks(where, uid, pv_name, vol) if self.node_is_here() else []
                if chain:
                    chains.append(chain)
            elif where and self.node_is_here() and os.path.exists(where):
                vol["path"] = where
                disks += [d for d in disks_holding(where) if d not in disks]
            volumes.append(vol)
        handle.facts["volumes"] = volumes
        if block:
            disks = common_layers(chains) if len(chains) == len(handle.per_instance) else []
        handle.disks = disks
        if disks:
            handle.facts["disks"] = [*disks]
        elif block and chains and len(chains) == len(handle.per_instance):
            handle.facts["cache_check"] = "not made: the instances' claims are devices with no disk below in common"
        else:
            handle.facts["cache_check"] = "not made: the claim's storage is not visible from this host"

    def _block_disks(self, where: str | None, pod_uid: str, volume: str, vol: JsonObject) -> list[str]:
        """The node's block device under a claim of volumeMode Block, and each disk below it, with the device's path
        in `vol`: the `local` (or hostPath) path its volume names, else the link the kubelet made in the pod's
        directory to the device it mapped (a CSI volume's); [] when neither is a block device here."""
        found = [where] if where else []
        root = self.facts.get("kubelet_root") or KUBELET_ROOT
        if pod_uid:
            found += sorted(str(p) for p in Path(str(root), "pods", pod_uid, "volumeDevices").glob(f"*/{volume}"))
        for path in found:
            kname = device_name(path)
            if kname is not None:
                vol["device"] = path if path == where else os.path.realpath(path)
                chain = disks_under_device(kname)
                vol["disks"] = list[JsonValue](chain)
                return chain
        return []

    def _node_dir_disks(self, handle: PathHandle, d: Path) -> None:
        """A directory of strata's on a node it reaches through its agent: the disks under it there (else the
        device's, this machine's: the path is on the file system under test)."""
        if self.remote is None:
            return
        got = self.remote.agent.disks(path=str(d))
        handle.disks, handle.disks_on = [str(x) for x in arr(got, "disks")], self.remote.node
        handle.facts |= {"node": self.remote.node, "node_dir": str(d.parent), "fs": got.get("fs")}
        if handle.disks:
            handle.facts["disks"] = list[JsonValue](handle.disks)
        else:
            handle.facts["cache_check"] = f"not made: {got.get('why')}"

    def _pod_volume_disks(self, handle: PathHandle, running: KubeRunning, volumes: dict[str, str]) -> None:
        """The disks under each pod's `data` volume on the node, as its agent finds them (`volumes`: claim ->
        its volume's name; an emptyDir is the pod's `data`); where none holds it, why, in the path's facts. A claim
        of volumeMode Block: its device and the disks below it, and with several instances the disks below them all."""
        remote = self.remote
        assert remote is not None
        api, disks, found, chains = self.cluster.api, list[str](), JsonArray(), list[list[str]]()
        for inst, uid in zip(handle.per_instance, running.uids()):
            claim = inst.get("claim")
            volume = volumes.get(claim, "") if claim else "data"
            source, at = "", ""
            if volume and claim:
                spec = obj(api.get(f"/api/v1/persistentvolumes/{volume}"), "spec")
                source = next((k for k in ("hostPath", "local", "csi", "nfs", "iscsi", "rbd") if k in spec), "other")
                at = text(obj(spec, source), "path") if source in ("hostPath", "local") else ""
                got = remote.agent.disks(path=at) if at else remote.agent.disks(pod=uid, volume=volume)
            else:
                got = remote.agent.disks(pod=uid, volume=volume)
            seen = [str(d) for d in arr(got, "disks")]
            disks += [d for d in seen if d not in disks]
            chains += [seen] if seen else []
            found.append({"volume": volume, "source": source or "emptyDir", "disks": list[JsonValue](seen),
                          "fs": got.get("fs"), "why": got.get("why")} | ({"path": at} if at else {}))  # fmt: skip
        if handle.target_kind == "device":  # each instance's own device: the disks below them all
            disks = common_layers(chains) if len(chains) == len(handle.per_instance) else []
        handle.facts["volumes"] = found
        handle.facts["node"] = remote.node
        handle.disks, handle.disks_on = disks, remote.node
        if disks:
            handle.facts["disks"] = list[JsonValue](disks)
        else:
            whys = sorted({str(v.get("why")) for v in map(as_obj, found) if v.get("why")})
            handle.facts["cache_check"] = f"not made: {'; '.join(whys) or 'no block device holds the volume'}"

    def node_is_here(self) -> bool:
        return bool(self.facts.get("node_is_here"))

    # -- images and outputs -----------------------------------------------------------------------

    def _image(self, spec: ImageSpec | None) -> str:
        spec = spec or ImageSpec()
        key = spec.key()
        if key not in self.images:
            self.images[key] = self.load_image(spec)
        return self.images[key]


def _on_node(node: str) -> JsonObject:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
            ]
        }
    }
