"""The Kubernetes test bed for real: `strata testbed kubernetes up` builds (once) and starts etcd, the
control plane, containerd and a kubelet on this machine; a pod runs fio on a hostPath directory to its
end and its log is read through the apiserver; every address the cluster was given or listens on is in
127.0.0.0/8 or 192.0.2.0/24; `down` (and, after kill -9 of the bed's holder, `strata cleanup`) leaves
nothing: processes, mounts, cgroups, the bridge, the blackhole route, the bed's directory, the journal."""

import ipaddress
import json
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from strata.core.instances import ImageSpec
from strata.stack.kube.api import Api
from strata.stack.kube.config import FIXED_HOST_DIRS
from strata.stack.runtimes.docker.image import build_image_tarball
from strata.stack.runtimes.kubernetes import pods
from tests.coverage import covers

from . import ledger
from .helpers import strata, wait_for

pytestmark = pytest.mark.integration

ALLOWED = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("192.0.2.0/24")]
LIMIT_FILES = "/sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us"  # cgroup v1
UP_TIMEOUT_S = 5400  # a fresh machine builds Kubernetes first (about 6 min cold here)


def _allowed(addr: str) -> bool:
    net = ipaddress.ip_network(addr, strict=False)
    return any(net.subnet_of(a) for a in ALLOWED)


@pytest.fixture
def env(tmp_path):
    return {"STRATA_STATE_DIR": str(tmp_path / "state")}


def _up(env) -> dict:
    cp = strata("testbed", "kubernetes", "up", env=env, timeout=UP_TIMEOUT_S)
    assert cp.returncode == 0, f"up failed:\n{cp.stdout}\n{cp.stderr}"
    st = strata("testbed", "kubernetes", "status", env=env, check=0)
    return json.loads(st.stdout)


def _api(facts: dict) -> Api:
    pki = Path(facts["root"]) / "pki"
    return Api(facts["server"], str(pki / "ca.crt"), str(pki / "admin.crt"), str(pki / "admin.key"))


def _listening(pids: list[int]) -> list[str]:
    """Local addresses of the TCP/UDP sockets these processes listen on (ss)."""
    out = subprocess.run(["ss", "-Htulnp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            local = line.split()[4]
            found.append(local.rsplit(":", 1)[0].strip("[]"))
    return found


def _leftovers(facts: dict, env, before: set[str]) -> list[str]:
    token, root = facts["token"], facts["root"]
    left = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(d in cmd for d in (root, facts["run_dir"], facts["kubelet_dir"])):
                left.append(f"process {p.name}: {cmd[:100]}")
    for ln in Path("/proc/mounts").read_text().splitlines():
        if any(d in ln.split()[1] for d in (root, facts["run_dir"], facts["kubelet_dir"])):
            left.append(f"mount {ln.split()[1]}")
    left += [f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob(f"*/strata-k8s-{token}")]
    if Path(f"/sys/class/net/skb{token}").exists():
        left.append(f"bridge skb{token}")
    routes = subprocess.run(["ip", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    if facts["addresses"]["service_block"] in routes:
        left.append(f"route {facts['addresses']['service_block']}")
    left += [f"directory {d}" for d in (root, facts["run_dir"], facts["kubelet_dir"]) if Path(d).exists()]
    left += [f"directory {d} (the bed made it)" for d in FIXED_HOST_DIRS if d not in before and Path(d).exists()]
    logs = Path("/var/log/containers")
    left += [f"log link {p}" for p in (logs.iterdir() if logs.is_dir() else []) if root in str(p.resolve())]
    journal = Path(env["STRATA_STATE_DIR"]) / "journal"
    left += [f"journal {j.name}" for j in journal.glob("*.jsonl")] if journal.is_dir() else []
    return left


def _fio_pod(name: str, image: str, host_dir: Path) -> dict:
    fio = (
        "fio --name=k8s --directory=/data --rw=randwrite --bs=4k --size=8m --ioengine=psync "
        "--direct=1 --output-format=json"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [
                {
                    "name": "fio",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", f"cat {LIMIT_FILES}; {fio}"],
                    "resources": {"limits": {"cpu": "1", "memory": "256Mi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "hostPath": {"path": str(host_dir), "type": "Directory"}}],
        },
    }


@covers("runtime:kubernetes:testbed", "command:testbed", "fault:oom", "fault:oom@kubernetes")
def test_up_runs_fio_in_a_pod_and_down_leaves_nothing(env, tmp_path):
    tarball = build_image_tarball(ImageSpec("fio", packages=("fio",)))
    before = {d for d in FIXED_HOST_DIRS if Path(d).exists()}
    facts = _up(env)
    try:
        addrs = facts["addresses"]
        for what, value in addrs.items():
            for part in re.split(r"[-]", value):
                assert _allowed(part.rsplit(":", 1)[0] if "/" not in part else part), f"{what}={value}"
        api = _api(facts)
        # what the running cluster reports: the node, the kubernetes service, the listeners
        node = api.get(f"/api/v1/nodes/{facts['node']}")
        node_addrs = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"]
        assert node_addrs == [addrs["node"]]
        assert node["status"]["nodeInfo"]["kubeletVersion"] == facts["version"]
        svc = api.get("/api/v1/namespaces/default/services/kubernetes")
        assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network(addrs["service_block"])
        ep = api.get("/api/v1/namespaces/default/endpoints/kubernetes")
        assert all(_allowed(a["ip"]) for s in ep["subsets"] for a in s["addresses"])
        listeners = _listening(list(facts["pids"].values()))
        assert listeners and all(_allowed(a) for a in listeners), listeners
        assert not any(n.startswith("kube-proxy") for n in facts["pids"])

        out = strata("testbed", "kubernetes", "load", tarball, env=env, check=0).stdout
        image = re.search(r"(strata-fio:[0-9a-f]+)", out).group(1)
        host_dir = tmp_path / "data"
        host_dir.mkdir()
        name = f"fio-{uuid.uuid4().hex[:6]}"
        api.post("/api/v1/namespaces/default/pods", _fio_pod(name, image, host_dir))
        path = f"/api/v1/namespaces/default/pods/{name}"
        wait_for(lambda: api.get(path)["status"].get("phase") in ("Succeeded", "Failed"), 180, "the fio pod's end")
        pod = api.get(path)
        log = api.text(f"{path}/log")
        assert pod["status"]["phase"] == "Succeeded", f"{pod['status']}\n{log[-2000:]}"
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(addrs["node_block"])
        assert log.split()[:2] == [str(256 << 20), "100000"]  # resources.limits reached the cgroups (v1)
        job = json.loads(log[log.index("{") :])["jobs"][0]
        assert job["write"]["io_bytes"] == 8 * 1024 * 1024 and job["write"]["iops"] > 0
        assert (host_dir / "k8s.0.0").stat().st_size == 8 * 1024 * 1024  # fio wrote through the hostPath

        hog = _fio_pod(f"hog-{uuid.uuid4().hex[:6]}", image, host_dir)  # past its memory limit: OOMKilled
        hog["spec"]["containers"][0]["command"] = ["sh", "-c", 'a=$(head -c 400000000 /dev/zero | tr "\\0" a)']
        hog["spec"]["containers"][0]["resources"]["limits"]["memory"] = "64Mi"
        api.post("/api/v1/namespaces/default/pods", hog)
        path = f"/api/v1/namespaces/default/pods/{hog['metadata']['name']}"
        wait_for(lambda: api.get(path)["status"].get("phase") in ("Succeeded", "Failed"), 180, "the hog pod's end")
        ended = api.get(path)["status"]["containerStatuses"][0]["state"]["terminated"]
        end = pods.pod_end(api.get(path))  # what strata's runtime makes of it
        if end:
            ledger.failed(end[0], "kubernetes")
        assert ended["reason"] == "OOMKilled" and ended["exitCode"] == 137, ended
    finally:
        down = strata("testbed", "kubernetes", "down", env=env, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert _leftovers(facts, env, before) == []
    assert strata("testbed", "kubernetes", "status", env=env).returncode == 1


@pytest.mark.parametrize("undo", ["cleanup", "down", "up"])
@covers("runtime:kubernetes:testbed", "command:testbed", "fault:kill9")
def test_after_kill_9_of_the_holder_nothing_is_left(env, undo):
    before = {d for d in FIXED_HOST_DIRS if Path(d).exists()}
    facts = _up(env)
    holder = int(facts["holder"])
    try:
        os.kill(holder, signal.SIGKILL)
        wait_for(lambda: not Path(f"/proc/{holder}").exists() or _zombie(holder), 30, "the holder's death")
        time.sleep(0.5)
        assert any(Path(f"/proc/{p}").exists() for p in facts["pids"].values())  # the bed outlived its holder
        if undo == "up":  # a new bed removes the orphan first
            again = _up(env)
            assert again["token"] != facts["token"]
            assert not any(Path(f"/proc/{p}").exists() and not _zombie(p) for p in facts["pids"].values())
            assert not any(Path(facts[d]).exists() for d in ("root", "run_dir", "kubelet_dir"))
            assert not Path(f"/sys/class/net/skb{facts['token']}").exists()
            journals = [j.name for j in (Path(env["STRATA_STATE_DIR"]) / "journal").glob("*.jsonl")]
            assert journals == [f"kubernetes-{again['holder']}.jsonl"]  # only the new bed's
            ledger.kill9(-signal.SIGKILL, len(facts["pids"]))  # the new bed undid the orphan's processes
            strata("testbed", "kubernetes", "down", env=env, check=0, timeout=300)
        else:
            args = ("cleanup",) if undo == "cleanup" else ("testbed", "kubernetes", "down")
            cp = strata(*args, env=env, check=0, timeout=300)
            assert "undid kube-process" in cp.stdout and "undid kube-node" in cp.stdout, cp.stdout
            ledger.kill9(-signal.SIGKILL, cp.stdout.count("undid "))
    finally:
        strata("cleanup", env=env, timeout=300)
    assert _leftovers(facts, env, before) == []


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@covers("runtime:kubernetes:testbed", "command:testbed")
def test_down_leaves_a_socket_another_process_bound_in_a_fixed_dir_the_bed_made(env):
    """A private dockerd's containerd keeps its shims' sockets in /run/containerd/s, one of the fixed dirs: a
    bed that made such a dir removes it at its end, but never a socket some process still has bound there."""
    import socket

    before = {d for d in FIXED_HOST_DIRS if Path(d).exists()}
    made = [d for d in FIXED_HOST_DIRS if d not in before]
    assert made, f"every fixed dir {FIXED_HOST_DIRS} exists before the bed: nothing here for it to make"
    facts = _up(env)
    sock = Path(made[0]) / "s" / f"strata-it-{uuid.uuid4().hex[:8]}"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.parent.mkdir(parents=True, exist_ok=True)
        live.bind(str(sock))
        down = strata("testbed", "kubernetes", "down", env=env, timeout=300)
        assert down.returncode == 0, down.stdout + down.stderr
        assert sock.is_socket(), f"down removed {sock}, which a process still had bound"
        assert not Path(facts["root"]).exists()
    finally:
        live.close()
        sock.unlink(missing_ok=True)
        for d in (sock.parent, Path(made[0])):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        strata("testbed", "kubernetes", "down", env=env, check=0, timeout=300)
