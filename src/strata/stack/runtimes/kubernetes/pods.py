"""The pod of one instance, and what a pod's end means for the trial (pure functions).

Each instance is a pod on one node (Placement: pinned by `nodeName`, or by its
hostname label on a node strata reaches through its agent), running the workload
image (loaded into the node, or pulled from the user's registry) under the
same wrapper as docker's containers (stack/runtimes/docker/cmdline.py: the
prepare step, the start barrier on the sync dir, start/end stamps, output in
the out dir, never in container logs). The trial's cpu and memory limits
become resources.limits, with requests equal (Guaranteed QoS, so the
kubelet's own eviction order does not single out one instance); Kubernetes
has no block-I/O limit, so bps/iops limits are refused with the reason.
The network rule: no service account token (no in-cluster client), no
service environment variables, and `hostNetwork` only for instances that
talk to servers on the loopback, or serve other hosts at the node's address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata.core.instances import InstanceRequest
from strata.core.jsondoc import JsonArray, JsonObject, arr, as_obj, obj, text
from strata.core.params import Limits, path_kind
from strata.stack.paths import (
    DATA_IN_CONTAINER,
    DEVICE_IN_CONTAINER,
    LOG_IN_CONTAINER,
    OUT_DIR,
    SYNC_DIR,
    path_target_kind,
)
from strata.stack.runtimes.docker.cmdline import WRAPPER

PATHS = ("local", "hostpath", "emptydir", "pvc", "pvc-block")
# A server's log on a path of its own: those on the stack's device only (the cache check must see its writes).
LOG_PATHS = ("hostpath", "local")
# Before the wrapper: the container's cgroups as the host names them (v1: /proc/self/cgroup shows host
# paths), so the collectors sample the pod's container as they sample a docker container.
CGROUP_NOTE = f"cat /proc/self/cgroup >{OUT_DIR}/proc-cgroup 2>/dev/null; "


def unsupported_limits(limits: Limits) -> str | None:
    """Why these limits cannot hold in a pod (None: they can)."""
    given = list(limits.io())
    if limits.preset in ("BW", "ALL"):  # presets that limit the device's bandwidth (presets.py)
        given.append(f"preset {limits.preset}")
    if given:
        return f"Kubernetes has no block-I/O limit: {', '.join(given)} cannot be applied to a pod"
    return None


def unreachable_servers(requests: list[InstanceRequest], remote_node: str | None) -> str | None:
    """Why these instances cannot run on `remote_node`, a node that is not strata's machine (None: they can).
    Servers on the node's loopback (`host`) are out of reach of their clients, which run on strata's machine;
    servers on the node's address (`node`: a cluster whose nodes span Kubernetes nodes as hosts) are not."""
    if remote_node is None or not any(r.network == "host" for r in requests):
        return None
    return (
        f"a server workload's clients run on strata's machine and reach its servers on the loopback: its pods must "
        f"run on this machine's node, not on {remote_node}, unless its servers span the nodes as hosts (ycsb: "
        f"`hosts:` of Kubernetes nodes and `cluster.hosts`, docs/many-hosts.md)"
    )


def resources(limits: Limits) -> JsonObject:
    """resources for the container: limits from the trial, requests equal to them (Guaranteed QoS)."""
    lim: JsonObject = {}
    if limits.cpus is not None:
        lim["cpu"] = f"{round(limits.cpus * 1000)}m"
    if limits.memory is not None:
        lim["memory"] = str(limits.memory)
    return {"limits": lim, "requests": dict(lim)} if lim else {}


def pod_name(run_id: str, index: int) -> str:
    """A DNS-1123 name, unique per run and instance."""
    return re.sub(r"[^a-z0-9-]", "-", f"strata-{run_id}-{index}".lower())[:63].strip("-")


def data_volume(path: str, host_dir: str | None, claim: str | None = None) -> JsonObject:
    """The pod's `data` volume: a hostPath directory, an emptyDir, or a claim (`local`, `pvc:CLASS`, and
    `pvc-block:CLASS`, whose claim is of volumeMode Block: the container gets it as a device, `attachment`)."""
    kind = path_kind(path)
    if kind == "hostpath":
        return {"name": "data", "hostPath": {"path": host_dir, "type": "Directory"}}
    if kind == "emptydir":
        return {"name": "data", "emptyDir": {}}
    if kind in ("local", "pvc", "pvc-block") and claim:
        return {"name": "data", "persistentVolumeClaim": {"claimName": claim}}
    raise ValueError(f"unknown path {path}")


def attachment(path: str, name: str, at: str) -> tuple[str, JsonObject]:
    """How the container gets the volume `name` of a path: a device at DEVICE_IN_CONTAINER (`volumeDevices`) on a
    path that gives a block device, else mounted at `at` (`volumeMounts`)."""
    if path_target_kind(path) == "device":
        return "volumeDevices", {"name": name, "devicePath": DEVICE_IN_CONTAINER}
    return "volumeMounts", {"name": name, "mountPath": at}


def claim_manifest(
    name: str, storage_class: str, size_bytes: int, volume: str | None = None, block: bool = False
) -> JsonObject:
    """A PersistentVolumeClaim of `size_bytes` of `storage_class` (bound by name to `volume` when given; "" is no
    class: a static volume); of volumeMode Block with `block` (`pvc-block:CLASS`: the pod gets it as a device)."""
    spec: JsonObject = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "resources": {"requests": {"storage": str(size_bytes)}},
    }
    if block:
        spec["volumeMode"] = "Block"
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class Placement:
    """Where a trial's pods go and how they get their image: pinned by `nodeName` (the node strata runs on: no
    scheduler), or by the node's hostname label with `tolerations` (another node: the scheduler admits the pod
    and binds a WaitForFirstConsumer claim there); the image loaded into the node (`Never` pulled) or pulled
    from a registry (`IfNotPresent`, with `pull_secret`)."""

    node: str
    by_name: bool = True
    tolerations: tuple[JsonObject, ...] = ()
    pull: str = "Never"
    pull_secret: str | None = None

    def spec(self) -> JsonObject:
        out: JsonObject = {"nodeName": self.node} if self.by_name else {"nodeSelector": {HOSTNAME: self.node}}
        if self.tolerations:
            out["tolerations"] = list(self.tolerations)
        if self.pull_secret:
            out["imagePullSecrets"] = [{"name": self.pull_secret}]
        return out


HOSTNAME = "kubernetes.io/hostname"


def pod_manifest(
    name: str,
    namespace: str,
    run_id: str,
    placement: Placement,
    request: InstanceRequest,
    path: str,
    host_dir: str | None,
    limits: Limits,
    image: str,
    sync_dir: str,
    claim: str | None = None,
    log: tuple[str, str | None, str | None] | None = None,
    out_dir: str | None = None,
) -> JsonObject:
    """`log`: a server's log on a path of its own (its path, host directory and claim), mounted at
    LOG_IN_CONTAINER beside the data; `out_dir`: the instance's out dir on the node, when it is not
    `request.out_dir` here (a node strata reaches through its agent)."""
    mounts: JsonArray = [{"name": "out", "mountPath": OUT_DIR}, {"name": "sync", "mountPath": SYNC_DIR}]
    container: JsonObject = {
        "name": "instance",
        "image": image,
        "imagePullPolicy": placement.pull,
        "command": ["/bin/sh", "-c", CGROUP_NOTE + WRAPPER, "strata-wrap", *request.argv],
        "volumeMounts": mounts,
    }
    key, data = attachment(path, "data", DATA_IN_CONTAINER)
    if key == "volumeMounts":
        mounts.append(data)
    else:  # a claim of volumeMode Block: a device in the container, not a mount
        container["volumeDevices"] = [data]
    volumes: JsonArray = [
        {"name": "out", "hostPath": {"path": out_dir or str(request.out_dir), "type": "Directory"}},
        {"name": "sync", "hostPath": {"path": sync_dir, "type": "Directory"}},
        data_volume(path, host_dir, claim),
    ]
    if log is not None:
        mounts.append({"name": "log", "mountPath": LOG_IN_CONTAINER})
        volumes.append(data_volume(*log) | {"name": "log"})
    res = resources(limits)
    if res:
        container["resources"] = res
    spec: JsonObject = {
        **placement.spec(),
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5,
        "containers": [container],
        "volumes": volumes,
    }
    if request.network in ("host", "node"):
        spec["hostNetwork"] = True
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"strata.run": run_id, "strata.instance": str(request.index)},
        },
        "spec": spec,
    }


def pod_end(pod: JsonObject | None) -> tuple[str, str] | None:
    """(failure category, message) when a pod ended the trial's way it must not: OOM-killed (`oom`),
    evicted, deleted or failed to start (`instance_died`); None while it runs or when it ended on its own
    (its exit code is the instance's, read like a container's)."""
    if pod is None:
        return "instance_died", "the pod was deleted"
    status = obj(pod, "status")
    name = text(obj(pod, "metadata"), "name", "?")
    if status.get("reason") == "Evicted":
        return "instance_died", f"pod {name} was evicted: {text(status, 'message')}".strip()
    for cs in map(as_obj, arr(status, "containerStatuses")):
        ended = obj(obj(cs, "state"), "terminated")
        if ended and ended.get("reason") == "OOMKilled":
            return "oom", f"pod {name}: the OOM killer ended it (exit {ended.get('exitCode')})"
        waiting = obj(obj(cs, "state"), "waiting")
        if waiting and waiting.get("reason") in (
            "ErrImageNeverPull",
            "CreateContainerError",
            "RunContainerError",
            "ErrImagePull",
            "ImagePullBackOff",
            "InvalidImageName",
        ):
            return "instance_died", f"pod {name} cannot start: {waiting['reason']}: {text(waiting, 'message')}"
    if obj(pod, "metadata").get("deletionTimestamp"):
        return "instance_died", f"pod {name} is being deleted"
    return None
