"""Issue 55 on a real test bed of several nodes (`strata testbed kubernetes up --nodes 3 --registry`): each node a
test host (its own network and mount namespaces, containerd, kubelet, cgroup root and disk), strata on none of
them, reaching a node only through the API server and its agent there.

- the network rule on every node: every address a node, a pod or a listening socket has is 127.0.0.0/8 or
  192.0.2.0/24; `down` leaves nothing (namespaces, links, loop devices, mounts, processes, cgroups, files);
- fio in pods on node 2 through `pvc:strata-hostpath`, `local` and `pvc-block:strata-loop` (a loop device over
  an image on node 2's disk), its image pulled from the bed's registry (TLS, the bed's CA; no `ctr import`), its
  cache check judged from node 2's own disk (below the claim's loop device for the block claim); a planted cache
  (node 3's disk without direct I/O) flagged, node 2's honest disk not;
- kill -9 of strata mid-trial, then one `strata cleanup`: nothing of the run left in the cluster or on any node;
- issue 57, the nodes as the experiment's hosts: 8 fio pods spread over two nodes as one trial; a node's kubelet
  stopped, or strata's agent on it killed, mid-trial: host_lost naming it, the next trial ok; kill -9 and one
  cleanup; the example at smoke scale; one Cassandra cluster over all three nodes at RF 3, every read verified.
"""

import ipaddress
import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from strata.stack.kube.api import Api
from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration
ALLOWED = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("192.0.2.0/24")]
UP_TIMEOUT_S = 5400
NODE_DIR = "/var/lib/strata"  # the agent's root: bound onto each node's disk


def _allowed(addr: str) -> bool:
    net = ipaddress.ip_network(addr, strict=False)
    return any(net.subnet_of(a) for a in ALLOWED)


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """A bed of three nodes with its registry; node 3's disk without direct I/O (a planted cache). One for the
    module's tests: it takes about a minute to come up."""
    env = {"STRATA_STATE_DIR": str(tmp_path_factory.mktemp("bed") / "state")}
    up = strata("testbed", "kubernetes", "up", "--nodes", "3", "--registry", "--buffered-disk", "3", "--disk-size",
                "2GiB", env=env, timeout=UP_TIMEOUT_S)  # fmt: skip
    assert up.returncode == 0, f"up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    facts = json.loads(strata("testbed", "kubernetes", "status", env=env, check=0).stdout)
    try:
        yield facts, env
    finally:
        down = strata("testbed", "kubernetes", "down", env=env, timeout=600)
        assert down.returncode == 0, down.stdout + down.stderr
    assert _bed_leftovers(facts) == []


def _api(facts: dict) -> Api:
    pki = Path(facts["root"]) / "pki"
    return Api(facts["server"], str(pki / "ca.crt"), str(pki / "admin.crt"), str(pki / "admin.key"))


def _in_node(node: dict, argv: list[str]) -> str:
    enter = ["nsenter", f"--net=/run/netns/{node['netns']}", f"--mount={node['mount_ns']}", "--"]
    return subprocess.run(enter + argv, capture_output=True, text=True, check=True, timeout=60).stdout


def _bed_leftovers(facts: dict) -> list[str]:
    token, root = facts["token"], facts["root"]
    left = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if root in cmd or f"strata-k8s-{token}" in cmd:
                left.append(f"process {p.name}: {cmd[:120]}")
    left += [f"mount {ln.split()[1]}" for ln in Path("/proc/mounts").read_text().splitlines() if root in ln]
    left += [f"netns {n}" for n in os.listdir("/run/netns") if token in n] if Path("/run/netns").is_dir() else []
    left += [f"link {n}" for n in os.listdir("/sys/class/net") if token in n]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left += [f"loop {ln.split(':')[0]}" for ln in loops.splitlines() if root in ln]
    # strata-loop's images, and the kubelets' locks over their devices, lived on the nodes' disks
    left += [f"loop {ln}" for ln in loops.splitlines() if "/var/lib/strata-node/" in ln]
    left += [f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob(f"*/strata-k8s-{token}-n*")]
    left += [f"directory {root}"] if Path(root).exists() else []
    left += [f"directory {d}" for d in Path("/run").glob(f"strata-k8s-{token}-n*")]
    return left


@covers("runtime:kubernetes:testbed", "command:testbed")
def test_each_node_is_a_test_host_of_its_own_and_keeps_the_network_rule(bed):
    facts, _ = bed
    api = _api(facts)
    nodes = facts["nodes"]
    assert [n["index"] for n in nodes] == [1, 2, 3] and _allowed(facts["server"].split("//")[1].rsplit(":", 1)[0])
    assert facts["registry"]["prefix"].startswith(facts["registry"]["address"] + ":5000/")
    for what in ("name", "address", "netns", "mount_ns", "disk", "containerd", "pod_block", "cgroup_root"):
        assert len({n[what] for n in nodes}) == 3, what  # nothing shared between two nodes
    for n in nodes:
        k8s = api.get(f"/api/v1/nodes/{n['name']}")
        internal = [a["address"] for a in k8s["status"]["addresses"] if a["type"] == "InternalIP"]
        assert internal == [n["address"]] and _allowed(n["address"]) and _allowed(n["pod_block"])
        # inside the node: its addresses, routes and listeners, all in the allowed ranges
        addrs = json.loads(_in_node(n, ["ip", "-j", "addr"]))
        local = [a["local"] for link in addrs for a in link.get("addr_info", []) if a.get("family") == "inet"]
        assert n["address"] in local and all(_allowed(a) for a in local), local
        routes = _in_node(n, ["ip", "-4", "route", "show", "table", "all"])
        assert "default" not in routes.split() and all(
            _allowed(a) for a in re.findall(r"\d+\.\d+\.\d+\.\d+(?:/\d+)?", routes)
        )
        listening = _in_node(n, ["ss", "-Htuln"])
        for line in listening.splitlines():
            where = line.split()[4].rsplit(":", 1)[0].strip("[]")
            assert where != "*" and _allowed(where), line  # never a wildcard, never another range
        # its own disk: xfs on its loop device, mounted inside the node only
        assert _in_node(n, ["findmnt", "-no", "SOURCE,FSTYPE", "/var/lib/strata-node"]).split() == [n["disk"], "xfs"]
        assert "/var/lib/strata-node" not in [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()]
        direct = Path(f"/sys/block/{Path(n['disk']).name}/loop/dio").read_text().strip()
        assert direct == ("0" if n["buffered"] else "1")
    pods = api.get("/api/v1/pods")["items"]
    assert all(_allowed(p["status"].get("podIP") or "127.0.0.1") for p in pods)


def _spec(workdir: Path, facts: dict, node: str, paths: list[str]) -> dict:
    runtime = {
        "type": "kubernetes",
        "kubeconfig": str(Path(facts["root"]) / "admin.kubeconfig"),
        "node": node,
        "images": facts["registry"]["prefix"],
        "registry_ca": facts["registry"]["ca"],
        "claim_size": "512MiB",
    }
    return {
        "name": "nodes",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "512MiB"}],
        "filesystems": ["xfs"],
        "runtimes": [runtime],
        "paths": paths,
        # random reads of a small file, direct I/O in the pod: node 2's disk moves them; node 3's loop device,
        # without direct I/O, hands them to this machine's page cache, which holds the file after the first pass
        "workloads": [
            {
                "fio": {
                    "rw": "randread",
                    "bs": "4k",
                    "size": "64MiB",
                    "runtime": 6,
                    "ramp_time": 1,
                    "ioengine": "psync",
                    "direct": 1,
                }
            }
        ],  # fmt: skip
        "loads": [{"name": "one", "numjobs": 1, "iodepth": 1}],
    }


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/pvc",
    "path:kubernetes/pvc-block",
    "path:kubernetes/local",
    "workload:fio",
    "workload:fio@kubernetes",
)
def test_fio_on_node_2_is_judged_from_node_2s_disk_and_a_planted_cache_on_node_3_is_flagged(bed, tmp_path):
    facts, _ = bed
    n2, n3 = facts["nodes"][1], facts["nodes"][2]
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    out = tmp_path / "out"
    spec = _spec(workdir, facts, n2["name"], ["pvc:strata-hostpath", "local", "pvc-block:strata-loop"])
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e, timeout=2400)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    rs = {r["labels"]["path"]: r for r in results(out)}
    assert set(rs) == {"pvc:strata-hostpath", "local", "pvc-block:strata-loop"}
    disk2 = Path(n2["disk"]).name
    for path, r in rs.items():
        assert r["status"] == "ok", (path, r["flags"].get("failed"))
        rt, where = r["stack_facts"]["runtime"], r["stack_facts"]["path"]
        assert rt["node"] == n2["name"] and rt["node_is_here"] is False and rt["agent"]["node"]["node"] == n2["name"]
        if path.startswith("pvc-block"):  # the claim's loop device, over its image on node 2's disk
            (volume,) = where["volumes"]
            assert volume["source"] == "local" and volume["fs"] == "block device", volume
            assert where["disks"][0] == Path(volume["path"]).name and where["disks"][1] == disk2, where
            block = r["flags"]["cache"]["evidence"]
            assert block["disks"][:2] == where["disks"][:2] and block["per_disk"][disk2]["read_share"] >= 0.5, block
            continue
        assert where["disks"][0] == disk2, where  # node 2's own disk, found by its agent
        c = r["flags"]["cache"]
        assert not c["suspect"], c  # direct I/O to node 2's disk: honest
        moved = r["collectors"]["diskstats"][disk2]
        assert moved["read_bytes"] > 0 and c["evidence"]["read_disk_share"] >= 0.5, (moved, c)
    # the image came from the registry: named by it in node 2's containerd, never imported under its own tag
    images = _in_node(n2, ["ctr", "--address", n2["containerd"], "-n", "k8s.io", "images", "ls", "-q"]).split()
    prefix = facts["registry"]["prefix"]
    assert any(i.startswith(prefix + "/strata-fio:") for i in images), images
    assert not any(i.startswith("strata-fio:") or i.startswith("docker.io/library/strata-fio") for i in images)
    # the planted cache: node 3's disk buffered by this machine's page cache
    out3 = tmp_path / "out3"
    spec3 = _spec(workdir, facts, n3["name"], ["local"])
    cp = strata("run", write_spec(tmp_path / "s3.yaml", spec3), "-o", out3, env=e, timeout=2400)
    (r3,) = results(out3)
    assert r3["status"] == "ok" and r3["stack_facts"]["path"]["disks"][0] == Path(n3["disk"]).name, r3["flags"]
    c3 = r3["flags"]["cache"]  # node 3's loop device moved the bytes, the disk below it (this machine's) did not
    below = [d for d, seen in c3["evidence"]["per_disk"].items() if d != Path(n3["disk"]).name]
    assert c3["suspect"] and below and all(c3["evidence"]["per_disk"][d]["read_share"] < 0.5 for d in below), c3
    assert leftovers(workdir) == []
    if workdir.exists():  # the run's workdir, empty: nothing of it is left
        workdir.rmdir()
    api = _api(facts)
    left = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
    assert not [n for n in left if n.startswith("strata-")], left
    for n in facts["nodes"]:
        assert _in_node(n, ["find", NODE_DIR, "-mindepth", "1", "-maxdepth", "1"]).split() == [], n["name"]
    blocked = rs["pvc-block:strata-loop"]["flags"]["cache"]["evidence"]
    print(
        f"\nnode 2 pvc-block: {blocked['disks'][0]} moved {blocked['per_disk'][blocked['disks'][0]]['read_bytes']:,} "
        f"bytes of the workload's {blocked['read_workload_bytes']:,}, {disk2} below it "
        f"{blocked['per_disk'][disk2]['read_bytes']:,}"
    )
    print(
        f"\nnode 2 pvc: {rs['pvc:strata-hostpath']['metrics']['primary']['value']:,.0f} IOPS, read share "
        f"{rs['pvc:strata-hostpath']['flags']['cache']['evidence']['read_disk_share']:.2f}; node 3 (buffered): "
        f"{r3['metrics']['primary']['value']:,.0f} IOPS, flagged: {c3['reason']}"
    )


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill_9_of_strata_mid_trial_then_one_cleanup_leaves_nothing_in_the_cluster_or_on_a_node(bed, tmp_path):
    facts, _ = bed
    n2 = facts["nodes"][1]
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = _spec(workdir, facts, n2["name"], ["local"])
    spec["workloads"][0]["fio"]["runtime"] = 60
    proc = start_strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=e)
    api = _api(facts)

    def running() -> bool:
        pods = [p for p in api.get("/api/v1/pods")["items"] if p["metadata"]["namespace"].startswith("strata-")]
        return any(
            p["metadata"]["name"].startswith("strata-1-") and p["status"].get("phase") == "Running" for p in pods
        )

    wait_for(running, 900, "an instance pod running on node 2")
    time.sleep(3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    assert _in_node(n2, ["find", NODE_DIR, "-mindepth", "1", "-maxdepth", "1"]).split()  # the run's files, left
    cp = strata("cleanup", env=e, timeout=900)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    namespaces = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
    assert not [n for n in namespaces if n.startswith("strata-")], namespaces
    volumes = api.get("/api/v1/persistentvolumes")["items"]
    assert not [v for v in volumes if "local" in v["spec"]], [v["metadata"]["name"] for v in volumes]
    for n in facts["nodes"]:
        assert _in_node(n, ["find", NODE_DIR, "-mindepth", "1", "-maxdepth", "1"]).split() == [], n["name"]
        mounts = _in_node(n, ["cat", "/proc/self/mounts"])
        assert NODE_DIR + "/strata-" not in mounts, n["name"]
        procs = [p for p in Path(f"/sys/fs/cgroup/memory{n['cgroup_root']}").rglob("cgroup.procs")]
        pods = [line for f in procs if "kubepods" in str(f) for line in f.read_text().split()]
        assert not [p for p in pods if "fio" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")], n["name"]
    assert leftovers(workdir) == []
    assert strata("cleanup", env=e, check=0).stdout.strip().endswith("nothing left behind")
    if workdir.exists():
        workdir.rmdir()


# ---- issue 57: one trial's pods over several nodes (hosts: {a: {kubernetes: NODE}}) --------------------------


def _hosts_spec(workdir: Path, facts: dict, nodes: dict[str, int], containers: int, path: str, runtime_s: int) -> dict:
    """Hosts that are the bed's nodes, by the label the bed gives node I (strata.io/bed-node=I)."""
    spec = _spec(workdir, facts, "", [path])
    del spec["runtimes"][0]["node"]
    spec["devices"][0]["size"] = "1GiB"  # the plan's room for every pod's file (each node's own disk holds them)
    spec["hosts"] = {h: {"kubernetes": f"strata.io/bed-node={i}"} for h, i in nodes.items()}
    spec["placement"] = ["spread"]
    spec["loads"] = [{"name": f"x{containers}", "numjobs": 1, "iodepth": 1, "containers": containers}]
    spec["workloads"][0]["fio"]["runtime"] = runtime_s
    return spec


def _pods_on(api: Api, node: str) -> list[dict]:
    pods = [p for p in api.get("/api/v1/pods")["items"] if p["metadata"]["namespace"].startswith("strata-")]
    return [p for p in pods if p["spec"].get("nodeName") == node and p["metadata"]["name"].startswith("strata-1-")]


def _pids(match) -> list[int]:
    """The processes whose argument list `match` (a list of bytes) accepts."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                argv = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if match(argv):
                out.append(int(p.name))
    return out


def _local_agents(state: Path) -> list[int]:
    """strata's agents for the nodes, on this machine, of runs under this state dir."""
    return _pids(lambda argv: b"strata.hosts.main" in argv and any(str(state).encode() in a for a in argv))


def _nothing_left(facts: dict, workdir: Path, state: Path) -> None:
    api = _api(facts)
    namespaces = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
    assert not [n for n in namespaces if n.startswith("strata-")], namespaces
    volumes = api.get("/api/v1/persistentvolumes")["items"]
    assert not [v["metadata"]["name"] for v in volumes if v["spec"].get("claimRef")], "a volume of the run left"
    for n in facts["nodes"]:
        assert _in_node(n, ["find", NODE_DIR, "-mindepth", "1", "-maxdepth", "1"]).split() == [], n["name"]
    assert _local_agents(state) == []
    assert not list((state / "kube-agents").glob("*")) if (state / "kube-agents").exists() else True
    assert leftovers(workdir) == []
    assert not list(workdir.glob("kube-*")) if workdir.exists() else True  # the nodes' agents' workdirs


def _fio_bins(path: Path) -> dict[int, int]:
    """The read latency histogram (lat_ns bins) of one instance's fio JSON, every job's added."""
    bins: dict[int, int] = {}
    for job in json.loads(path.read_text())["jobs"]:
        for k, v in job["read"]["lat_ns"]["bins"].items():
            bins[int(k)] = bins.get(int(k), 0) + int(v)
    return bins


def _pct(bins: dict[int, int], pct: float) -> float:
    n, cum = sum(bins.values()), 0
    for value in sorted(bins):
        cum += bins[value]
        if cum >= pct / 100 * n:
            return float(value)
    return float(max(bins))


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/pvc",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
    "hosts:kubernetes-span",
)
def test_eight_fio_pods_spread_over_two_nodes_are_one_trial_judged_node_by_node(bed, tmp_path):
    """Node 2's disk honest, node 3's buffered by this machine's page cache: the one result holds both nodes'
    metrics and cache checks, and its percentiles are those of all eight instances' histograms together."""
    facts, _ = bed
    n2, n3 = facts["nodes"][1], facts["nodes"][2]
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    state = tmp_path / "state"
    out = tmp_path / "out"
    spec = _hosts_spec(workdir, facts, {"a": 2, "b": 3}, 8, "pvc:strata-hostpath", 10)
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env={"STRATA_STATE_DIR": str(state)},
                timeout=2400)  # fmt: skip
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (r,) = results(out)
    assert r["status"] == "ok", r["flags"].get("failed")
    assert r["trial"]["placement"]["instances"] == {"a": 4, "b": 4}
    assert {h: r["hosts"][h]["node"]["hostname"] for h in ("a", "b")} == {"a": n2["name"], "b": n3["name"]}
    # each node's own metrics; the aggregate is their sum
    per = r["metrics"]["hosts"]
    total = sum(per[h]["read"]["iops"] for h in ("a", "b"))
    assert all(per[h]["read"]["iops"] > 0 for h in ("a", "b"))
    assert abs(r["metrics"]["read"]["iops"] - total) <= 0.01 * total
    # merged percentiles: those of every instance's histogram added up, computed here from the fio outputs
    outputs = sorted((out / "trials" / r["trial_id"] / "hosts").rglob("fio.json"))
    assert len(outputs) == 8, outputs
    merged: dict[int, int] = {}
    for p in outputs:
        for k, v in _fio_bins(p).items():
            merged[k] = merged.get(k, 0) + v
    lat = r["metrics"]["read"]["lat_ns"]
    assert lat["n"] == sum(merged.values())
    for key, pct in (("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9)):
        assert lat[key] == _pct(merged, pct), key
    # every instance's I/O window overlaps the others' (the same measure as across Swarm hosts)
    sync = r["flags"]["sync"]
    assert sync["overlap"] >= 0.95 and set(sync["hosts"]) == {"a", "b"}, sync
    # each node's cache check, on that node's disks: its own loop device moved its pods' bytes. Below them both
    # nodes' disk images lie on this machine's one vda, whose counters see both nodes' reads: node 3's planted
    # cache shows only when node 3 runs alone (test_fio_on_node_2_..._a_planted_cache_on_node_3_is_flagged)
    by_host = r["flags"]["cache"]["evidence"]["hosts"]
    for h, n in (("a", n2), ("b", n3)):
        ev, own = by_host[h]["evidence"], Path(n["disk"]).name
        assert ev["disks"][0] == own and ev["per_disk"][own]["read_share"] >= 0.95, (h, ev)
        assert ev["read_workload_bytes"] == pytest.approx(per[h]["read"]["io_bytes"], rel=0.01), (h, ev)
    assert by_host["a"]["suspect"] is False, by_host["a"]
    for h, n in (("a", n2), ("b", n3)):
        rt, where = r["stack_facts"]["hosts"][h]["runtime"], r["stack_facts"]["hosts"][h]["path"]
        assert rt["node"] == n["name"] and "clock_offset_s" in rt["agent"]  # each node's clock, measured
        assert where["disks"][0] == Path(n["disk"]).name, where  # its volumes on its own disk
        assert len(where["volumes"]) == 4, where  # a claim of the class per pod, each bound volume named
    _nothing_left(facts, workdir, state)
    if workdir.exists():
        workdir.rmdir()
    print(
        f"\n8 pods over 2 nodes: {r['metrics']['read']['iops']:,.0f} IOPS (a {per['a']['read']['iops']:,.0f}, "
        f"b {per['b']['read']['iops']:,.0f}), p99 {lat['p99'] / 1e3:.0f} us, overlap {sync['overlap']:.3f}, "
        f"host skew {sync['host_skew_s']}"
    )


def _two_trials_with_a_fault_on_node_2(bed, tmp_path, fault, runtime: dict | None = None) -> tuple[list[dict], object]:
    """Two trials of fio pods on nodes 1 and 2 (40 s each), `fault` run once node 2's pod has run 8 s (past the
    barrier: fio runs); the results in the order they began, strata's exit, and nothing left afterwards."""
    facts, _ = bed
    n2 = facts["nodes"][1]
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    state = tmp_path / "state"
    spec = _hosts_spec(workdir, facts, {"a": 1, "b": 2}, 2, "emptydir", 40)
    spec["runtimes"][0].update(runtime or {})
    spec["repetitions"] = 2
    api = _api(facts)

    def when_running():
        wait_for(lambda: any(p["status"].get("phase") == "Running" for p in _pods_on(api, n2["name"])), 900, "a pod")
        time.sleep(8)
        fault()

    thread = threading.Thread(target=when_running)
    thread.start()
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out",
                env={"STRATA_STATE_DIR": str(state)}, timeout=2400)  # fmt: skip
    thread.join()
    rs = sorted(results(tmp_path / "out"), key=lambda r: r["started_at"])
    _nothing_left(facts, workdir, state)
    if workdir.exists():
        workdir.rmdir()
    return rs, cp


def _kubelet(node: dict) -> int:
    override = f"--hostname-override={node['name']}".encode()
    (pid,) = _pids(lambda argv: b"kubelet" in argv and override in argv)
    return pid


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/emptydir",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
    "hosts:kubernetes-span",
    "fault:host_lost",
)
def test_a_nodes_kubelet_stopped_mid_trial_is_host_lost_naming_it_and_the_next_trial_runs(bed, tmp_path):
    facts, _ = bed
    n2 = facts["nodes"][1]
    stopped: list[float] = []

    def stop_the_kubelet():
        pid = _kubelet(n2)
        os.kill(pid, signal.SIGSTOP)
        stopped.append(time.time())
        try:
            time.sleep(45)  # the trial ends as host_lost meanwhile; its pods are deleted once the kubelet is back
        finally:
            os.kill(pid, signal.SIGCONT)

    rs, cp = _two_trials_with_a_fault_on_node_2(bed, tmp_path, stop_the_kubelet, {"node_lost_s": 15})
    assert stopped, cp.stdout[-2000:]
    assert [r["status"] for r in rs] == ["failed", "ok"], [(r["status"], r["flags"].get("failed")) for r in rs]
    failed = rs[0]["flags"]["failed"]
    assert failed["category"] == "host_lost", failed
    assert "host b" in failed["message"] and f"node {n2['name']}" in failed["message"], failed
    assert "kubelet has not renewed its Lease" in failed["message"]
    assert rs[1]["metrics"]["hosts"]["b"]["read"]["iops"] > 0  # the node came back: the next trial ran on it


def _node_agent(node: dict) -> int:
    """strata's agent process on the node (its pod's), found by the node its environment names."""

    def on_node(pid: int) -> bool:
        want = f"STRATA_AGENT_NODE={node['name']}".encode()
        try:
            return want in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return False

    (pid,) = [p for p in _pids(lambda argv: any(a.endswith(b"strata-node-agent") for a in argv)) if on_node(p)]
    return pid


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/emptydir",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
    "hosts:kubernetes-span",
    "fault:host_lost",
)
def test_strata_s_agent_on_a_node_killed_mid_trial_is_host_lost_naming_it_and_the_next_trial_runs(bed, tmp_path):
    """strata reaches node 2 only through its agent's pod there: SIGKILL to the agent while node 2's pod runs ends
    the trial as host_lost naming the node at once (the kubelet lives on); the next trial places a new agent."""
    facts, _ = bed
    n2 = facts["nodes"][1]
    killed: list[int] = []

    def kill_the_agent():
        pid = _node_agent(n2)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    rs, cp = _two_trials_with_a_fault_on_node_2(bed, tmp_path, kill_the_agent)
    assert killed, cp.stdout[-2000:]
    assert [r["status"] for r in rs] == ["failed", "ok"], [(r["status"], r["flags"].get("failed")) for r in rs]
    failed = rs[0]["flags"]["failed"]
    assert failed["category"] == "host_lost", failed
    assert "host b" in failed["message"] and f"node {n2['name']}: strata's agent there" in failed["message"], failed
    assert rs[1]["metrics"]["hosts"]["b"]["read"]["iops"] > 0  # a new agent: the next trial ran on the node


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill_9_of_strata_with_pods_on_two_nodes_then_one_cleanup_leaves_nothing(bed, tmp_path):
    facts, _ = bed
    n1, n2 = facts["nodes"][0], facts["nodes"][1]
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    state = tmp_path / "state"
    e = {"STRATA_STATE_DIR": str(state)}
    spec = _hosts_spec(workdir, facts, {"a": 1, "b": 2}, 2, "local", 60)
    proc = start_strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=e)
    api = _api(facts)

    def running() -> bool:
        return all(any(p["status"].get("phase") == "Running" for p in _pods_on(api, n["name"])) for n in (n1, n2))

    wait_for(running, 900, "an instance pod running on nodes 1 and 2")
    time.sleep(3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    assert len(_local_agents(state)) == 2  # the nodes' agents outlive strata: cleanup stops them
    cp = strata("cleanup", env=e, timeout=900)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    _nothing_left(facts, workdir, state)
    assert strata("cleanup", env=e, check=0).stdout.strip().endswith("nothing left behind")
    if workdir.exists():
        workdir.rmdir()


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/emptydir",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
    "hosts:one",
    "hosts:kubernetes-span",
    "example:kubernetes-nodes.yaml",
    "command:run",
    "command:report",
)
def test_the_kubernetes_nodes_example_runs_at_smoke_scale_on_three_nodes(bed, tmp_path):
    """examples/kubernetes-nodes.yaml as its header says to run it on the bed: 8 pods on one node, 4 + 4 on two
    and 3 + 3 + 2 on three, and 3 and 12 pods spread over three; the report compares the placements."""
    facts, _ = bed
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    state = tmp_path / "state"
    e = {"STRATA_STATE_DIR": str(state)}
    example = Path(__file__).resolve().parents[2] / "examples" / "kubernetes-nodes.yaml"
    sets = [
        f"runtimes.0.kubeconfig={Path(facts['root']) / 'admin.kubeconfig'}",
        f"runtimes.0.images={facts['registry']['prefix']}",
        f"runtimes.0.registry_ca={facts['registry']['ca']}",
        f"workdir={workdir}",
    ]
    argv = [a for s in sets for a in ("--set", s)]
    cp = strata("run", example, "--scale", "smoke", *argv, "-o", tmp_path / "out", env=e, timeout=3600)
    assert cp.returncode in (0, 1), cp.stdout[-3000:] + cp.stderr[-3000:]
    rs = results(tmp_path / "out")
    placed = sorted((r["trial"]["placement"]["name"], r["trial"]["load"]["containers"]) for r in rs)
    assert placed == [("a4+b4", 8), ("a8", 8), ("spread", 3), ("spread", 8), ("spread", 12)], placed
    bad = [(r["labels"], r["flags"].get("failed")) for r in rs if r["status"] != "ok"]
    assert not bad, bad
    for r in rs:
        hosts = {h for h, n in r["trial"]["placement"]["instances"].items() if n}
        assert set(r["metrics"]["hosts"]) == hosts and set(r["flags"]["cache"]["evidence"]["hosts"]) == hosts
    rep = strata("report", tmp_path / "out", "-o", tmp_path / "report", env=e, timeout=900)
    assert rep.returncode == 0, rep.stdout[-2000:] + rep.stderr[-2000:]
    assert (tmp_path / "report" / "report.html").exists()
    _nothing_left(facts, workdir, state)
    if workdir.exists():
        workdir.rmdir()


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/local",
    "workload:ycsb",
    "workload:ycsb@hosts",
    "hosts:span",
    "hosts:kubernetes-span",
)
def test_one_cassandra_cluster_over_three_nodes_at_rf_3_passes_its_data_integrity_check(bed, tmp_path):
    """Study 001's layout on the bed: node i of one cluster in a pod on bed node i+1, on the node's network at its
    address (InternalIP), its data on a `local` volume of the file system strata built on that node's disk; RF 3 at
    QUORUM, so every write reaches all three nodes and every read two; the clients on strata's machine (host a's
    part), which reaches the nodes' addresses. Every read verified (YCSB's data-integrity check)."""
    facts, _ = bed
    workdir = Path(f"/var/tmp/strata-nodes-{uuid.uuid4().hex[:8]}")
    state = tmp_path / "state"
    out = tmp_path / "out"
    hosts = ["a", "b", "c"]
    spec = _hosts_spec(workdir, facts, {h: i + 1 for i, h in enumerate(hosts)}, 1, "local", 8)
    del spec["placement"]  # the cluster places itself: node i on hosts[i]
    cluster = {"nodes": 3, "replication_factor": 3, "hosts": hosts}
    ycsb = {"workload": "a", "records": 1000, "runtime": 8, "warmup": 2, "threads": 4, "data_integrity": True}
    spec["workloads"] = [{"ycsb": {**ycsb, "cluster": cluster}}]
    spec["loads"] = [{"name": "one", "containers": 1}]
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env={"STRATA_STATE_DIR": str(state)},
                timeout=3600)  # fmt: skip
    rs = results(out)
    assert len(rs) == 1, (cp.stdout[-3000:], cp.stderr[-3000:])  # one trial: the cluster places itself
    (r,) = rs
    assert r["status"] == "ok", (r["flags"].get("failed"), cp.stdout[-3000:])
    assert r["trial"]["placement"]["name"] == "span-a+b+c"
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 1, "c": 1}
    node_of = {h: facts["nodes"][i]["name"] for i, h in enumerate(hosts)}
    assert {h: r["hosts"][h]["node"]["hostname"] for h in hosts} == node_of
    m, per = r["metrics"], r["metrics"]["hosts"]
    assert m["errors"] == 0 and m["operations"]["READ"] > 100 and m["operations"]["UPDATE"] > 0
    assert m["returns"]["VERIFY"] == {"OK": m["operations"]["READ"]}, m["returns"]  # every read verified
    assert per["b"]["role"] == per["c"]["role"] == "nodes" and m["primary"]["value"] == per["a"]["primary"]["value"]
    assert len(m["node_ready_s"]) == 3  # each part timed its own node
    # each node listened on its Kubernetes node's address, on that node, and met the others there
    art = out / "trials" / r["trial_id"] / "hosts"
    addr = {h: r["hosts"][h]["node"]["address"] for h in hosts}
    assert all(ipaddress.ip_address(a) in ALLOWED[1] for a in addr.values()), addr
    for h in hosts:
        conf = (art / h / "inst-0" / "conf" / "cassandra.yaml").read_text()
        assert f"listen_address: {addr[h]}" in conf and f"{addr['a']}:7000" in conf, h  # node 0 (on a) the seed
        assert r["stack_facts"]["hosts"][h]["runtime"]["node"] == node_of[h]
    log_a = (art / "a" / "inst-0" / "node.log").read_text()
    assert addr["b"] in log_a and addr["c"] in log_a  # a's node met b's and c's
    # each node's servers are judged by that node's memory; its collectors read that node
    assert set(r["collectors"]["hosts"]) == set(hosts)
    _nothing_left(facts, workdir, state)
    if workdir.exists():
        workdir.rmdir()
    print(
        f"\nycsb a, one cluster over three Kubernetes nodes (RF 3, QUORUM), clients on strata's machine: "
        f"{m['primary']['value']:.0f} ops/s, read p99 {m['latency']['READ']['p99_us']} us, nodes ready "
        f"{m['node_ready_s']} s, {m['operations']['READ']} reads verified"
    )
