"""What strata can do on a Kubernetes cluster (`strata doctor --kubernetes [KUBECONFIG]`): whether the API
answers with these credentials, its version, the nodes and which of them is this machine (pods run there;
strata reads their outputs and disks there), the StorageClasses (`pvc:CLASS`) with their provisioners,
whether a claim's volume would be visible to the cache check, and whether strata's image can be loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import text
from strata.stack.kube.api import ApiError, items, name_of

from .cluster import connect
from .params import CONTAINERD_SOCK
from .runtime import this_node

LOCAL_SOURCES = {"kubernetes.io/no-provisioner", "rancher.io/local-path", "strata.local/hostpath", "strata.local/loop"}


def report(kubeconfig: str, context: str | None = None) -> list[tuple[str, str, str | None]]:
    """(what, value, problem or None) lines."""
    try:
        c = connect(kubeconfig, context)
    except StrataError as e:
        return [("kubeconfig", kubeconfig, e.message())]
    if not c.api.answers():
        return [("api", c.api.server, "does not answer /readyz with these credentials")]
    rows: list[tuple[str, str, str | None]] = [("api", c.api.server, None)]
    try:
        rows.append(("version", text(c.api.get("/version"), "gitVersion", "?"), None))
        nodes = [name_of(n) for n in items(c.api.get("/api/v1/nodes"))]
        rows.append(("nodes", ", ".join(nodes) or "none", None if nodes else "no node"))
        try:
            here = this_node(c)
            rows.append(("this machine", f"node {here}", None))
        except StrataError as e:
            rows.append(("this machine", "not a node", e.message() + " (pods can only run where strata runs)"))
        classes = items(c.api.get("/apis/storage.k8s.io/v1/storageclasses"))
        for sc in classes:
            prov = text(sc, "provisioner")
            seen = None if prov in LOCAL_SOURCES else "a claim's volume may not be visible here: cache check not made"
            rows.append((f"pvc:{name_of(sc)}", f"provisioner {prov}", seen))
        if not classes:
            rows.append(("storage classes", "none", "no StorageClass: only local, hostpath and emptydir"))
    except ApiError as e:
        rows.append(("permissions", "", f"{e} (docs/kubernetes.md: RBAC)"))
    can_load = shutil.which("ctr") and Path(CONTAINERD_SOCK).exists()
    rows.append(("images", CONTAINERD_SOCK, None if can_load else "cannot import strata's image into this node"))
    return rows
