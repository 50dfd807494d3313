"""Cassandra clusters that span hosts (`cluster.hosts`): the spec, the placement the workload makes,
each host's part (its node of every database, at its node address, on the database's ports), the
nodes joining one by one across hosts, the "measured" barrier that keeps a host's nodes up until
the clients' host is done, and the parse of a part that only served nodes."""

import json
import shutil
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).parent))
from test_ycsb_hosts import _Inner, _outputs, _part_art  # noqa: E402

from strata.core.errors import TrialFailure  # noqa: E402
from strata.core.instances import Target  # noqa: E402
from strata.core.params import Load  # noqa: E402
from strata.experiment.expand import expand  # noqa: E402
from strata.experiment.hosts import HostSpec, check_workload_hosts  # noqa: E402
from strata.experiment.load import load_spec  # noqa: E402
from strata.hosts import barrier as bar  # noqa: E402
from strata.hosts.part import BarrierRunning, Part  # noqa: E402
from strata.workloads.base import part_of, rendezvous, span_of  # noqa: E402
from strata.workloads.fio import FIO  # noqa: E402
from strata.workloads.ycsb import cassandra, server  # noqa: E402
from strata.workloads.ycsb.params import YcsbParams  # noqa: E402
from strata.workloads.ycsb.plugin import YCSB, node_config  # noqa: E402

ADDR = {"a": "192.0.2.10", "b": "192.0.2.14", "c": "192.0.2.18"}


def _span(nodes=2, hosts=("a", "b"), **kw) -> YcsbParams:
    return YcsbParams(cluster={"nodes": nodes, "replication_factor": nodes, "hosts": list(hosts)}, **kw)


# ---- the spec ----


def test_cluster_hosts_one_per_node_and_clients_on_any_host():
    p = _span(3, ("a", "b", "c"), clients_on="c")
    assert p.clients_host == "c" and p.name.endswith("-on-a+b+c-clients-c") and p.span_hosts == ["a", "b", "c"]
    assert _span().clients_host == "a"  # node 0's host by default
    assert _span(clients_on="d").span_hosts == ["a", "b", "d"]  # a host of their own
    for bad, words in (
        (dict(cluster={"nodes": 3, "hosts": ["a", "b"]}), "2 hosts for 3 nodes"),
        (dict(cluster={"nodes": 2, "hosts": ["a", "a"]}), "names a host twice"),
        (dict(clients_on="a"), "give cluster.hosts too"),
    ):
        with pytest.raises(ValidationError, match=words):
            YcsbParams(**bad)


def _spec(tmp_path, workload: dict, hosts=True, placement=("each",)) -> Path:
    doc = {
        "name": "span",
        "workdir": str(tmp_path / "w"),
        "devices": [{"type": "loop", "name": "loop", "size": "3GiB"}],
        "filesystems": ["ext4"],
        "runtimes": ["docker:overlay2"],
        "paths": ["volume"],
        "workloads": [{"ycsb": workload}, {"fio": {"rw": "randread", "bs": "4k", "size": "64M", "runtime": 5}}],
        "loads": [{"containers": 2}],
    }
    if hosts:
        doc["hosts"] = {"a": "node-a", "b": "node-b", "c": "node-c"}
        doc["placement"] = list(placement)
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_a_spanning_cluster_is_one_trial_placed_by_the_workload(tmp_path):
    """Two databases over a and b: one trial (not one per placement entry), two instances on each host; fio
    keeps the spec's placement."""
    wl = {"records": 100, "cluster": {"nodes": 2, "hosts": ["a", "b"]}, "clients_on": "b"}
    exp, wls = load_spec(_spec(tmp_path, wl, placement=("each", "spread")))
    trials, _ = expand(exp, wls)
    ycsb = [t for t in trials if t.workload.type == "ycsb"]
    assert len(ycsb) == 1 and len(trials) == 1 + 3  # fio: a, b, c (2 instances do not spread over 3 hosts)
    placed = ycsb[0].placement
    assert placed.name == "span-a+b" and placed.instances == (("a", 2), ("b", 2))
    assert placed.parts() == [("a", 2, 0), ("b", 2, 2)]


@pytest.mark.parametrize(
    "workload, hosts, words",
    [
        ({"cluster": {"nodes": 2, "hosts": ["a", "z"]}}, True, "host 'z' is not defined under `hosts:`"),
        ({"cluster": {"nodes": 2, "hosts": ["a", "b"]}}, False, "the experiment has no `hosts:`"),
        ({"span": {"host": "a", "addresses": {"a": "192.0.2.10"}}}, True, "`span` is set by strata"),
        ({"cluster": {"nodes": 2, "hosts": ["a", "b"]}, "clients_on": "z"}, True, "host 'z' is not defined"),
    ],
)
def test_spec_errors_of_a_spanning_cluster(tmp_path, workload, hosts, words):
    from strata.experiment.load import SpecErrors

    with pytest.raises(SpecErrors) as e:
        load_spec(_spec(tmp_path, workload, hosts=hosts))
    assert words in str(e.value)


def test_check_workload_hosts_ignores_workloads_that_do_not_span():
    hosts = {"a": HostSpec(node="n")}
    assert check_workload_hosts(hosts, [YcsbParams(), FIO.params(preset="rr")]) == []


def test_too_many_spanning_databases_is_a_load_problem():
    p = _span()
    assert YCSB.problems(p, Load(containers=64)) == []
    ((key, problem, _),) = YCSB.problems(p, Load(containers=65))
    assert key == "containers" and "65 databases" in problem


# ---- each host's part ----


def test_each_host_part_runs_its_node_of_every_database_at_its_address():
    p, load = _span(clients_on="b"), Load(containers=2)
    assert YCSB.span(p, load) == {"a": 2, "b": 2}
    assert YCSB.span(YcsbParams(), load) is None and span_of(FIO, FIO.params(preset="rr"), load) is None
    part_b, load_b = YCSB.part(p, load, "b", 2, ADDR)
    assert load_b.containers == 2 and part_b.span.host == "b" and part_b.drives
    assert not YCSB.part(p, load, "a", 2, ADDR)[0].drives
    assert YCSB.instances(part_b, load_b) == 2  # one node of each database
    for d in range(2):
        cfg = node_config(part_b, load_b, d, f"/data/{d}", f"/out/{d}/conf", "/lib")
        assert (cfg.index, cfg.address, cfg.seeds) == (1, ADDR["b"], (ADDR["a"],))
        assert (cfg.storage_port, cfg.cql_port) == cassandra.span_ports(d) == (7000 + 2 * d, 9042 + d)
        conf = cassandra.cassandra_yaml(cfg)
        assert conf["storage_port"] == 7000 + 2 * d and conf["native_transport_port"] == 9042 + d
        assert conf["seed_provider"][0]["parameters"][0]["seeds"] == f"{ADDR['a']}:{7000 + 2 * d}"
    # a workload that does not place itself: the host's share is its container count
    fio, fio_load = part_of(FIO, FIO.params(preset="rr"), load, "a", 1, ADDR)
    assert fio_load.containers == 1 and fio == FIO.params(preset="rr")


def test_a_spanning_parts_nodes_are_on_the_hosts_network_reached_at_its_node_address():
    """Network "node": the runtime puts them on the host's network as "host" does, and a Kubernetes node that
    is not strata's machine runs them (its clients reach them at its address, not on its loopback)."""
    from strata.core.instances import InstanceRequest
    from strata.stack.runtimes.kubernetes import pods
    from strata.workloads.base import network_of

    part = YCSB.part(_span(3, ("a", "b", "c")), Load(), "b", 1, ADDR)[0]
    assert network_of(YCSB, part) == "node" and network_of(YCSB, YcsbParams()) == "host"
    request = InstanceRequest(0, ["cassandra"], Path("/o/0"), network=network_of(YCSB, part))
    assert pods.unreachable_servers([request], "node-b") is None


def test_a_part_without_the_hosts_address_is_a_clear_error():
    from strata.core.errors import StrataError

    with pytest.raises(StrataError, match="no node address of host b"):
        YCSB.part(_span(), Load(), "a", 1, {"a": ADDR["a"], "b": ""})


def test_the_layout_of_a_host_part_names_the_other_hosts_nodes():
    p = YCSB.part(_span(3, ("a", "b", "c")), Load(containers=2), "b", 2, ADDR)[0]
    dbs = server.layout(p, Load(containers=2))
    assert [db.instances for db in dbs] == [[None, 0, None], [None, 1, None]]
    assert dbs[1].hosts == [ADDR["a"], ADDR["b"], ADDR["c"]] and dbs[1].port == 9043
    local = server.layout(YcsbParams(cluster={"nodes": 2}), Load(containers=1))
    assert local[0].instances == [0, 1] and local[0].port == 9042


def test_the_clients_connect_on_the_databases_port():
    from strata.workloads.ycsb.client import ClientRun, properties

    p = YCSB.part(_span(), Load(containers=2), "a", 2, ADDR)[0]
    runs = server.client_runs("run", p, server.layout(p, Load(containers=2))[1], Path("/out"))
    assert properties(runs[0])["port"] == "9043" and properties(runs[0])["hosts"] == f"{ADDR['a']},{ADDR['b']}"
    assert properties(ClientRun("load", Path("/w"), ("127.0.1.1",), Path("/o")))["port"] == "9042"


class _Ctx:
    """A MeasureContext whose local nodes are up at once (their log and port are faked)."""

    def __init__(self, art: Path, dead_after: int | None = None):
        self.art, self.checks, self.dead_after = art, 0, dead_after
        (art / "sync").mkdir(parents=True)
        self.running = SimpleNamespace(check=self._check)
        self.watch = None

    def _check(self, watch):
        self.checks += 1
        if self.dead_after is not None and self.checks > self.dead_after:
            raise TrialFailure("instance_died", "instance 0 exited 1")


def test_nodes_join_one_by_one_across_hosts(tmp_path, monkeypatch):
    """Host b's node (node 1) starts only once node 0 on host a answers; b times only its own node."""
    p = YCSB.part(_span(), Load(), "b", 1, ADDR)[0]
    dbs, ctx = server.layout(p, Load()), _Ctx(tmp_path)
    seen = []
    answers = iter([False, False, True])

    def port_open(address, port, timeout_s=1.0):
        seen.append((address, port, (tmp_path / "sync" / "start-0").exists()))
        return next(answers)

    monkeypatch.setattr(cassandra, "cql_port_open", port_open)
    monkeypatch.setattr(server, "POLL_S", 0.01)
    monkeypatch.setattr(server, "wait_node", lambda ctx, k, address, timeout_s, port: 4.5)
    assert server.start_nodes(YCSB, p, dbs, ctx) == [4.5]
    assert seen == [(ADDR["a"], 9042, False)] * 3  # node 0 polled on a, b's start file not yet written
    assert (tmp_path / "sync" / "start-0").exists() and ctx.checks == 2  # b's own nodes watched while it waited


def test_a_node_starts_only_once_the_nodes_before_it_are_normal_from_each_other(tmp_path, monkeypatch):
    """One host, two clusters of 3 nodes: node 2 of each starts after the ring check of its nodes 0 and 1
    (a node listening for CQL may still be bootstrapping in the seed's gossip: token collision)."""
    p = YcsbParams(clusters=2, cluster={"nodes": 3, "replication_factor": 2})
    dbs, ctx, events = server.layout(p, Load()), _Ctx(tmp_path), []

    def ring_check(db, lib, ctx, hosts=None):
        started = sorted(f.name for f in (tmp_path / "sync").iterdir())
        events.append(("ring", db.index, tuple(hosts or db.hosts), tuple(started)))

    def wait_node(ctx, k, address, timeout_s, port):
        events.append(("ready", k))
        return 1.0

    monkeypatch.setattr(server, "ring_check", ring_check)
    monkeypatch.setattr(server, "wait_node", wait_node)
    monkeypatch.setattr(server.jars, "ensure_ycsb", lambda: tmp_path)
    assert server.start_nodes(YCSB, p, dbs, ctx) == [1.0] * 6
    rings = [e for e in events if e[0] == "ring"]
    first_two = ("start-1", "start-4")  # node 1 of each cluster started, node 2 not yet
    assert rings == [("ring", 0, tuple(dbs[0].hosts[:2]), first_two), ("ring", 1, tuple(dbs[1].hosts[:2]), first_two)]
    assert events.index(rings[-1]) < events.index(("ready", 2)) and events.index(("ready", 4)) < events.index(rings[0])


def test_a_node_of_another_host_that_never_answers_is_not_ready(tmp_path, monkeypatch):
    p = YCSB.part(_span(), Load(), "b", 1, ADDR)[0].model_copy(update={"start_timeout": 10})
    monkeypatch.setattr(cassandra, "cql_port_open", lambda *a, **k: False)
    monkeypatch.setattr(server, "POLL_S", 0.01)
    clock = iter(range(0, 1000, 6))
    monkeypatch.setattr(server.time, "monotonic", lambda: next(clock))
    with pytest.raises(TrialFailure) as e:
        server.wait_remote(YCSB, _Ctx(tmp_path), server.layout(p, Load())[0], 0, p)
    assert e.value.category == "not_ready" and "host a" in str(e.value) and f"{ADDR['a']}:9042" in str(e.value)


# ---- the "measured" barrier ----


def _measured(part: Part) -> BarrierRunning:
    return BarrierRunning(_Inner(), part, at_measure=True)


def test_a_serving_part_waits_after_measuring_until_released():
    part = Part("p", "a", go_timeout_s=5)
    running = _measured(part)
    threading.Timer(0.2, part.release).start()
    t0 = time.monotonic()
    rendezvous(running, "measured")
    assert time.monotonic() - t0 >= 0.15 and part.state == "measured" and "measured" in part.times


def test_a_node_dying_while_the_part_waits_to_be_released_fails_it():
    part = Part("p", "a", go_timeout_s=5)
    calls = []

    def check():
        calls.append(1)
        if len(calls) > 2:
            raise TrialFailure("instance_died", "node 0 exited 137")

    with pytest.raises(TrialFailure, match="node 0 exited"):
        rendezvous(_measured(part), "measured", check)
    assert part.state == "measured"


def test_an_abort_while_waiting_to_be_released_is_host_lost():
    part = Part("p", "a", go_timeout_s=5)
    threading.Timer(0.1, part.abort, args=("host b was lost",)).start()
    with pytest.raises(TrialFailure) as e:
        rendezvous(_measured(part), "measured")
    assert e.value.category == "host_lost" and "host b" in str(e.value)


def test_a_start_barrier_part_and_a_local_run_do_not_wait_after_measuring():
    part = Part("p", "a", go_timeout_s=0.1)
    rendezvous(BarrierRunning(_Inner(), part), "measured")  # a tool workload: no such barrier
    rendezvous(_Inner(), "measured")  # a local run
    assert part.state == "starting"


class _Agent:
    def __init__(self, states):
        self.states, self.released = list(states), []

    def part(self, part_id, want, timeout_s):
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"agent": "ag", "state": state, "status": "failed" if state == "done" else None}

    def release(self, part_id):
        self.released.append(part_id)


def test_the_manager_releases_the_measured_parts_once_all_measured():
    """A serving host measured at once, the clients' host later; a tool workload's part (and a failed one)
    goes straight to done: all count, only the parts waiting there are released."""
    a, b, c = _Agent(["measured"]), _Agent(["running", "running", "measured"]), _Agent(["done"])
    parts = [bar.RemotePart(h, agent, f"p{h}", "ag") for h, agent in (("a", a), ("b", b), ("c", c))]
    barrier = bar.Barrier(parts, lost_after_s=5, poll_s=0.01)
    barrier.wait("measured", 5)  # a part done (failed) after the start is no PartEnded here
    barrier.release()
    assert a.released == ["pa"] and b.released == ["pb"] and c.released == []


def test_a_part_that_failed_before_it_was_ready_still_ends_the_wait_for_ready():
    parts = [bar.RemotePart("a", _Agent(["done"]), "pa", "ag")]
    with pytest.raises(bar.PartEnded):
        bar.Barrier(parts, lost_after_s=5, poll_s=0.01).wait("ready", 5)


# ---- the parse ----


def _serving_art(root: Path, ready_s: float) -> Path:
    (root / "inst-0").mkdir(parents=True)
    (root / "ycsb").mkdir()
    record = {"databases": 1, "nodes": 2, "phases": {}, "node_ready_s": [ready_s], "page_cache_bytes": 1 << 29}
    (root / "ycsb" / "clients.json").write_text(json.dumps({**record, "served_s": 30.0}))
    return root


def test_a_part_that_only_served_nodes_has_no_headline(tmp_path):
    m = YCSB.parse(_span(), _outputs(_serving_art(tmp_path / "a", 7.0))).metrics
    assert m["role"] == "nodes" and m["primary"]["value"] is None
    assert m["node_ready_s"] == [7.0] and m["served_s"] == 30.0


def test_the_merged_result_is_the_clients_host_with_every_hosts_nodes(tmp_path):
    a = _serving_art(tmp_path / "hosts" / "a", 7.0)
    b = _part_art(tmp_path / "hosts" / "b", ["db0-c0"], 9.0)
    own = YCSB.parse(_span(), _outputs(b)).metrics
    m = YCSB.parse(_span(), _outputs(a, b)).metrics
    assert m["throughput_ops_s"] == own["throughput_ops_s"] and m["databases"] == own["databases"]
    assert m["clients"]["run"]["clients"] == own["clients"]["run"]["clients"]
    assert m["node_ready_s"] == [7.0, 9.0]
    assert m["cache"]["page_cache_bytes"] == (1 << 29) + (1 << 30)  # both hosts hold the data


def test_target_of_a_span_part_names_the_nodes_own_data_dir(tmp_path, monkeypatch):
    """The command of b's instance 1: database 1's node 1, its data on the path under test."""
    from strata.workloads.ycsb import jars

    monkeypatch.setattr(jars, "ensure_cassandra", lambda: tmp_path)
    monkeypatch.setattr(jars, "jar_names", lambda home: ["jamm-0.4.0.jar"])
    p = YCSB.part(_span(), Load(containers=2), "b", 2, ADDR)[0]
    target = Target("dir", str(tmp_path / "mnt"), str(tmp_path / "out"))
    script = YCSB.command(p, Load(containers=2), target, 1)[2]
    assert f"listen_address: {ADDR['b']}" in script and "native_transport_port: 9043" in script
    assert "start-1" in script  # node 1 waits for its turn


def test_the_clients_windows_belong_to_the_host_whose_artifacts_hold_them(tmp_path):
    from strata.hosts.clock import Offset
    from strata.hosts.merge import PartOutcome, shifted_windows, sync_hosts, window_hosts
    from strata.results import validity
    from strata.results.result import Result

    a = _serving_art(tmp_path / "hosts" / "a", 7.0)
    b = _part_art(tmp_path / "hosts" / "b", ["db0-c0"], 9.0)
    parsed = YCSB.parse(_span(), _outputs(a, b))
    parts = [
        PartOutcome(h, i, Result(), [], art, Offset(off, 0.001, 5), {"running": 100.0 + off})
        for i, (h, art, off) in enumerate((("a", a, 0.5), ("b", b, -0.25)))
    ]
    hosts = window_hosts(parsed, ["a", "b"], parts)
    assert hosts == ["b"]  # one client, on b, though the instances are a's node and b's
    shifted = shifted_windows(parsed.windows, hosts, parts)
    sync = validity.sync(shifted, [o.start_time_s for o in _outputs(a, b)], 8)
    sync_hosts(sync, shifted, hosts, parts)
    judged = sync.to_json()
    assert not judged["suspect"] and judged["hosts"]["b"]["first_io_s"] == 0.0
    assert judged["hosts"]["a"]["first_io_s"] is None


def test_a_spanning_trial_is_judged_by_what_one_host_runs(tmp_path):
    """Two clusters over a and b natively: each host runs one node of each (a local run of one container
    with two clusters), which the native runtime can; the fit check counts one host's share of the rows."""
    wl = {"records": 100, "clusters": 2, "cluster": {"nodes": 2, "hosts": ["a", "b"]}}
    spec = _spec(tmp_path, wl)
    doc = yaml.safe_load(spec.read_text())
    doc.update(runtimes=["native"], paths=["bind"], loads=[{"containers": 1}])
    spec.write_text(yaml.safe_dump(doc))
    exp, wls = load_spec(spec)
    trials, skipped = expand(exp, wls)
    assert [t.placement.name for t in trials if t.workload.type == "ycsb"] == ["span-a+b"], skipped
    p = YcsbParams(records=1_000_000, cluster={"nodes": 2, "replication_factor": 2, "hosts": ["a", "b"]})
    local = YcsbParams(records=1_000_000, cluster={"nodes": 2, "replication_factor": 2})
    rows = 1_000_000 * 1100 * 2
    assert YCSB.data_bytes(local, Load()) - YCSB.data_bytes(p, Load()) == rows // 2 + (256 << 20)


# ---- the clients on a host of their own ----


def test_a_clients_host_without_a_node_is_a_part_with_no_instance(tmp_path):
    p, load = _span(clients_on="c"), Load(containers=2)
    assert YCSB.span(p, load) == {"a": 2, "b": 2, "c": 0}
    part_c, load_c = YCSB.part(p, load, "c", 0, ADDR)
    assert part_c.drives and YCSB.instances(part_c, load_c) == 0
    assert not YCSB.part(p, load, "a", 2, ADDR)[0].drives
    dbs = server.layout(part_c, load_c)
    assert [db.instances for db in dbs] == [[None, None], [None, None]] and dbs[1].hosts == [ADDR["a"], ADDR["b"]]
    wl = {"records": 100, "cluster": {"nodes": 2, "hosts": ["a", "b"]}, "clients_on": "c"}
    exp, wls = load_spec(_spec(tmp_path, wl))
    (t,) = [t for t in expand(exp, wls)[0] if t.workload.type == "ycsb"]
    assert t.placement.name == "span-a+b+c" and t.placement.parts() == [("a", 2, 0), ("b", 2, 2), ("c", 0, 4)]


class _Stacks:
    def __init__(self):
        self.built, self.deaths = [], []

    def get(self, trial):
        self.built.append(trial)
        return "device", "mounted", SimpleNamespace(watch=None)

    def died(self, trial, layer):
        self.deaths.append(layer)


def test_a_part_with_no_instance_builds_no_stack():
    """The clients' host runs no node: no device, file system or runtime is built there, and its result
    says why; a host with nodes builds the trial's stack as ever."""
    from strata.hosts.part import BarrierStacks
    from strata.stack.nostack import NoDevice

    p, load = _span(clients_on="c"), Load()
    trial = SimpleNamespace(workload=YCSB.part(p, load, "c", 0, ADDR)[0], load=load, workload_plugin=YCSB)
    stacks = _Stacks()
    device, mounted, session = BarrierStacks(stacks, Part("p", "c", 5)).get(trial)
    assert stacks.built == [] and isinstance(device, NoDevice) and mounted.mountpoint is None
    assert session.facts["built"] is False and "only the workload's clients" in device.facts["reason"]
    with session.path("bind", Path("/x"), load) as handle:
        running = session.start([], handle, load, Path("/nonexistent"))
    assert running.wait(1) == [] and running.cgroups == []
    BarrierStacks(stacks, Part("p", "c", 5)).died(trial, "runtime")
    assert stacks.deaths == []
    node = SimpleNamespace(workload=YCSB.part(p, load, "a", 1, ADDR)[0], load=load, workload_plugin=YCSB)
    assert BarrierStacks(stacks, Part("p", "a", 5)).get(node)[0] == "device" and stacks.built == [node]


def test_the_clients_host_output_is_its_clients_and_merges_with_the_nodes_hosts(tmp_path):
    """A, b served the nodes; c ran the clients and reports them as its one output (hosts/merge.py parses
    the outputs of every host): the merged result is c's clients, with a's and b's nodes."""
    from strata.core.instances import InstanceOutput

    a = _serving_art(tmp_path / "hosts" / "a", 7.0)
    b = _serving_art(tmp_path / "hosts" / "b", 8.0)
    c = _part_art(tmp_path / "hosts" / "c", ["db0-c0"], 0.0)
    record = json.loads((c / "ycsb" / "clients.json").read_text())
    (c / "ycsb" / "clients.json").write_text(json.dumps({**record, "node_ready_s": []}))
    shutil.rmtree(c / "inst-0")
    clients = InstanceOutput(2, c / "ycsb", 0, "", None, None, {"role": "clients"})
    m = YCSB.parse(_span(clients_on="c"), [*_outputs(a, b), clients]).metrics
    assert m["primary"]["value"] > 0 and m["node_ready_s"] == [7.0, 8.0]
    assert m["cache"]["page_cache_bytes"] == 2 * (1 << 29)  # the nodes' hosts, not the clients'


def test_the_plan_says_only_the_hosts_with_instances_write_the_device(tmp_path):
    from strata.core.host import host_facts
    from strata.experiment.plan import resolve

    wl = {"records": 100, "cluster": {"nodes": 2, "hosts": ["a", "b"]}, "clients_on": "c"}
    spec = _spec(tmp_path, wl)
    doc = yaml.safe_load(spec.read_text())
    doc["workloads"] = doc["workloads"][:1]  # the spanning cluster alone: c runs only its clients
    spec.write_text(yaml.safe_dump(doc))
    plan = resolve(*load_spec(spec), host_facts())
    assert [w.split(":")[0] for w in plan.writes] == ["host a", "host b"]


def test_a_node_that_died_on_one_host_is_the_cause_not_the_clients_that_met_it(tmp_path):
    from strata.hosts.clock import Offset
    from strata.hosts.executor import cause
    from strata.hosts.merge import PartOutcome
    from strata.results.result import Result

    def failed(host, category, message):
        failure = {"category": category, "message": message, "stderr": ""}
        result = Result.from_json({"status": "failed", "flags": {"failed": failure}})
        return PartOutcome(host, 0, result, [], tmp_path, Offset(0.0, 0.001, 5))

    clients = failed("a", "tool_error", "the YCSB clients (run) exited 1")
    node = failed("b", "instance_died", "instance 0 ended with code 137 while it should have run")
    e = cause([clients, node])
    assert e.category == "instance_died" and str(e).startswith("host b: instance 0 ended")
    assert cause([clients, failed("c", "timeout", "x")]).category == "tool_error"  # else the first
