"""Experiments across hosts without a Swarm: the spec's hosts and placement, the barrier with fake agents,
the merge of parts, the clock estimate, and the whole path (manager -> HTTP -> agent -> fake stacks ->
merged result) with two in-process agents on 127.0.0.1."""

import json
import threading
import time
from pathlib import Path

import pytest

from strata.core.errors import SpecErrors
from strata.experiment.expand import expand
from strata.experiment.hosts import Placement, place
from strata.experiment.load import parse_spec
from strata.hosts import barrier as bar
from strata.hosts import clock
from strata.hosts.agent import Agent
from strata.hosts.client import AgentClient, AgentUnreachable
from strata.hosts.deploy import Node, find_node
from strata.hosts.executor import HostAgent, HostTrials
from strata.hosts.merge import PartOutcome, instance_outputs, merge
from strata.hosts.server import AgentServer
from strata.results.flags import Flags
from strata.results.result import Result
from strata.results.store import load_results
from strata.run.runner import run_experiment

from .fakes import fake_registries

BASE = {
    "name": "t",
    "devices": ["loop"],
    "filesystems": ["xfs"],
    "runtimes": ["docker"],
    "paths": ["volume"],
    "workloads": [{"null": {"iops": 500}}],
}
HOSTS = {"a": "node-a", "b": {"label": "rack=b"}}


# ---- the spec --------------------------------------------------------------------------


def test_hosts_shorthands_and_the_default_placement_each_host():
    exp, wls = parse_spec({**BASE, "hosts": HOSTS})
    assert exp.hosts["a"].node == "node-a" and exp.hosts["b"].label == "rack=b"
    assert [p.name for p in exp.placement] == ["a", "b"]  # the same experiment on every host
    trials, _ = expand(exp, wls)
    assert sorted(t.placement.name for t in trials) == ["a", "b"]


def test_placement_shorthands():
    exp, wls = parse_spec(
        {
            **BASE,
            "hosts": HOSTS,
            "placement": ["spread", {"a": 4, "b": 4}, "b"],
            "loads": [{"name": "eight", "containers": 8}],
        }
    )
    assert [p.name for p in exp.placement] == ["spread", "a4+b4", "b"]
    trials, skipped = expand(exp, wls)
    by = {t.placement.name: t.placement for t in trials}
    assert dict(by["spread"].instances) == {"a": 4, "b": 4}
    assert dict(by["a4+b4"].instances) == {"a": 4, "b": 4}
    assert dict(by["b"].instances) == {"b": 8}
    assert by["a4+b4"].parts() == [("a", 4, 0), ("b", 4, 4)]  # instance numbers run across hosts


def test_placements_that_do_not_fit_the_load_are_skipped_with_the_reason():
    exp, wls = parse_spec(
        {**BASE, "hosts": HOSTS, "placement": ["spread", {"a": 3, "b": 1}], "loads": [{"name": "one", "containers": 1}]}
    )
    trials, skipped = expand(exp, wls)
    assert trials == []
    reasons = " ".join(s.reason for s in skipped)
    assert "spread over 2 hosts needs at least 2 instances" in reasons
    assert "runs 4 instances; the load has containers: 1" in reasons


def test_native_runs_one_instance_per_host_not_per_trial():
    _, wls = parse_spec(BASE)
    exp2, _ = parse_spec({**BASE, "runtimes": ["native"], "paths": ["bind"], "loads": [{"containers": 2}]})
    assert expand(exp2, wls)[0] == []  # two instances natively on one host: impossible
    exp3, _ = parse_spec(
        {**BASE, "runtimes": ["native"], "paths": ["bind"], "hosts": HOSTS, "loads": [{"containers": 2}]}
    )
    assert expand(exp3, wls)[0] == []  # each host alone (the default placement) with two natively
    exp4, _ = parse_spec(
        {
            **BASE,
            "runtimes": ["native"],
            "paths": ["bind"],
            "hosts": HOSTS,
            "placement": ["spread"],
            "loads": [{"containers": 2}],
        }
    )
    (t,) = expand(exp4, wls)[0]
    assert dict(t.placement.instances) == {"a": 1, "b": 1}


@pytest.mark.parametrize(
    "over, where",
    [
        ({"placement": ["spread"]}, "placement needs `hosts:`"),
        ({"hosts": HOSTS, "placement": ["c"]}, "names host 'c'"),
        ({"hosts": {"Bad Name": "x"}}, "host name 'Bad Name' is not allowed"),
        ({"hosts": {"spread": "x"}}, "host name 'spread'"),
        ({"hosts": {"a": {"node": "x", "label": "k=v"}}}, "exactly one of `node:` or `label:`"),
        ({"hosts": {"a": {"label": "novalue"}}}, "is not KEY=VALUE"),
        ({"hosts": {"a": {"node": "x", "workdir": "rel"}}}, "not an absolute path"),
        ({"hosts": HOSTS, "placement": [{"a": 0}]}, "a number from 1 to 256"),
        ({"hosts": HOSTS, "swarm": {"manager": "/var/run/docker.sock"}}, "is not unix:///PATH"),
        ({"hosts": HOSTS, "swarm": {"lost_after_s": 0}}, "lost_after_s"),
        ({"devices": [{"type": "remote", "host": "a"}]}, "served from host 'a', but the experiment has no `hosts:`"),
        ({"hosts": HOSTS, "devices": [{"type": "remote", "host": "c"}]}, "host 'c' is not defined under `hosts:`"),
        ({"hosts": HOSTS, "devices": [{"type": "remote", "host": "a", "rate": "1gbit"}]}, "the link is the real"),
        ({"hosts": HOSTS, "devices": [{"type": "remote", "host": "a", "transport": "nvme-tcp"}]}, "serves nbd only"),
        ({"devices": [{"type": "remote", "served_at": "192.0.2.9:10809/0a1b2c3d"}]}, "`served_at` is set by strata"),
    ],
)
def test_bad_hosts_and_placements_are_spec_errors(over, where):
    with pytest.raises(SpecErrors) as e:
        parse_spec({**BASE, **over})
    assert where in e.value.message()


def test_trial_ids_without_hosts_do_not_change_and_placement_is_part_of_the_id():
    exp, wls = parse_spec(BASE)
    (local,) = expand(exp, wls)[0]
    assert "placement" not in local.resolved()
    exp2, _ = parse_spec({**BASE, "hosts": HOSTS})
    ids = {t.placement.name: t.id for t in expand(exp2, wls)[0]}
    assert len({local.id, ids["a"], ids["b"]}) == 3


def test_place_keeps_the_specs_host_order():
    exp, _ = parse_spec({**BASE, "hosts": HOSTS})
    placed = place(Placement(instances={"b": 2, "a": 1}), 3, exp.hosts)
    assert placed.hosts == ["a", "b"] and placed.parts() == [("a", 1, 0), ("b", 2, 1)]
    assert dict(placed.nodes) == {"a": "node=node-a", "b": "label:rack=b"}


# ---- nodes ------------------------------------------------------------------------------


def _nodes():
    return [
        Node("id1", "h1", "192.0.2.10", {"rack": "a"}, "ready", "active"),
        Node("id2", "h2", "192.0.2.11", {"rack": "b"}, "ready", "active"),
        Node("id3", "h3", "192.0.2.12", {"rack": "b"}, "down", "active"),
    ]


def test_find_node_by_name_id_or_label():
    exp, _ = parse_spec({**BASE, "hosts": {"x": "h1", "y": "id2", "z": {"label": "rack=a"}}})
    assert [find_node(n, s, _nodes()).id for n, s in exp.hosts.items()] == ["id1", "id2", "id1"]


def test_find_node_refuses_ambiguous_missing_and_down_nodes():
    from strata.core.errors import StrataError

    exp, _ = parse_spec({**BASE, "hosts": {"x": {"label": "rack=b"}, "y": "nope", "z": "h3"}})
    for name, spec in exp.hosts.items():
        with pytest.raises(StrataError):
            find_node(name, spec, _nodes())


# ---- the clock ----------------------------------------------------------------------------


def test_the_shortest_round_trip_decides_the_offset():
    off = clock.estimate([(10.0, 20.5, 11.0), (12.0, 22.1, 12.2), (13.0, 30.0, 16.0)])
    assert off.offset_s == pytest.approx(10.0) and off.uncertainty_s == pytest.approx(0.1)
    with pytest.raises(ValueError):
        clock.estimate([])


def test_the_kernel_clock_state_is_read():
    st = clock.state()["kernel"]
    assert "error" in st or isinstance(st["synchronized"], bool)


# ---- the barrier with fake agents --------------------------------------------------------


class FakeClient:
    """An agent's part that becomes ready, then runs after its go, then is done; or fails on cue."""

    def __init__(self, host, agent="ag", ready_after=0, silent_after=None, end_before_start=False):
        self.host, self.agent, self.ready_after, self.silent_after = host, agent, ready_after, silent_after
        self.end_before_start = end_before_start
        self.calls, self.go_at, self.aborted = 0, None, None

    def start_part(self, doc):
        return {"state": "starting"}

    def part(self, part_id, want, timeout_s):
        self.calls += 1
        if self.silent_after is not None and self.calls > self.silent_after:
            raise AgentUnreachable("refused")
        if self.end_before_start:
            return {"state": "done", "status": "failed", "agent": self.agent, "failed": {"category": "prepare"}}
        if self.aborted or self.go_at is not None:
            return {"state": "done", "status": "ok", "agent": self.agent}
        state = "ready" if self.calls > self.ready_after else "starting"
        return {"state": state, "agent": self.agent}

    def go(self, part_id, start_at):
        self.go_at = start_at

    def abort(self, part_id, reason):
        self.aborted = reason


def _barrier(*clients, lost_after_s=0.3):
    parts = [bar.RemotePart(c.host, c, f"p-{c.host}", "ag", offset_s=i * 0.5) for i, c in enumerate(clients)]
    return bar.Barrier(parts, lost_after_s=lost_after_s, poll_s=0.01), parts


def test_the_barrier_waits_for_every_part_and_sends_each_its_own_clock():
    a, b = FakeClient("a"), FakeClient("b", ready_after=3)
    br, parts = _barrier(a, b)
    br.start({"a": {}, "b": {}})
    br.wait("ready", 5)
    assert a.go_at is None and [p.state for p in parts] == ["ready", "ready"]
    t = br.go(margin_s=0.2)
    assert a.go_at == pytest.approx(t) and b.go_at == pytest.approx(t + 0.5)  # b's clock is 0.5 s ahead
    br.wait("done", 5)


def test_a_silent_agent_is_host_lost_within_the_bound():
    a, b = FakeClient("a"), FakeClient("b", ready_after=10**9, silent_after=1)
    br, _ = _barrier(a, b)
    t0 = time.monotonic()
    with pytest.raises(bar.HostLost) as e:
        br.wait("ready", 30)
    assert e.value.host == "b" and time.monotonic() - t0 < 30  # lost, before the wait's own 30 s


def test_a_restarted_agent_is_host_lost():
    br, _ = _barrier(FakeClient("a"), FakeClient("b", agent="other"))
    with pytest.raises(bar.HostLost, match="restarted"):
        br.wait("ready", 5)


def test_a_part_that_ends_before_the_start_ends_the_trial():
    br, _ = _barrier(FakeClient("a", ready_after=1000), FakeClient("b", end_before_start=True))
    with pytest.raises(bar.PartEnded) as e:
        br.wait("ready", 5)
    assert e.value.host == "b"


def test_a_part_never_ready_times_out():
    br, _ = _barrier(FakeClient("a", ready_after=10**9))
    with pytest.raises(bar.PartTimeout):
        br.wait("ready", 0.2)


# ---- the merge ----------------------------------------------------------------------------


def _outcome(tmp_path, host, first, offset_s, iops, start):
    art = tmp_path / host
    (art / "inst-0").mkdir(parents=True)
    (art / "inst-0" / "null.json").write_text(json.dumps({"iops": iops, "index": 0}))
    out = {"index": 0, "out_dir": "inst-0", "returncode": 0, "start_time_s": start, "end_time_s": start + 1}
    result = Result.from_json(
        {"status": "ok", "metrics": {"primary": {"value": iops}}, "flags": {"cache": {"suspect": False}}}
    )
    times = {"running": start + offset_s - 0.01}
    return PartOutcome(host, first, result, [out], art, clock.Offset(offset_s, 0.001, 5), times)


def test_instances_are_numbered_across_hosts_in_the_managers_clock(tmp_path):
    parts = [_outcome(tmp_path, "a", 0, 0.0, 100, 50.0), _outcome(tmp_path, "b", 1, 2.0, 200, 52.0)]
    outputs, hosts = instance_outputs(parts)
    assert [o.index for o in outputs] == [0, 1] and hosts == ["a", "b"]
    assert [o.start_time_s for o in outputs] == [50.0, 50.0]  # b's clock is 2 s ahead
    assert outputs[1].facts["host"] == "b"


def test_pods_on_a_kubernetes_node_are_moved_by_that_nodes_clock_too(tmp_path):
    """A part whose pods ran on a node strata reached through its agent: they stamped their times in the node's
    clock, 0.5 s ahead of the part's host here; the instances' times and windows are moved by both offsets, a
    server workload's clients' windows (on the part's host) by the host's only."""
    from strata.hosts.merge import shifted_windows

    parts = [_outcome(tmp_path, "a", 0, 0.0, 100, 50.0), _outcome(tmp_path, "b", 1, 2.0, 200, 52.5)]
    parts[1].result.stack_facts = {"runtime": {"runtime": "kubernetes", "agent": {"clock_offset_s": 0.5}}}
    assert parts[0].pods_offset_s == 0.0 and parts[1].pods_offset_s == 0.5
    outputs, hosts = instance_outputs(parts)
    assert [o.start_time_s for o in outputs] == [50.0, 50.0]
    windows = [(50.0, 51.0), (52.5, 53.5)]
    assert shifted_windows(windows, hosts, parts) == [(50.0, 51.0), (50.0, 51.0)]
    assert shifted_windows(windows, hosts, parts, in_instances=False) == [(50.0, 51.0), (50.5, 51.5)]


def test_merge_sums_the_hosts_and_keeps_each(tmp_path):
    exp, wls = parse_spec({**BASE, "hosts": HOSTS, "placement": ["spread"], "loads": [{"containers": 2}]})
    (trial,) = expand(exp, wls)[0]
    parts = [_outcome(tmp_path, "a", 0, 0.0, 100, 50.0), _outcome(tmp_path, "b", 1, 0.0, 200, 50.0)]
    merged = Result()
    merge(trial, parts, tmp_path, merged)
    result = merged.to_json()
    assert result["status"] == "ok"
    assert result["metrics"]["primary"]["value"] == pytest.approx(300)  # every instance of both hosts, summed
    assert set(result["metrics"]["hosts"]) == {"a", "b"}
    assert result["flags"]["cache"]["suspect"] is False
    assert set(result["flags"]["sync"]["hosts"]) == {"a", "b"}
    assert result["flags"]["sync"]["release_skew_s"] == pytest.approx(0.0)
    assert result["writes"]["amplification"] is None and "flush" not in result["flags"]  # the parts hold neither


def test_merge_flags_a_trial_whose_host_dropped_its_syncs_and_keeps_each_hosts_writes(tmp_path):
    exp, wls = parse_spec({**BASE, "hosts": HOSTS, "placement": ["spread"], "loads": [{"containers": 2}]})
    (trial,) = expand(exp, wls)[0]
    parts = [_outcome(tmp_path, "a", 0, 0.0, 100, 50.0), _outcome(tmp_path, "b", 1, 0.0, 200, 50.0)]
    cache = {"suspect": False}
    flush_a = {"suspect": False, "reason": "every layer saw at least 500 flushes"}
    parts[0].result.flags = Flags.from_json({"cache": cache, "flush": flush_a})
    parts[1].result.flags = Flags.from_json({"cache": cache, "flush": {"suspect": True, "reason": "loop0 saw 0"}})
    parts[0].result.writes = {"workload_bytes": 10 << 20, "amplification": {"loop0": 1.0}}
    parts[1].result.writes = {"workload_bytes": 30 << 20, "amplification": {"loop3": 2.0}}
    merged = Result()
    merge(trial, parts, tmp_path, merged)
    result = merged.to_json()
    flush = result["flags"]["flush"]
    assert (
        flush["suspect"] and flush["reason"] == "host b: loop0 saw 0" and set(flush["evidence"]["hosts"]) == {"a", "b"}
    )
    assert result["writes"]["amplification"] == {"a:loop0": 1.0, "b:loop3": 2.0}
    assert result["writes"]["workload_bytes"] == 40 << 20
    assert any(w["flag"] == "flush" for w in result["warnings"])


# ---- the whole path, with two agents on 127.0.0.1 --------------------------------------------


@pytest.fixture
def two_agents(tmp_path):
    servers, found = [], {}
    for name in ("a", "b"):
        # each agent its own fake mount points, as two machines have: shared, one part's teardown of its bind
        # directory raced the other's setup (a full tier on a loaded machine: FileNotFoundError in host a)
        agent = Agent(
            name, tmp_path / name / "work", tmp_path / name / "state", registries=fake_registries(tmp_path / name)
        )
        agent._facts = {"hostname": name, "kernel": "test"}  # host facts are not what this tests
        server = AgentServer(agent, "127.0.0.1", 0, "tok")
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        client = AgentClient(f"http://127.0.0.1:{server.server_address[1]}", "tok", name)
        found[name] = HostAgent(name, {"hostname": name}, client, agent.id, {"kernel": "test"})
        servers.append(server)
    yield found, servers
    for s in servers:
        s.shutdown()
        s.server_close()


def _hosts_spec(tmp_path, **over):
    hosts = {h: {"node": h, "state_dir": str(tmp_path / h / "state")} for h in ("a", "b")}
    spec = {
        **BASE,
        "workdir": str(tmp_path / "work"),
        "runtimes": ["native"],
        "paths": ["bind"],
        "hosts": hosts,
        "placement": ["spread"],
        "loads": [{"name": "two", "containers": 2}],
        **over,
    }
    return parse_spec(spec)


def test_a_trial_spanning_two_agents_through_http(tmp_path, two_agents):
    found, _ = two_agents
    exp, wls = _hosts_spec(tmp_path)
    trials, skipped = expand(exp, wls)
    ex = HostTrials(found, lost_after_s=2, poll_s=0.05)
    summary = run_experiment(exp, wls, trials, skipped, tmp_path / "out", host={"kernel": "m"}, executor=ex)
    assert summary.exit_code == 0
    (r,) = load_results(tmp_path / "out")
    assert r.status == "ok" and r.metrics["primary"]["value"] == pytest.approx(1000)
    assert set(r.metrics["hosts"]) == {"a", "b"} and set(r.hosts) == {"a", "b"}
    assert r.hosts["a"]["clock"]["samples"] == 5 and "go_at" in r.hosts["b"]
    assert (tmp_path / "out" / "trials" / r.trial_id / "hosts" / "b").is_dir()
    run_doc = json.loads(next((tmp_path / "out" / "runs").glob("*.json")).read_text())
    assert set(run_doc["hosts"]) == {"a", "b"}
    # the agents tore their stacks down when the run closed
    assert not list((tmp_path / "a" / "state" / "agent" / "journal").glob("*.jsonl"))


def test_an_agent_gone_mid_trial_is_host_lost_and_the_run_goes_on(tmp_path, two_agents):
    found, servers = two_agents
    exp, wls = _hosts_spec(
        tmp_path,
        workloads=[{"null": {"iops": 500, "sleep_s": 3}}],
        placement=["spread", "a"],
        loads=[{"name": "two", "containers": 2}, {"name": "one", "containers": 1}],
    )
    trials, skipped = expand(exp, wls)
    trials.sort(key=lambda t: t.placement.name != "spread")  # the spreading trial first (the order is random)
    assert [t.placement.name for t in trials] == ["spread", "a"]
    ex = HostTrials(found, lost_after_s=1, poll_s=0.05)

    def kill_b():
        b = found["b"].client
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            agent = servers[1].agent
            if any(p.state == "running" for p, _, _ in agent.parts.values()):
                servers[1].shutdown()
                servers[1].server_close()
                return
            time.sleep(0.02)
        raise AssertionError(f"b never ran its part ({b})")

    killer = threading.Thread(target=kill_b)
    killer.start()
    t0 = time.monotonic()
    summary = run_experiment(exp, wls, trials, skipped, tmp_path / "out", host={"kernel": "m"}, executor=ex)
    killer.join()
    assert summary.exit_code == 1
    by = {r.trial["placement"]["name"]: r for r in load_results(tmp_path / "out")}
    failed = by["spread"].flags.failed
    assert failed.category == "host_lost" and "host b" in failed.message
    assert by["a"].status == "ok"  # the run went on with the host that remained
    assert time.monotonic() - t0 < 60


def test_the_agent_refuses_requests_without_the_token(two_agents):
    found, _ = two_agents
    bad = AgentClient(found["a"].client.url, "wrong", "a")
    assert bad.health()["host"] == "a"  # liveness needs no token
    from strata.hosts.client import AgentRefused

    with pytest.raises(AgentRefused) as e:
        bad.facts()
    assert e.value.status == 401


def test_the_agent_listens_on_one_address_only():
    from strata.core.errors import StrataError
    from strata.hosts.server import check_listen

    with pytest.raises(StrataError):
        check_listen("0.0.0.0")
    check_listen("192.0.2.10")


def test_report_cells_tell_placements_apart():
    from strata.analysis.cells.cells import build_cells

    exp, wls = parse_spec(
        {
            **BASE,
            "hosts": HOSTS,
            "placement": ["spread", {"a": 3, "b": 1}],
            "loads": [{"name": "four", "containers": 4}],
        }
    )
    results = []
    for t in expand(exp, wls)[0]:
        labels = {"device": "loop", "filesystem": "xfs", "runtime": "docker:overlay2", "path": "volume"}
        labels.update(workload="null", load="four")
        results.append(
            {"status": "ok", "trial": t.resolved(), "labels": labels, "metrics": {"primary": {"value": 1.0}}}
        )
    names = sorted(c.name for c in build_cells(results))
    assert names == [
        "loop/xfs/docker:overlay2/volume null four @a3+b1",
        "loop/xfs/docker:overlay2/volume null four @spread",
    ]


def test_a_job_file_named_on_the_manager_travels_with_the_part(tmp_path):
    from pydantic import BaseModel

    from strata.hosts.agent import shipped_files, unship

    job = tmp_path / "job.fio"
    job.write_text("[global]\nrw=randread\n")

    class Params(BaseModel):
        type: str = "fio"
        jobfile: str = str(job)
        rw: str = "/not/a/file"

    files = shipped_files(Params())
    assert list(files) == [str(job)]
    resolved = unship({"workload": Params().model_dump()}, files, tmp_path / "agent")
    moved = Path(resolved["workload"]["jobfile"])
    assert moved != job and moved.is_relative_to(tmp_path / "agent") and moved.read_text() == job.read_text()
    assert resolved["workload"]["rw"] == "/not/a/file"


# ---- a remote device served from another host --------------------------------------------


class FakeTarget:
    """What stack/remote/serve.py yields, with counters that grow between the manager's two samples."""

    def __init__(self, spec):
        self.spec, self.samples = spec, 0
        self.served_at = "127.0.0.1:10809/0a1b2c3d"

    def to_json(self):
        return {"served_at": self.served_at, "facts": {"target": "fake", "backing": {"disks": ["vdz"]}}}

    def stats(self):
        self.samples += 1
        moved = (self.samples - 1) * (64 << 20)
        return {
            "alive": True,
            "target_io": {"read_bytes": moved, "write_bytes": 0},
            "disks": {"vdz": {"read_sectors": moved // 512, "write_sectors": 0}},
        }


def test_a_remote_device_served_from_another_host(tmp_path, two_agents, monkeypatch):
    import contextlib

    import strata.hosts.agent as agent_mod

    served = []

    @contextlib.contextmanager
    def fake_serve(spec, journal, workdir, address):
        served.append((spec.host, spec.served_at, address))
        yield FakeTarget(spec)

    monkeypatch.setattr(agent_mod, "serve_target", fake_serve)
    found, servers = two_agents
    exp, wls = _hosts_spec(
        tmp_path,
        devices=[{"type": "remote", "host": "b", "size": "64MiB"}],
        placement=["a"],
        loads=[{"name": "one", "containers": 1}],
        repetitions=2,
    )
    trials, skipped = expand(exp, wls)
    ex = HostTrials(found, lost_after_s=2, poll_s=0.05)
    summary = run_experiment(exp, wls, trials, skipped, tmp_path / "out", host={"kernel": "m"}, executor=ex)
    assert summary.exit_code == 0
    assert served == [("b", None, "127.0.0.1")]  # served once for the run, for both repetitions
    for r in load_results(tmp_path / "out"):
        assert r.status == "ok"
        assert r.trial["device"]["host"] == "b" and r.trial["device"]["served_at"] is None  # the identity
        assert r.hosts["b"]["role"] == "storage" and r.hosts["b"]["served_at"] == "127.0.0.1:10809/0a1b2c3d"
        assert r.hosts["b"]["moved"]["nbdkit"]["read_bytes"] == 64 << 20
        assert r.hosts["b"]["moved"]["vdz"]["read_bytes"] == 64 << 20
        assert set(r.metrics["hosts"]) == {"a"}  # the instances ran on a only
    client_devices = [e for e in servers[0].agent.registries.devices["remote"].events if e[0] == "device+"]
    assert client_devices  # host a built the client of the served device


def test_the_storage_hosts_bytes_decide_the_cache_flag():
    from strata.hosts.storage import Storage
    from strata.results.flags import Flag, Judgement
    from strata.results.validity import cache_below

    def judge_cache(flag: dict, s: Storage) -> dict:
        return cache_below(Judgement.from_json(Flag.CACHE, flag), s.moved(), s.host).to_json()

    def storage(read_moved: int) -> Storage:
        s = Storage("b", None, "r", "t", "127.0.0.1:1", {})
        s.samples = {
            "ready": {"target_io": {"read_bytes": 0}, "disks": {"vdz": {"read_sectors": 0, "write_sectors": 0}}},
            "done": {
                "target_io": {"read_bytes": read_moved},
                "disks": {"vdz": {"read_sectors": read_moved // 512, "write_sectors": 0}},
            },
        }
        return s

    flag = {"suspect": False, "reason": "every layer moved the workload's bytes", "evidence": {}}
    flag["evidence"] = {"read_workload_bytes": 256 << 20, "per_disk": {"a:loop0": {"read_bytes": 256 << 20}}}
    ok = judge_cache(flag, storage(250 << 20))
    assert ok["suspect"] is False and ok["evidence"]["per_disk"]["b:nbdkit"]["read_share"] == pytest.approx(
        0.9766, 1e-3
    )
    cached = judge_cache(flag, storage(16 << 20))
    assert cached["suspect"] is True and "storage host b's nbdkit moved 16 MiB (6%)" in cached["reason"]
    buffered = {"suspect": False, "expected": True, "reason": "buffered I/O", "evidence": {}}
    assert judge_cache(buffered, storage(0)) == buffered  # the page cache is part of what buffered I/O measures
    unsampled = Storage("b", None, "r", "t", "x:1", {})
    assert judge_cache(flag, unsampled) == flag


def test_the_agent_imports_only_what_its_image_holds():
    """Regression: the agent image holds strata's code and the Python packages deploy.PYTHON_PACKAGES names,
    not numpy, matplotlib or pyarrow. An import chain that reached numpy (the experiment's model importing
    the analysis) made every agent die at its start: `did not answer ... Connection refused`."""
    import subprocess
    import sys

    from strata.hosts.deploy import PYTHON_PACKAGES

    blocked = [m for m in ("numpy", "matplotlib", "pyarrow") if m not in PYTHON_PACKAGES]
    probe = (
        f"import sys\nfor m in {blocked!r}:\n    sys.modules[m] = None\nimport strata.hosts.main, strata.hosts.agent\n"
    )
    cp = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr[-2000:]
