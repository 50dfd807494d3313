"""Pods on a node that is not strata's machine: the node chosen, the run's Pod Security checked, strata's agent
placed on the node, and the images published to the user's registry.

strata then needs of the node only what the API server gives (agent.py): the instances' files go to and come
from the node through its agent, the barrier is released there in the node's clock, and the collectors read
the node's /proc and /sys through it, so the cache, flush and absorbed checks judge the node's own disks.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from strata.core.errors import StrataError, Unsupported
from strata.core.instances import ImageSpec
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.stack.journal import Journal
from strata.stack.kube import registry
from strata.stack.kube.api import ApiError, items, name_of

from . import agent as agent_mod
from .cluster import Cluster, delete_and_wait, intent
from .params import KubernetesParams

CLOCK_ROUNDS = 5


@dataclass
class Remote:
    """A node strata reaches through its agent: the client, the node, and the run's root on the node."""

    agent: agent_mod.AgentClient
    node: str
    root: str  # on the node: node_dir/NAMESPACE

    def node_path(self, rel: str) -> str:
        return f"{self.root}/{rel}"


def _ready_and_schedulable(node: JsonObject, tolerations: list[JsonObject]) -> str | None:
    """Why the scheduler would not put a pod of the run there (None: it would)."""
    if obj(node, "spec").get("unschedulable"):
        return "cordoned (unschedulable)"
    conditions = map(as_obj, arr(obj(node, "status"), "conditions"))
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return "not Ready"
    for taint in map(as_obj, arr(obj(node, "spec"), "taints")):
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(_tolerates(t, taint) for t in tolerations):
            return f"tainted {text(taint, 'key')}={text(taint, 'value')}:{text(taint, 'effect')}, not tolerated"
    return None


def _tolerates(toleration: JsonObject, taint: JsonObject) -> bool:
    if toleration.get("effect") not in (None, "", taint.get("effect")):
        return False
    if toleration.get("operator") == "Exists":
        return toleration.get("key") in (None, "", taint.get("key"))
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def choose_node(cluster: Cluster, wanted: str | None, tolerations: list[JsonObject]) -> str:
    """The node the run's pods go to: the one named, else the first that a label selector (`k=v,k2=v2`) names
    and the scheduler would take, else the first such node of the cluster."""
    api = cluster.api
    if wanted and "=" not in wanted:
        try:
            node = api.get(f"/api/v1/nodes/{wanted}")
        except ApiError as e:
            if e.status == 404:
                have = [name_of(n) for n in items(api.get("/api/v1/nodes"))]
                raise StrataError(f"the cluster has no node {wanted}", f"name one of: {', '.join(have) or 'none'}")
            raise
        why = _ready_and_schedulable(node, tolerations)
        if why:
            raise StrataError(f"node {wanted} cannot take the run's pods: {why}", "choose another `node:`, or fix it")
        return wanted
    query = f"?labelSelector={wanted}" if wanted else ""
    found = items(api.get(f"/api/v1/nodes{query}"))
    reasons = {name_of(n): _ready_and_schedulable(n, tolerations) for n in found}
    able = [name for name, why in reasons.items() if why is None]
    if not able:
        said = "; ".join(f"{n}: {w}" for n, w in reasons.items()) or "no node matches"
        raise StrataError(
            f"no node of the cluster{f' labelled {wanted}' if wanted else ''} can take the run's pods ({said})",
            "give `node:` a node that is Ready and schedulable, or `tolerations:` for its taints",
        )
    return able[0]


def check_pod_security(cluster: Cluster, namespace: str) -> None:
    """A namespace whose Pod Security level refuses privileged pods (strata's agent is one, and hostPath volumes
    need one) is named with its level and the fix, before strata makes anything in it."""
    ns = cluster.api.get(f"/api/v1/namespaces/{namespace}")
    level = obj(obj(ns, "metadata"), "labels").get("pod-security.kubernetes.io/enforce")
    if level not in (None, "privileged"):
        raise StrataError(
            f"namespace {namespace} enforces the Pod Security level {level!r}, which refuses strata's privileged "
            "agent and hostPath volumes",
            f"kubectl label namespace {namespace} pod-security.kubernetes.io/enforce=privileged --overwrite, or "
            "leave `namespace:` out and strata makes a namespace of its own",
        )


def publisher(params: KubernetesParams) -> Callable[[ImageSpec], str]:
    """strata's images into `images:` (the user's registry): each built once, pushed, and named as the pods
    pull it."""
    prefix = params.images
    if prefix is None:
        raise Unsupported(
            "pods on a node that is not this machine pull strata's images from a registry: give the runtime "
            "`images: REGISTRY/PREFIX` (with `registry_ca:` for a private CA, `pull_secret:` if the nodes need one)"
        )
    why = registry.missing()
    if why:
        raise Unsupported(why)

    def publish(spec: ImageSpec) -> str:
        from strata.stack.runtimes.docker.image import build_image_tarball, image_tag

        ref = registry.reference(prefix, image_tag(spec))
        registry.push(build_image_tarball(spec), ref, params.registry_ca, authfile=params.registry_auth)
        return ref

    return publish


@contextlib.contextmanager
def placed_agent(
    cluster: Cluster,
    journal: Journal,
    namespace: str,
    node: str,
    params: KubernetesParams,
    image_ref: str,
) -> Iterator[Remote]:
    """strata's agent on `node` (its pod journaled first), answering through the API server; deleted at the end
    (its SIGTERM removes the run's files on the node)."""
    name = f"strata-agent-{node}"[:63].rstrip("-.")
    token = agent_mod.new_token()
    root = f"{params.node_dir.rstrip('/')}/{namespace}"
    body = agent_mod.manifest(
        name, namespace, node, image_ref, params.agent_port, token, root, params.node_dir,
        params.toleration_docs(), params.pull_secret,
    )  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    seq = intent(cluster, journal, path)
    try:
        cluster.api.post(f"/api/v1/namespaces/{namespace}/pods", body)
    except ApiError as e:
        if e.status in (400, 403, 422):
            raise StrataError(
                f"the cluster refused strata's privileged agent in namespace {namespace}: {_message(e.body)}",
                f"allow privileged pods there (kube-apiserver --allow-privileged=true; kubectl label namespace "
                f"{namespace} pod-security.kubernetes.io/enforce=privileged; and any admission policy), or use a "
                "namespace that does",
            ) from None
        raise
    client = agent_mod.AgentClient(cluster.api, namespace, name, params.agent_port, token, node)
    try:
        _wait_running(cluster, namespace, name)
        client.wait_healthy()
        yield Remote(client, node, root)
    finally:
        with contextlib.suppress(ApiError, OSError, StrataError):
            delete_and_wait(cluster.api, path, 120)
            journal.release(seq)


def _message(body: str) -> str:
    """The API's own message of a refusal (its Status object's), else the body."""
    try:
        return text(as_obj(json.loads(body), "status"), "message") or body[:400]
    except (ValueError, StrataError):
        return body[:400]


def _wait_running(cluster: Cluster, namespace: str, name: str, timeout_s: float = agent_mod.READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pod = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        phase = obj(pod, "status").get("phase")
        if phase == "Running":
            return
        if phase in ("Failed", "Succeeded"):
            break
        for cs in map(as_obj, arr(obj(pod, "status"), "containerStatuses")):
            waiting = obj(obj(cs, "state"), "waiting")
            if waiting.get("reason") in (
                "ErrImagePull",
                "ImagePullBackOff",
                "InvalidImageName",
                "CreateContainerError",
            ):
                raise StrataError(
                    f"strata's agent cannot start on node {cluster_node(pod)}: {waiting.get('reason')}: "
                    f"{text(waiting, 'message')[:400]}",
                    "check that the node can pull from `images:` (its CA, `pull_secret:`)",
                )
        time.sleep(0.5)
    raise StrataError(
        f"strata's agent did not run on its node within {timeout_s:.0f} s "
        f"({agent_mod.proxied(cluster.api, namespace, name)})",
        f"kubectl -n {namespace} describe pod {name}",
    )


def cluster_node(pod: JsonObject) -> str:
    return text(obj(pod, "spec"), "nodeName") or "?"


def clock_offset(client: agent_mod.AgentClient, rounds: int = CLOCK_ROUNDS) -> tuple[float, float]:
    """The node's clock minus this machine's, from the round trip with the least delay (Cristian's method), and
    half that round trip: its uncertainty."""
    best: tuple[float, float] | None = None
    for _ in range(rounds):
        t0 = time.time()
        there = client.time()
        t1 = time.time()
        rtt = t1 - t0
        if best is None or rtt < 2 * best[1]:
            best = (there - (t0 + t1) / 2, rtt / 2)
    assert best is not None
    return round(best[0], 6), round(best[1], 6)
