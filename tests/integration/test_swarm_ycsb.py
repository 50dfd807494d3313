"""Cassandra under YCSB across hosts, for real: two test hosts (hosts/testbed.py: network namespaces with a
dockerd each, one Swarm), strata's agent on each, two Cassandra 5.0 databases in containers (a private
dockerd inside each agent, data on ext4 on a loop device of that host) placed both on host a, then one
on a and one on b; each host's YCSB clients run on that host, every host's measured run starts at the
barrier once its nodes are up, loaded and warmed, and the parts merge into one result. Then one
cluster whose two nodes sit on a and b (native JVMs in each agent, at each host's node address) with
its clients on b (study 001's layout). Checked: the merged result against each host's part, the
artifacts per host, the barrier's order, that a's node served until b's clients were done, and that
nothing is left: Swarm services, agent containers, JVMs, daemons, namespaces, mounts, loop devices.

About 12 minutes here with warm caches (the agent image with Java and the jars, the Cassandra image).
"""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from strata.hosts.testbed import swarm_bed
from strata.stack.journal import Journal
from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration

HOSTS = ["a", "b"]
SMALL = {"workload": "a", "records": 1000, "runtime": 8, "warmup": 2, "threads": 2}


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    root = Path(f"/var/tmp/ycsbh-swarm-it-{uuid.uuid4().hex[:6]}")
    journal = Journal("testbed", state)
    token, run_dirs = "", []
    try:
        with swarm_bed(journal, HOSTS, root) as b:
            token = b.bridge.removeprefix("stb")
            run_dirs = [Path(h.sock).parent for h in b.hosts]
            yield b, {"STRATA_STATE_DIR": str(state)}
            for h in b.hosts:
                assert _agents(h) == [], f"agent containers left on host {h.name}"
            assert b.manager.docker("service", "ls", "-q").stdout.strip() == "", "Swarm services left"
    finally:
        journal.close()
    assert _net(token) == set(), "namespaces, veths or the bridge of the test hosts were left behind"
    assert not root.exists()
    assert not [ln for ln in _processes() if any(str(d) in ln for d in run_dirs)], "a test host's dockerd still runs"


def _processes() -> list[str]:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()


def _net(token: str) -> set[str]:
    ns = set(os.listdir("/run/netns")) if Path("/run/netns").is_dir() else set()
    links = {p.name for p in Path("/sys/class/net").iterdir()}
    return {n for n in ns | links if token and token in n}


def _agents(h) -> list[str]:
    return h.docker("ps", "-a", "--filter", "label=strata.agent=1", "--format", "{{.Names}}").stdout.split()


def _jvms_in(netns: str, marker: str = "") -> list[str]:
    """Java processes in a test host's network namespace (its Cassandra nodes and YCSB clients)."""
    cp = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    found = []
    for pid in cp.stdout.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "java" in cmd.split(" ")[0] and marker in cmd:
            found.append(f"{pid}: {cmd[:120]}")
    return found


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "workload:ycsb",
    "workload:ycsb@hosts",
    "hosts:one",
    "hosts:span",
)
def test_cassandra_on_one_host_and_across_two(bed, tmp_path):
    b, env = bed
    spec = {
        "name": "swarm-ycsb",
        "workdir": "/var/tmp/ycsbh-unused",  # every host has its own workdir
        "devices": [{"type": "loop", "name": "loop", "size": "3GiB"}],
        "filesystems": ["ext4"],
        "runtimes": ["docker:overlay2"],
        "paths": ["volume"],
        "workloads": [{"ycsb": SMALL}],
        "loads": [{"name": "two", "containers": 2}],
        "placement": [{"a": 2}, "spread"],
        "hosts": b.spec_hosts(),
        "swarm": {"manager": f"unix://{b.manager.sock}", "lost_after_s": 30},  # 2 JVMs starting on 2 cores
    }
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "spec.yaml", spec), "-o", out, env=env, timeout=1500)
    rs = {r["trial"]["placement"]["name"]: r for r in results(out)}
    assert set(rs) == {"a2", "spread"}, cp.stdout + cp.stderr
    for name, r in rs.items():
        assert r["status"] == "ok", (name, r["flags"].get("failed"))
    assert cp.returncode == 0, cp.stdout + cp.stderr

    one, two = rs["a2"], rs["spread"]
    assert set(one["hosts"]) == {"a"} and set(one["metrics"]["hosts"]) == {"a"}
    assert len(one["metrics"]["databases"]) == 2
    _check_merged(two, out)

    for h in b.hosts:
        assert leftovers(h.workdir) == [], f"host {h.name}"
        assert _agents(h) == [] and _jvms_in(h.netns) == [], f"host {h.name}"
    assert b.manager.docker("service", "ls", "-q").stdout.strip() == ""
    print(
        f"\nycsb a, 2 databases on host a: {one['metrics']['primary']['value']:.0f} ops/s, "
        f"p99 read {one['metrics']['latency']['READ']['p99_us']} us; "
        f"1 on a + 1 on b: {two['metrics']['primary']['value']:.0f} ops/s, "
        f"p99 read {two['metrics']['latency']['READ']['p99_us']} us; sync {two['flags']['sync']}"
    )


def _check_merged(r: dict, out: Path) -> None:
    """One database on each host: the aggregate is every host's clients together, each part is kept."""
    m, per = r["metrics"], r["metrics"]["hosts"]
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 1}
    assert set(per) == set(HOSTS) and all(per[h]["primary"]["value"] > 0 for h in HOSTS)
    assert m["primary"]["unit"] == "ops/s" and m["primary"]["value"] > 0
    assert m["overall_ops_s"] == pytest.approx(sum(per[h]["overall_ops_s"] for h in HOSTS))
    for op in ("READ", "UPDATE"):
        assert m["operations"][op] == sum(per[h]["operations"][op] for h in HOSTS)
        assert m["latency"][op]["n"] == sum(per[h]["latency"][op]["n"] for h in HOSTS)  # histograms merged
        lo = min(per[h]["latency"][op]["p99_us"] for h in HOSTS)
        hi = max(per[h]["latency"][op]["p99_us"] for h in HOSTS)
        assert lo <= m["latency"][op]["p99_us"] <= hi
    assert m["errors"] == 0 and len(m["databases"]) == 2 and len(m["node_ready_s"]) == 2
    art = out / "trials" / r["trial_id"] / "hosts"
    for h in HOSTS:
        assert (art / h / "ycsb" / "clients.json").exists() and list((art / h / "ycsb" / "run").glob("db0-c0"))
        assert r["hosts"][h]["part"]["status"] == "ok"
    # the barrier is at the measured run: no host ran before every host's nodes were up, loaded, warmed
    times = {h: r["hosts"][h]["part"]["times"] for h in HOSTS}
    offsets = {h: r["hosts"][h]["clock"]["offset_s"] for h in HOSTS}
    ready = max(times[h]["ready"] - offsets[h] for h in HOSTS)
    assert all(times[h]["running"] - offsets[h] >= ready - 0.01 for h in HOSTS), times
    assert set(r["flags"]["sync"]["hosts"]) == set(HOSTS)


def _native_spec(b, name: str, ycsb: dict) -> dict:
    """One ycsb workload natively on ext4 on each host's loop device, one container, on the bed's hosts."""
    return {
        "name": name,
        "workdir": "/var/tmp/ycsbh-unused",  # every host has its own workdir
        "devices": [{"type": "loop", "name": "loop", "size": "3GiB"}],
        "filesystems": ["ext4"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"ycsb": ycsb}],
        "loads": [{"containers": 1}],
        "hosts": b.spec_hosts(),
        "swarm": {"manager": f"unix://{b.manager.sock}", "lost_after_s": 30},
    }


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:ycsb",
    "workload:ycsb@hosts",
    "hosts:span",
)
def test_one_cluster_across_two_hosts_with_its_clients_on_one(bed, tmp_path):
    """Node 0 on a, node 1 on b, RF 2 read and written at QUORUM (both nodes answer every operation), the
    clients on b: every operation crossed the network between the test hosts."""
    b, env = bed
    wl = {**SMALL, "data_integrity": True, "cluster": {"nodes": 2, "replication_factor": 2, "hosts": HOSTS}}
    spec = _native_spec(b, "swarm-ycsb-span", {**wl, "clients_on": "b"})
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "spec.yaml", spec), "-o", out, env=env, timeout=1500)
    (r,) = results(out)  # one trial: the cluster places itself, not once per host
    assert r["status"] == "ok", (r["flags"].get("failed"), cp.stdout[-3000:])
    assert r["trial"]["placement"]["name"] == "span-a+b"
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 1}
    m, per = r["metrics"], r["metrics"]["hosts"]
    assert per["a"]["role"] == "nodes" and per["a"]["primary"]["value"] is None
    assert per["b"]["primary"]["value"] > 0 and m["primary"]["value"] == per["b"]["primary"]["value"]
    assert m["errors"] == 0 and m["operations"]["READ"] > 0 and m["operations"]["UPDATE"] > 0
    assert len(m["node_ready_s"]) == 2  # each host timed its own node
    art = out / "trials" / r["trial_id"] / "hosts"
    addr = {h: r["hosts"][h]["node"]["address"] for h in HOSTS}
    conf = (art / "a" / "inst-0" / "conf" / "cassandra.yaml").read_text()
    assert f"listen_address: {addr['a']}" in conf and f"{addr['a']}:7000" in conf  # node 0 is the seed
    assert f"listen_address: {addr['b']}" in (art / "b" / "inst-0" / "conf" / "cassandra.yaml").read_text()
    assert addr["b"] in (art / "a" / "inst-0" / "node.log").read_text()  # a's node met b's
    assert not list((art / "a").glob("ycsb/run/*")) and list((art / "b").glob("ycsb/run/db0-c0"))
    # a's node served until b's clients were done: a's part measured at once, was released after b's
    t = {h: r["hosts"][h]["part"]["times"] for h in HOSTS}
    off = {h: r["hosts"][h]["clock"]["offset_s"] for h in HOSTS}
    assert t["a"]["measured"] - off["a"] < t["b"]["measured"] - off["b"] <= t["a"]["done"] - off["a"] + 0.01, t
    assert set(r["collectors"]["hosts"]) == set(HOSTS)
    # judged on the clients' window (on b), not on the nodes' starts (b's node joins after a's)
    sync = r["flags"]["sync"]
    assert not sync["suspect"] and sync["hosts"]["b"]["first_io_s"] == 0.0, sync
    for h in b.hosts:
        assert leftovers(h.workdir) == [], f"host {h.name}"
        assert _agents(h) == [] and _jvms_in(h.netns) == [], f"host {h.name}"
    print(
        f"\nycsb a, one cluster over a and b (RF 2, QUORUM), clients on b: {m['primary']['value']:.0f} ops/s, "
        f"p99 read {m['latency']['READ']['p99_us']} us; nodes ready {m['node_ready_s']} s; sync {r['flags']['sync']}"
    )


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:ycsb",
    "workload:ycsb@hosts",
    "hosts:span",
)
def test_a_database_on_one_host_with_its_clients_on_a_host_of_their_own(bed, tmp_path):
    """The node on a, the clients on b, which runs no node: b's part builds no stack (no loop device, no
    file system) and reports its clients as its output; every operation crossed to a."""
    b, env = bed
    wl = {**SMALL, "data_integrity": True, "cluster": {"nodes": 1, "hosts": ["a"]}, "clients_on": "b"}
    spec = _native_spec(b, "swarm-ycsb-clients", wl)
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "spec.yaml", spec), "-o", out, env=env, timeout=1500)
    (r,) = results(out)
    assert r["status"] == "ok", (r["flags"].get("failed"), cp.stdout[-3000:])
    assert r["trial"]["placement"]["name"] == "span-a+b"
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 0}
    m, per = r["metrics"], r["metrics"]["hosts"]
    assert per["a"]["role"] == "nodes" and per["b"]["primary"]["value"] > 0
    assert m["errors"] == 0 and m["operations"]["READ"] > 0 and len(m["node_ready_s"]) == 1
    facts = r["stack_facts"]["hosts"]
    assert facts["b"]["device"]["built"] is False and facts["b"]["runtime"]["built"] is False
    assert facts["a"]["device"].get("built") is None  # a's loop device, as ever
    art = out / "trials" / r["trial_id"] / "hosts"
    assert not list((art / "b").glob("inst-*")) and list((art / "b").glob("ycsb/run/db0-c0"))
    assert (art / "a" / "inst-0" / "node.log").exists() and not list((art / "a").glob("ycsb/run/*"))
    assert not r["flags"]["sync"]["suspect"] and r["flags"]["sync"]["hosts"]["b"]["first_io_s"] == 0.0
    rep = strata("report", out, "-o", tmp_path / "report", env=env, check=0)  # a serving host: no headline
    assert (tmp_path / "report" / "report.html").exists() and "ycsb-a-on-a-clients-b" in rep.stdout, rep.stdout
    for h in b.hosts:
        assert leftovers(h.workdir) == [], f"host {h.name}"
        assert _agents(h) == [] and _jvms_in(h.netns) == [], f"host {h.name}"
    print(
        f"\nycsb a, one node on a, clients on b: {m['primary']['value']:.0f} ops/s, "
        f"p99 read {m['latency']['READ']['p99_us']} us"
    )


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:ycsb",
    "workload:ycsb@hosts",
    "hosts:span",
    "fault:instance_died",
    "fault:instance_died@native",
)
def test_a_node_killed_on_a_serving_host_fails_the_trial_there(bed, tmp_path):
    """Node 0 on a, node 1 on b, the clients on b; a's node is killed during the measured run: the trial
    fails as instance_died on host a (not as the clients' errors it caused on b), and nothing is left."""
    b, env = bed
    wl = {**SMALL, "runtime": 30, "cluster": {"nodes": 2, "replication_factor": 2, "hosts": HOSTS}, "clients_on": "b"}
    spec = _native_spec(b, "swarm-ycsb-span-kill", wl)
    out = tmp_path / "out"
    a_ns, b_ns = b.hosts[0].netns, b.hosts[1].netns
    proc = start_strata("run", write_spec(tmp_path / "spec.yaml", spec), "-o", out, env=env)
    try:
        # the warm-up (2 s) and then the measured run (30 s) are the clients' `-t` phases on b
        wait_for(lambda: _jvms_in(b_ns, " -t "), 900, "the YCSB clients' run on host b")
        time.sleep(8)
        (node,) = _jvms_in(a_ns, "CassandraDaemon")
        os.kill(int(node.split(":")[0]), signal.SIGKILL)
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    (r,) = results(out)
    failed = r["flags"]["failed"]
    assert r["status"] == "failed" and failed["category"] == "instance_died", (failed, output[-3000:])
    assert failed["message"].startswith("host a:"), failed
    for h in b.hosts:
        assert leftovers(h.workdir) == [], f"host {h.name}"
        assert _agents(h) == [] and _jvms_in(h.netns) == [], f"host {h.name}"
    assert b.manager.docker("service", "ls", "-q").stdout.strip() == ""
