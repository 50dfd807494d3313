"""The test bed's dynamic provisioner: StorageClass `strata-hostpath`, claims served as directories, and
`strata-loop`, claims of volumeMode Block served as loop devices.

A claim of a class whose provisioner is external stays Pending until someone creates a volume for it;
in a real cluster a CSI driver or the local-path provisioner does, here this thread does, through the
same API: it sees a Pending claim of its class, makes a directory under `base`, and creates a
PersistentVolume (hostPath, pinned to the node, the claim in its claimRef) that the controller-manager's
PV controller then binds, exactly as it binds any provisioned volume. A volume released by its claim is
removed with its directory (reclaimPolicy Delete). The directory is on the file system strata built
when the bed runs a stack (`kubernetes_bed(data_dir=...)`), so `pvc:strata-hostpath` measures it. On a bed of
several nodes the class binds once the scheduler chose the first pod's node, and the volume is a directory on
that node's own disk.

A claim of `strata-loop` (volumeMode Block: `pvc-block:strata-loop`) gets an image file of its size under
`blocks` (beside `base`: on the file system strata built; on a bed of several nodes, on the chosen node's disk,
made inside the node), written through, and a loop device with direct I/O over it (loopvolumes.py), which its
PersistentVolume (volumeMode Block) names as its `local` path; released, the loop device is detached and the
image removed. A claim a class cannot serve (a Block claim of `strata-hostpath`, a Filesystem claim of
`strata-loop`, an image that does not fit) gets a Warning event `ProvisioningFailed` saying why, as a CSI
provisioner's does, and is left Pending.
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.core.proc import CommandError

from . import loopvolumes
from .api import Api, ApiError
from .config import NODE_DATA

CLASS = "strata-hostpath"
PROVISIONER = "strata.local/hostpath"
BLOCK_CLASS = "strata-loop"
BLOCK_PROVISIONER = "strata.local/loop"
IMAGE = "strata.local/image"  # a block volume's annotation: the image file under its loop device
COMPONENT = "strata-provisioner"  # the source of its events
BLOCKS = loopvolumes.DIR_NAME  # the directory of the block volumes' images, beside the directories' (`pv`)
POLL_S = 0.5


SELECTED_NODE = "volume.kubernetes.io/selected-node"  # the scheduler's choice for a WaitForFirstConsumer claim


def storage_class(binding: str = "Immediate", name: str = CLASS, provisioner: str = PROVISIONER) -> JsonObject:
    """A class of the bed: bound at once on a single node; on a bed of several, once the scheduler chose the first
    pod's node (WaitForFirstConsumer), where the volume is then made."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": binding,
    }


def _volume(claim: JsonObject, node: str, provisioner: str, source: JsonObject) -> JsonObject:
    meta, spec = obj(claim, "metadata"), obj(claim, "spec")
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pvc-{meta['uid']}", "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
        "spec": {
            "capacity": {"storage": obj(obj(spec, "resources"), "requests").get("storage", "1Gi")},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": text(spec, "storageClassName"),
            **source,
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                    ]
                }
            },
        },
    }


def volume_for(claim: JsonObject, node: str, base: Path) -> JsonObject:
    """The PersistentVolume that serves `claim` (pure): a hostPath directory under `base`."""
    name = f"pvc-{obj(claim, 'metadata')['uid']}"
    return _volume(claim, node, PROVISIONER, {"hostPath": {"path": str(base / name), "type": "DirectoryOrCreate"}})


def block_volume_for(claim: JsonObject, node: str, device: str, image: Path) -> JsonObject:
    """The PersistentVolume that serves a claim of volumeMode Block (pure): the loop device `device` over `image`,
    as a `local` volume of volumeMode Block pinned to `node` (the image named in an annotation, for its release)."""
    pv = _volume(claim, node, BLOCK_PROVISIONER, {"volumeMode": "Block", "local": {"path": device}})
    obj(obj(pv, "metadata"), "annotations")[IMAGE] = str(image)
    return pv


def unservable(claim: JsonObject) -> str | None:
    """Why the bed's class cannot serve this claim (its volume mode), or None (pure)."""
    spec = obj(claim, "spec")
    cls, block = spec.get("storageClassName"), spec.get("volumeMode") == "Block"
    if cls == CLASS and block:
        return f"{CLASS} serves directories (volumeMode Filesystem); a claim of volumeMode Block takes {BLOCK_CLASS}"
    if cls == BLOCK_CLASS and not block:
        return f"{BLOCK_CLASS} serves block devices (volumeMode Block); a claim of volumeMode Filesystem takes {CLASS}"
    return None


class Provisioner(threading.Thread):
    """`node`: the single node every volume goes to, its directories made here under `base` and its block volumes'
    images under `blocks`; or None, each volume on the node the scheduler chose for its claim (SELECTED_NODE), under
    `base` inside that node, made by the kubelet (DirectoryOrCreate) and removed through `removers[node]`, and each
    block volume's image under `blocks` inside that node, through `enters[node]` (None: no block volumes)."""

    def __init__(
        self,
        api: Api,
        node: str | None,
        base: Path,
        removers: dict[str, Callable[[Path], None]] | None = None,
        blocks: Path | None = None,
        enters: dict[str, loopvolumes.Enter] | None = None,
    ):
        super().__init__(name="strata-provisioner", daemon=True)
        self.api, self.node, self.base, self.blocks = api, node, base, blocks
        self.removers, self.enters = removers or {}, enters or {}
        self.stopped = threading.Event()
        self.errors: list[str] = []
        self.refused: set[str] = set()  # claims (uids) told why they cannot be served: not tried again

    def run(self) -> None:
        while not self.stopped.wait(POLL_S):
            try:
                self.once()
            except (ApiError, OSError, ssl.SSLError, ValueError) as e:  # the apiserver restarting, going away
                self.errors = (self.errors + [str(e)[:300]])[-5:]

    def once(self) -> None:
        for claim in map(as_obj, arr(self.api.get("/api/v1/persistentvolumeclaims"), "items")):
            spec = obj(claim, "spec")
            if spec.get("storageClassName") in (CLASS, BLOCK_CLASS) and not spec.get("volumeName"):
                if obj(claim, "status").get("phase") == "Pending":
                    self.provision(claim)
        for pv in map(as_obj, arr(self.api.get("/api/v1/persistentvolumes"), "items")):
            by = obj(obj(pv, "metadata"), "annotations").get("pv.kubernetes.io/provisioned-by")
            if by in (PROVISIONER, BLOCK_PROVISIONER) and obj(pv, "status").get("phase") in ("Released", "Failed"):
                self.reclaim(pv)

    def provision(self, claim: JsonObject) -> None:
        uid = text(obj(claim, "metadata"), "uid")
        if uid in self.refused:
            return
        why = unservable(claim)
        if why is None and obj(claim, "spec").get("volumeMode") == "Block" and self.blocks is None:
            why = f"{BLOCK_CLASS} is not served on this test bed"
        if why is not None:
            self.refuse(claim, why)
            return
        node = self.node or obj(obj(claim, "metadata"), "annotations").get(SELECTED_NODE)
        if not isinstance(node, str) or not node:
            return  # not yet: the scheduler chooses its node with the first pod that uses it
        if obj(claim, "spec").get("volumeMode") == "Block":
            self.provision_block(claim, node)
            return
        pv = volume_for(claim, node, self.base)
        if self.node is not None:
            Path(_host_path(pv)).mkdir(parents=True, exist_ok=True)
        self.create(pv)

    def enter(self, node: str) -> loopvolumes.Enter | None:
        """How a command runs where `node`'s images are: here on a single node, else inside that node."""
        return loopvolumes.here if self.node is not None else self.enters.get(node)

    def provision_block(self, claim: JsonObject, node: str) -> None:
        """An image of the claim's size, written through, a loop device over it, and the volume naming it."""
        assert self.blocks is not None
        enter = self.enter(node)
        if enter is None:
            self.refuse(claim, f"node {node} is not one of the test bed's")
            return
        name = f"pvc-{text(obj(claim, 'metadata'), 'uid')}"
        try:
            self.api.get(f"/api/v1/persistentvolumes/{name}")
            return  # made already (the claim was seen again before it bound)
        except ApiError as e:
            if e.status != 404:
                raise
        image = loopvolumes.image_path(self.blocks, name)
        request = text(obj(obj(obj(claim, "spec"), "resources"), "requests"), "storage", "1Gi")
        try:
            size = loopvolumes.image_bytes(request)
            free = loopvolumes.free_bytes(self.blocks.parent, enter)
            if size > free:
                raise ValueError(
                    f"an image of {size >> 20} MiB does not fit the {free >> 20} MiB free in {self.blocks.parent}"
                    + (f" on node {node}" if self.node is None else "")
                    + ": ask for less storage"
                )
            device = loopvolumes.make(image, size, enter)
        except (StrataError, CommandError, ValueError) as e:
            self.refuse(claim, e.problem if isinstance(e, StrataError) else str(e))
            return
        try:
            self.create(block_volume_for(claim, node, device, image))
        except Exception:
            loopvolumes.release(image, enter=enter)
            raise

    def create(self, pv: JsonObject) -> None:
        try:
            self.api.post("/api/v1/persistentvolumes", pv)
        except ApiError as e:
            if e.status != 409:  # made already (the claim was seen twice before it bound)
                raise

    def refuse(self, claim: JsonObject, why: str) -> None:
        """A Warning event on the claim, as a CSI provisioner says it cannot serve one; not tried again."""
        meta = obj(claim, "metadata")
        self.refused.add(text(meta, "uid"))
        ns, now = text(meta, "namespace"), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        event: JsonObject = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{text(meta, 'name')}."},
            "involvedObject": {
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": text(meta, "name"),
                "uid": text(meta, "uid"),
                "apiVersion": "v1",
            },  # fmt: skip
            "reason": "ProvisioningFailed",
            "message": why,
            "type": "Warning",
            "source": {"component": COMPONENT},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with contextlib.suppress(ApiError):
            self.api.post(f"/api/v1/namespaces/{ns}/events", event)

    def reclaim(self, pv: JsonObject) -> None:
        meta = obj(pv, "metadata")
        image = obj(meta, "annotations").get(IMAGE)
        if isinstance(image, str):
            enter = self.enter(_node_of(pv))
            if enter is not None and Path(image).parent == self.blocks:  # only images this provisioner made
                loopvolumes.release(Path(image), enter=enter)
        else:
            self.remove_dir(pv)
        with contextlib.suppress(ApiError):
            self.api.delete(f"/api/v1/persistentvolumes/{text(meta, 'name')}")

    def remove_dir(self, pv: JsonObject) -> None:
        path = Path(_host_path(pv))
        if path.parent == self.base:  # only directories this provisioner made
            if self.node is not None:
                shutil.rmtree(path, ignore_errors=True)
            else:
                remove = self.removers.get(_node_of(pv))
                if remove is not None:
                    remove(path)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def _host_path(pv: JsonObject) -> str:
    path = text(obj(obj(pv, "spec"), "hostPath"), "path")
    if not path:  # a volume of another kind: never a directory to make or remove
        raise ValueError(f"the volume {obj(pv, 'metadata').get('name')} has no hostPath")
    return path


def _node_of(pv: JsonObject) -> str:
    """The node a volume is pinned to (its nodeAffinity's hostname)."""
    for term in map(as_obj, arr(obj(obj(obj(pv, "spec"), "nodeAffinity"), "required"), "nodeSelectorTerms")):
        for e in map(as_obj, arr(term, "matchExpressions")):
            values = arr(e, "values")
            if e.get("key") == "kubernetes.io/hostname" and values:
                return str(values[0])
    return ""


@contextlib.contextmanager
def serving(api: Api, node: str, base: Path, blocks: Path | None = None) -> Iterator[Provisioner]:
    """The StorageClasses and their provisioner on a single node, for as long as the bed runs (`blocks`: where the
    block volumes' images go, default beside `base`: pv-block)."""
    blocks = blocks or base.with_name(BLOCKS)
    for d in (base, blocks):
        d.mkdir(parents=True, exist_ok=True)
    with _started(api, Provisioner(api, node, base, blocks=blocks), "Immediate") as p:
        yield p


@contextlib.contextmanager
def serving_nodes(
    api: Api, removers: dict[str, Callable[[Path], None]], enters: dict[str, loopvolumes.Enter]
) -> Iterator[Provisioner]:
    """The StorageClasses and their provisioner on a bed of several nodes: each volume on its first pod's node, on
    that node's disk (config.NODE_DATA/pv, a block volume's image in config.NODE_DATA/pv-block)."""
    p = Provisioner(api, None, NODE_DATA / "pv", removers, NODE_DATA / BLOCKS, enters)
    with _started(api, p, "WaitForFirstConsumer") as p:
        yield p


@contextlib.contextmanager
def _started(api: Api, p: Provisioner, binding: str) -> Iterator[Provisioner]:
    for cls in (storage_class(binding), storage_class(binding, BLOCK_CLASS, BLOCK_PROVISIONER)):
        with contextlib.suppress(ApiError):  # a bed restarted on the same etcd data keeps its classes
            api.post("/apis/storage.k8s.io/v1/storageclasses", cls)
    p.start()
    try:
        yield p
    finally:
        p.stop()
