"""Issue 55: strata's agent on a node (stack/kube/nodeagent.py) and strata's side of it (runtimes/kubernetes:
agent.py's client over the API server's proxy, remote.py's choice of node and Pod Security check)."""

import http.client
import io
import json
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from strata.core.errors import StrataError, Unsupported
from strata.stack.kube import nodeagent
from strata.stack.kube.api import ApiError
from strata.stack.runtimes.kubernetes import agent, remote
from strata.stack.runtimes.kubernetes.cluster import Cluster
from strata.stack.runtimes.kubernetes.params import KubernetesParams

TOKEN = "t" * 32


@pytest.fixture
def served(tmp_path):
    """The agent's HTTP server on the loopback, its root under tmp_path; yields (port, root)."""
    root = tmp_path / "root"
    root.mkdir()
    nodeagent.Handler.agent = nodeagent.Agent(root, TOKEN, "node-a")
    server = nodeagent.ThreadingHTTPServer(("127.0.0.1", 0), nodeagent.Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server.server_address[1], root
    server.shutdown()


def call(port, method, path, body=None, token=TOKEN):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers={"X-Strata-Token": token} if token else {})
    r = c.getresponse()
    return r.status, r.read()


def test_health_answers_anyone_everything_else_the_runs_token_only(served):
    port, _ = served
    status, body = call(port, "GET", "/v1/health", token=None)
    assert status == 200 and json.loads(body)["node"] == "node-a"
    assert call(port, "GET", "/v1/time", token=None)[0] == 401
    assert call(port, "GET", "/v1/time", token="x" * 32)[0] == 401
    status, body = call(port, "GET", "/v1/time")
    assert status == 200 and abs(json.loads(body)["time"] - time.time()) < 5


def test_files_stay_under_the_root(served):
    port, root = served
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        data = b"#!/bin/sh\n"
        info = tarfile.TarInfo("prepare.sh")
        info.size, info.mode = len(data), 0o755
        t.addfile(info, io.BytesIO(data))
    assert call(port, "POST", "/v1/untar?dir=trials/a/inst-0", buf.getvalue())[0] == 200
    assert (root / "trials/a/inst-0/prepare.sh").read_bytes() == b"#!/bin/sh\n"
    assert os.stat(root / "trials/a/inst-0/prepare.sh").st_mode & 0o777 == 0o755
    status, body = call(port, "GET", "/v1/exists?path=trials/a/inst-0/prepare.sh&path=trials/a/inst-0/ready")
    assert json.loads(body) == {"trials/a/inst-0/prepare.sh": True, "trials/a/inst-0/ready": False}
    for bad in ("/v1/tar?dir=../..", "/v1/exists?path=../../etc/passwd", "/v1/cat?path=/etc/passwd"):
        status, body = call(port, "GET", bad)
        assert status in (400, 404) and "root" in json.loads(body)["error"], (bad, body)
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as t:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    status, body = call(port, "POST", "/v1/untar?dir=trials/b", evil.getvalue())
    assert status == 400 and not (root / "trials" / "escape").exists()
    link = io.BytesIO()
    with tarfile.open(fileobj=link, mode="w") as t:
        info = tarfile.TarInfo("l")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc"
        t.addfile(info)
    assert call(port, "POST", "/v1/untar?dir=trials/c", link.getvalue())[0] == 400


def test_the_barrier_is_released_in_the_nodes_clock(served):
    port, root = served
    (root / "t/sync").mkdir(parents=True)
    before = time.time()
    status, body = call(port, "POST", "/v1/go?dir=t/sync&lead_s=0.5")
    at = json.loads(body)["at"]
    assert status == 200 and before + 0.4 < at < time.time() + 0.6
    assert int((root / "t/sync/go").read_text()) == int(at * 1e9)
    assert call(port, "POST", "/v1/go?dir=t/sync&lead_s=600")[0] == 400


def test_only_the_files_the_collectors_read(served):
    port, _ = served
    status, body = call(port, "GET", "/v1/read?path=/proc/diskstats")
    names = [line.split()[2] for line in body.decode().splitlines()]  # its counters move between two reads
    assert status == 200 and names == [line.split()[2] for line in Path("/proc/diskstats").read_text().splitlines()]
    for path in ("/etc/shadow", "/proc/self/environ", "/proc/1/cmdline", "/sys/../etc/passwd"):
        assert call(port, "GET", f"/v1/read?path={path}")[0] == 403, path


def test_the_clients_calls_go_through_the_api_servers_proxy_with_the_token(served):
    """AgentClient against the real agent, the API server's proxy played by a fake Api that forwards."""
    port, root = served

    class Proxy:
        def __init__(self):
            self.paths = []

        def raw(self, method, path, body, timeout, headers):
            self.paths.append(path)
            assert path.startswith("/api/v1/namespaces/ns/pods/strata-agent-node-a:10299/proxy/")
            status, answer = call(port, method, path.split("/proxy", 1)[1], body, headers["X-Strata-Token"])
            if status >= 400:
                raise ApiError(status, answer.decode())
            return answer

    proxy = Proxy()
    client = agent.AgentClient(proxy, "ns", "strata-agent-node-a", 10299, TOKEN, "node-a")
    assert client.health()["node"] == "node-a"
    client.mkdirs(["trials/x/sync"])
    local = Path(str(root) + "-local")
    (local / "out").mkdir(parents=True)
    (local / "out" / "job.fio").write_text("[x]\n")
    client.put_dir(local / "out", "trials/x/inst-0")
    assert (root / "trials/x/inst-0/job.fio").read_text() == "[x]\n"
    (root / "trials/x/inst-0/stdout").write_text("{}")
    client.get_dir("trials/x/inst-0", local / "back")
    assert (local / "back" / "stdout").read_text() == "{}"
    assert client.exists(["trials/x/sync", "nope"]) == {"trials/x/sync": True, "nope": False}
    with pytest.raises(OSError, match="not among the files"):
        client.read("/etc/hostname")
    with pytest.raises(agent.AgentError, match="node node-a's agent"):
        client.cat("nope")
    client.remove("trials/x")
    assert not (root / "trials/x").exists()
    offset, within = remote.clock_offset(client)
    assert abs(offset) < 1 and within >= 0


def test_the_agent_refuses_to_start_without_an_address_or_on_a_wildcard(monkeypatch, capsys):
    for env in ({}, {"STRATA_AGENT_ADDRESS": "0.0.0.0", "STRATA_AGENT_PORT": "1", "STRATA_AGENT_TOKEN": TOKEN,
                     "STRATA_AGENT_ROOT": "/tmp/x"}):  # fmt: skip
        for k in ("STRATA_AGENT_ADDRESS", "STRATA_AGENT_PORT", "STRATA_AGENT_TOKEN", "STRATA_AGENT_ROOT"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert nodeagent.main() == 2
    assert "never a wildcard" in capsys.readouterr().err


def test_the_agents_pod_is_privileged_on_its_node_and_its_image_is_one_file():
    m = agent.manifest("a", "ns", "node-b", "reg:5000/s/node-agent:1", 10299, TOKEN, "/var/lib/strata/ns",
                       "/var/lib/strata", [{"key": "k", "operator": "Exists"}], "regcred")  # fmt: skip
    spec = m["spec"]
    assert spec["hostPID"] and spec["hostNetwork"] and spec["nodeSelector"] == {"kubernetes.io/hostname": "node-b"}
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert spec["tolerations"] == [{"key": "k", "operator": "Exists"}] and spec["imagePullSecrets"]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["STRATA_AGENT_ADDRESS"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"  # never a wildcard
    assert agent.image().files == (("strata-node-agent", nodeagent.__file__),)
    assert agent.image().packages == ("python3",)


class FakeApi:
    def __init__(self, objects):
        self.objects = objects

    def get(self, path, timeout=30):
        if path in self.objects:
            return self.objects[path]
        raise ApiError(404, "not found")


def node(name, ready=True, unschedulable=False, taints=(), labels=None):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_the_node_chosen_is_one_the_scheduler_would_take():
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    nodes = [node("n1", ready=False), node("n2", unschedulable=True), node("n3", taints=[taint]), node("n4")]
    api = FakeApi({"/api/v1/nodes": {"items": nodes}, **{f"/api/v1/nodes/{n['metadata']['name']}": n for n in nodes},
                   "/api/v1/nodes?labelSelector=disk=ssd": {"items": [nodes[2]]}})  # fmt: skip
    c = Cluster(api, "/k", None, own=False)
    assert remote.choose_node(c, None, []) == "n4"
    tol = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]
    assert remote.choose_node(c, None, tol) == "n3" and remote.choose_node(c, "n3", tol) == "n3"
    with pytest.raises(StrataError, match="n3: tainted dedicated=db:NoSchedule, not tolerated"):
        remote.choose_node(c, "disk=ssd", [])
    assert remote.choose_node(c, "disk=ssd", [{"key": "dedicated", "operator": "Exists"}]) == "n3"
    with pytest.raises(StrataError, match="node n2 cannot take the run's pods: cordoned"):
        remote.choose_node(c, "n2", [])
    with pytest.raises(StrataError, match="the cluster has no node n9") as e:
        remote.choose_node(c, "n9", [])
    assert "n4" in e.value.fix


def test_a_namespace_that_refuses_privileged_pods_is_named_with_its_level_before_anything():
    level = {"pod-security.kubernetes.io/enforce": "baseline"}
    api = FakeApi({"/api/v1/namespaces/team": {"metadata": {"labels": level}},
                   "/api/v1/namespaces/open": {"metadata": {"labels": {}}}})  # fmt: skip
    c = Cluster(api, "/k", None, own=False)
    with pytest.raises(StrataError, match="enforces the Pod Security level 'baseline'") as e:
        remote.check_pod_security(c, "team")
    assert "pod-security.kubernetes.io/enforce=privileged" in e.value.fix
    remote.check_pod_security(c, "open")


def test_params_of_a_remote_node_are_bounded():
    p = KubernetesParams(kubeconfig="/k", node="disk=ssd", tolerations=[{"key": "k", "operator": "Exists"}],
                         images="192.0.2.9:5000/strata")  # fmt: skip
    assert p.node_dir == "/var/lib/strata" and p.agent_port == 10299
    bad_ones = [
        {"tolerations": [{"key": "k", "op": "x"}]},
        {"tolerations": [{}] * 17},
        {"node_dir": "relative"},
        {"node_dir": "/var/lib"},
        {"agent_port": 80},
        {"node": "UPPER space"},
        {"namespace": "a" * 300},
    ]
    for bad in bad_ones:
        with pytest.raises(ValueError):
            KubernetesParams(kubeconfig="/k", **bad)
    with pytest.raises(Unsupported, match="images: REGISTRY/PREFIX"):
        remote.publisher(KubernetesParams(kubeconfig="/k"))


def test_the_agent_finds_a_block_volumes_device_through_the_kubelets_link_as_the_node_sees_it(tmp_path, monkeypatch):
    """pvc-block:CLASS on another node (issue 58): the kubelet links a pod's block volume to its device under
    pods/UID/volumeDevices/<plugin>/NAME; an absolute link names the node's path, followed under the kubelet's root,
    never this container's."""
    kubelet = tmp_path / "kubelet"
    link = kubelet / "pods" / "uid-1" / "volumeDevices" / "kubernetes.io~local-volume" / "pvc-1"
    link.parent.mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "loop7").touch()
    link.symlink_to(tmp_path / "dev" / "loop7")  # absolute, as the kubelet makes it
    monkeypatch.setattr(nodeagent, "kubelet_root", lambda pid: str(kubelet))
    me = os.getpid()  # /proc/ME/root is / here: the node's root in this test
    at = nodeagent.volume_path(me, "uid-1", "pvc-1")
    assert at == str(link)
    assert nodeagent.in_node(me, at) == Path(f"/proc/{me}/root{tmp_path}/dev/loop7")
    relative = link.with_name("pvc-2")
    relative.symlink_to("../../../../../dev/loop7")  # relative to the link's directory
    assert nodeagent.in_node(me, str(relative)) == Path(f"/proc/{me}/root{tmp_path}/dev/loop7")
    with pytest.raises(nodeagent.Refused, match="has no volume pvc-3"):
        nodeagent.volume_path(me, "uid-1", "pvc-3")
