"""The test bed's dynamic provisioner: StorageClass `strata-hostpath`, claims served as directories.

A claim of a class whose provisioner is external stays Pending until someone creates a volume for it;
in a real cluster a CSI driver or the local-path provisioner does, here this thread does, through the
same API: it sees a Pending claim of its class, makes a directory under `base`, and creates a
PersistentVolume (hostPath, pinned to the node, the claim in its claimRef) that the controller-manager's
PV controller then binds, exactly as it binds any provisioned volume. A volume released by its claim is
removed with its directory (reclaimPolicy Delete). The directory is on the file system strata built
when the bed runs a stack (`kubernetes_bed(data_dir=...)`), so `pvc:strata-hostpath` measures it. On a bed of
several nodes the class binds once the scheduler chose the first pod's node, and the volume is a directory on
that node's own disk.
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import threading
from pathlib import Path
from typing import Callable, Iterator

from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text

from .api import Api, ApiError
from .config import NODE_DATA

CLASS = "strata-hostpath"
PROVISIONER = "strata.local/hostpath"
POLL_S = 0.5


SELECTED_NODE = "volume.kubernetes.io/selected-node"  # the scheduler's choice for a WaitForFirstConsumer claim


def storage_class(binding: str = "Immediate") -> JsonObject:
    """The class: bound at once on a single node; on a bed of several, once the scheduler chose the first pod's
    node (WaitForFirstConsumer), where the volume is then made."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": CLASS},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": binding,
    }


def volume_for(claim: JsonObject, node: str, base: Path) -> JsonObject:
    """The PersistentVolume that serves `claim` (pure)."""
    meta, spec = obj(claim, "metadata"), obj(claim, "spec")
    name = f"pvc-{meta['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
        "spec": {
            "capacity": {"storage": obj(obj(spec, "resources"), "requests").get("storage", "1Gi")},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": CLASS,
            "hostPath": {"path": str(base / name), "type": "DirectoryOrCreate"},
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


class Provisioner(threading.Thread):
    """`node`: the single node every volume goes to, its directories made here under `base`; or None, each volume
    on the node the scheduler chose for its claim (SELECTED_NODE), under `base` inside that node, made by the
    kubelet (DirectoryOrCreate) and removed through `removers[node]`."""

    def __init__(
        self, api: Api, node: str | None, base: Path, removers: dict[str, Callable[[Path], None]] | None = None
    ):
        super().__init__(name="strata-provisioner", daemon=True)
        self.api, self.node, self.base = api, node, base
        self.removers = removers or {}
        self.stopped = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stopped.wait(POLL_S):
            try:
                self.once()
            except (ApiError, OSError, ssl.SSLError, ValueError) as e:  # the apiserver restarting, going away
                self.errors = (self.errors + [str(e)[:300]])[-5:]

    def once(self) -> None:
        for claim in map(as_obj, arr(self.api.get("/api/v1/persistentvolumeclaims"), "items")):
            spec = obj(claim, "spec")
            if spec.get("storageClassName") == CLASS and not spec.get("volumeName"):
                if obj(claim, "status").get("phase") == "Pending":
                    self.provision(claim)
        for pv in map(as_obj, arr(self.api.get("/api/v1/persistentvolumes"), "items")):
            mine = obj(obj(pv, "metadata"), "annotations").get("pv.kubernetes.io/provisioned-by") == PROVISIONER
            if mine and obj(pv, "status").get("phase") in ("Released", "Failed"):
                self.reclaim(pv)

    def provision(self, claim: JsonObject) -> None:
        node = self.node or obj(obj(claim, "metadata"), "annotations").get(SELECTED_NODE)
        if not isinstance(node, str) or not node:
            return  # not yet: the scheduler chooses its node with the first pod that uses it
        pv = volume_for(claim, node, self.base)
        if self.node is not None:
            Path(_host_path(pv)).mkdir(parents=True, exist_ok=True)
        try:
            self.api.post("/api/v1/persistentvolumes", pv)
        except ApiError as e:
            if e.status != 409:  # made already (the claim was seen twice before it bound)
                raise

    def reclaim(self, pv: JsonObject) -> None:
        path = Path(_host_path(pv))
        if path.parent == self.base:  # only directories this provisioner made
            if self.node is not None:
                shutil.rmtree(path, ignore_errors=True)
            else:
                remove = self.removers.get(_node_of(pv))
                if remove is not None:
                    remove(path)
        with contextlib.suppress(ApiError):
            self.api.delete(f"/api/v1/persistentvolumes/{text(obj(pv, 'metadata'), 'name')}")

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
def serving(api: Api, node: str, base: Path) -> Iterator[Provisioner]:
    """The StorageClass and its provisioner on a single node, for as long as the bed runs."""
    base.mkdir(parents=True, exist_ok=True)
    with _started(api, Provisioner(api, node, base), "Immediate") as p:
        yield p


@contextlib.contextmanager
def serving_nodes(api: Api, removers: dict[str, Callable[[Path], None]]) -> Iterator[Provisioner]:
    """The StorageClass and its provisioner on a bed of several nodes: each volume on its first pod's node, on
    that node's disk (config.NODE_DATA/pv)."""
    with _started(api, Provisioner(api, None, NODE_DATA / "pv", removers), "WaitForFirstConsumer") as p:
        yield p


@contextlib.contextmanager
def _started(api: Api, p: Provisioner, binding: str) -> Iterator[Provisioner]:
    with contextlib.suppress(ApiError):  # a bed restarted on the same etcd data keeps its class
        api.post("/apis/storage.k8s.io/v1/storageclasses", storage_class(binding))
    p.start()
    try:
        yield p
    finally:
        p.stop()
