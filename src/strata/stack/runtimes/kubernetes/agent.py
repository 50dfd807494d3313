"""strata's agent on a node of a cluster, as strata places and reaches it (stack/kube/nodeagent.py is the agent).

The agent is one privileged pod on the node (the node's PID namespace and network, its /sys at /host/sys, strata's
directory on the node, `node_dir`, mounted where the node has it), in the run's namespace, with the run's
tolerations. strata reaches it through the API server's pod proxy (`pods/NAME:PORT/proxy`), as it reaches the
API, so strata needs no route to the node and never reads the node's files through its own. It listens on the
node's address only (hostNetwork), and answers nothing but `health` without the run's token.

`AgentClient` is strata's side: each method one route of the agent, its errors an AgentError naming the node.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from strata.core.errors import StrataError
from strata.core.instances import ImageSpec
from strata.core.jsondoc import JsonObject, JsonValue, as_obj, obj, text
from strata.stack.kube import nodeagent
from strata.stack.kube.api import Api, ApiError

READY_TIMEOUT_S = 180
CALL_TIMEOUT_S = 60
AGENT = "/usr/local/bin/strata-node-agent"


class AgentError(Exception):
    """The agent did not answer, or refused: the message names the node."""


def image() -> ImageSpec:
    """The agent's image: python3 and the agent's one file."""
    return ImageSpec("node-agent", packages=("python3",), files=(("strata-node-agent", nodeagent.__file__),))


def manifest(
    name: str, namespace: str, node: str, image_ref: str, port: int, token: str, root: str, node_dir: str,
    tolerations: list[JsonObject], pull_secret: str | None = None,
) -> JsonObject:  # fmt: skip
    """The agent's pod on `node` (by its hostname label, so that the scheduler admits it there)."""
    env: list[JsonValue] = [
        {"name": "STRATA_AGENT_ADDRESS", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "STRATA_AGENT_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "STRATA_AGENT_PORT", "value": str(port)},
        {"name": "STRATA_AGENT_TOKEN", "value": token},
        {"name": "STRATA_AGENT_ROOT", "value": root},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
    ]
    spec: JsonObject = {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "hostPID": True,
        "hostNetwork": True,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 30,
        "tolerations": list[JsonValue](tolerations),
        "containers": [
            {
                "name": "agent",
                "image": image_ref,
                "imagePullPolicy": "IfNotPresent",
                "command": ["python3", AGENT],
                "env": env,
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "root", "mountPath": node_dir},
                    {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
                ],
            }
        ],
        "volumes": [
            {"name": "root", "hostPath": {"path": node_dir, "type": "DirectoryOrCreate"}},
            {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
        ],
    }
    if pull_secret:
        spec["imagePullSecrets"] = [{"name": pull_secret}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "strata-node-agent"}},
        "spec": spec,
    }


def new_token() -> str:
    return secrets.token_hex(16)


class AgentClient:
    """One node's agent, through the API server's proxy of its pod."""

    def __init__(self, api: Api, namespace: str, pod: str, port: int, token: str, node: str) -> None:
        self.api, self.node, self.token, self.pod = api, node, token, pod
        self.pod_path = f"/api/v1/namespaces/{namespace}/pods/{pod}"
        self.base = f"{self.pod_path}:{port}/proxy"

    def _call(self, method: str, route: str, query: dict[str, object] | None = None, body: bytes | None = None,
              timeout: float = CALL_TIMEOUT_S) -> bytes:  # fmt: skip
        q = ""
        if query:
            q = "?" + urlencode([(k, str(x)) for k, v in query.items() for x in (v if isinstance(v, list) else [v])])
        try:
            return self.api.raw(method, self.base + route + q, body, timeout, {"X-Strata-Token": self.token})
        except ApiError as e:
            said = e.body
            try:
                said = text(as_obj(json.loads(e.body), "answer"), "error") or e.body
            except (ValueError, StrataError):
                pass
            raise AgentError(f"node {self.node}'s agent: {method} {route}: HTTP {e.status}: {said[:500]}") from None
        except OSError as e:
            raise AgentError(f"node {self.node}'s agent did not answer {method} {route}: {e}") from None

    def _json(self, method: str, route: str, query: dict[str, object] | None = None, body: bytes | None = None,
              timeout: float = CALL_TIMEOUT_S) -> JsonObject:  # fmt: skip
        return as_obj(json.loads(self._call(method, route, query, body, timeout) or b"{}"), f"the agent's {route}")

    def health(self) -> JsonObject:
        return self._json("GET", "/v1/health", timeout=10)

    def time(self) -> float:
        return float(self._json("GET", "/v1/time", timeout=10).get("time") or 0.0)  # type: ignore[arg-type]

    def facts(self) -> JsonObject:
        return self._json("GET", "/v1/facts")

    def read(self, path: str) -> str:
        """A file of the node (/proc/diskstats, a cgroup's counters): raises OSError when it cannot be read, as a
        local read would, so that the collectors keep their last reading."""
        try:
            return self._call("GET", "/v1/read", {"path": path}, timeout=10).decode(errors="replace")
        except AgentError as e:
            raise OSError(str(e)) from None

    def cat(self, rel: str) -> str:
        """A small file under the run's root on the node (a pod's /proc/self/cgroup, written before its start)."""
        return self._call("GET", "/v1/cat", {"path": rel}).decode(errors="replace")

    def exists(self, paths: list[str]) -> dict[str, bool]:
        got = self._json("GET", "/v1/exists", {"path": paths})
        return {p: bool(got.get(p)) for p in paths}

    def mkdirs(self, paths: list[str]) -> None:
        self._json("POST", "/v1/mkdirs", body=json.dumps({"paths": paths}).encode())

    def remove(self, rel: str) -> None:
        self._json("POST", "/v1/remove", {"dir": rel})

    def put_dir(self, local: Path, rel: str) -> None:
        """The local directory's files into `rel` on the node (an instance's staged out dir)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:") as t:
            t.add(str(local), arcname=".")
        self._json("POST", "/v1/untar", {"dir": rel}, buf.getvalue(), timeout=300)

    def get_dir(self, rel: str, local: Path) -> None:
        """`rel` on the node into the local directory (an instance's outputs)."""
        data = self._call("GET", "/v1/tar", {"dir": rel}, timeout=600)
        local.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
            t.extractall(local, filter="data")

    def go(self, rel: str, lead_s: float) -> float:
        """Release the barrier in `rel`: the start `lead_s` from now in the node's clock (returned)."""
        return float(self._json("POST", "/v1/go", {"dir": rel, "lead_s": lead_s}).get("at") or 0.0)  # type: ignore[arg-type]

    def drop_caches(self) -> None:
        self._json("POST", "/v1/drop_caches", timeout=300)

    def disks(self, path: str | None = None, pod: str | None = None, volume: str | None = None) -> JsonObject:
        """The disks under a node path, or under a pod's volume: {disks, fs, source, why}."""
        query: dict[str, object] = {"path": path} if path else {"pod": pod, "volume": volume}
        return self._json("GET", "/v1/disks", query)

    def wait_healthy(self, timeout_s: float = READY_TIMEOUT_S) -> JsonObject:
        deadline, last = time.monotonic() + timeout_s, ""
        while time.monotonic() < deadline:
            try:
                return self.health()
            except AgentError as e:
                last = str(e)
            time.sleep(0.5)
        raise StrataError(f"node {self.node}'s agent did not answer within {timeout_s:.0f} s ({last[:300]})",
                          "look at the agent pod's events and log (kubectl -n NAMESPACE describe pod)")  # fmt: skip


def proxied(api: Api, namespace: str, name: str) -> str:
    """The pod's phase and its container's state in words, for a message."""
    try:
        pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{quote(name)}")
    except (ApiError, OSError) as e:
        return str(e)[:300]
    st = obj(pod, "status")
    return f"phase {st.get('phase')}: {json.dumps(st.get('containerStatuses'))[:600]}"
