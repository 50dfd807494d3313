"""The test bed's dynamic provisioner: StorageClass `strata-hostpath`, claims served as directories.

A claim of a class whose provisioner is external stays Pending until someone creates a volume for it;
in a real cluster a CSI driver or the local-path provisioner does, here this thread does, through the
same API: it sees a Pending claim of its class, makes a directory under `base`, and creates a
PersistentVolume (hostPath, pinned to the node, the claim in its claimRef) that the controller-manager's
PV controller then binds, exactly as it binds any provisioned volume. A volume released by its claim is
removed with its directory (reclaimPolicy Delete). The directory is on the file system strata built
when the bed runs a stack (`kubernetes_bed(data_dir=...)`), so `pvc:strata-hostpath` measures it.
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import threading
from pathlib import Path
from typing import Any, Iterator

from .api import Api, ApiError

CLASS = "strata-hostpath"
PROVISIONER = "strata.local/hostpath"
POLL_S = 0.5


def storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": CLASS},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


def volume_for(claim: dict[str, Any], node: str, base: Path) -> dict[str, Any]:
    """The PersistentVolume that serves `claim` (pure)."""
    meta, spec = claim["metadata"], claim["spec"]
    name = f"pvc-{meta['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
        "spec": {
            "capacity": {"storage": spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")},
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
    def __init__(self, api: Api, node: str, base: Path):
        super().__init__(name="strata-provisioner", daemon=True)
        self.api, self.node, self.base = api, node, base
        self.stopped = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stopped.wait(POLL_S):
            try:
                self.once()
            except (ApiError, OSError, ssl.SSLError, ValueError) as e:  # the apiserver restarting, going away
                self.errors = (self.errors + [str(e)[:300]])[-5:]

    def once(self) -> None:
        for claim in self.api.get("/api/v1/persistentvolumeclaims").get("items", []):
            spec = claim.get("spec", {})
            if spec.get("storageClassName") == CLASS and not spec.get("volumeName"):
                if claim.get("status", {}).get("phase") == "Pending":
                    self.provision(claim)
        for pv in self.api.get("/api/v1/persistentvolumes").get("items", []):
            mine = pv["metadata"].get("annotations", {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER
            if mine and pv.get("status", {}).get("phase") in ("Released", "Failed"):
                self.reclaim(pv)

    def provision(self, claim: dict[str, Any]) -> None:
        pv = volume_for(claim, self.node, self.base)
        Path(pv["spec"]["hostPath"]["path"]).mkdir(parents=True, exist_ok=True)
        try:
            self.api.post("/api/v1/persistentvolumes", pv)
        except ApiError as e:
            if e.status != 409:  # made already (the claim was seen twice before it bound)
                raise

    def reclaim(self, pv: dict[str, Any]) -> None:
        path = Path(pv["spec"]["hostPath"]["path"])
        if path.parent == self.base:  # only directories this provisioner made
            shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(ApiError):
            self.api.delete(f"/api/v1/persistentvolumes/{pv['metadata']['name']}")

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


@contextlib.contextmanager
def serving(api: Api, node: str, base: Path) -> Iterator[Provisioner]:
    """The StorageClass and its provisioner, for as long as the bed runs."""
    base.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(ApiError):  # a bed restarted on the same etcd data keeps its class
        api.post("/apis/storage.k8s.io/v1/storageclasses", storage_class())
    p = Provisioner(api, node, base)
    p.start()
    try:
        yield p
    finally:
        p.stop()
