"""The ycsb workload across hosts without Cassandra or a Swarm: the parse of several hosts' parts as one
trial (captured YCSB output), the barrier at the measured phase, and what the agent image holds for it."""

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from strata.hosts.agentimage import with_workloads, workload_types
from strata.hosts.part import BarrierRunning, Part
from strata.instances import ImageSpec, InstanceOutput
from strata.workloads.base import rendezvous
from strata.workloads.ycsb import jars, metrics
from strata.workloads.ycsb.params import YcsbParams

DATA = Path(__file__).parents[1] / "data" / "ycsb" / "0.17.0"


def _part_art(root: Path, clients: list[str], ready_s: float) -> Path:
    """One host's part artifacts: captured real client output as its measured run, one node."""
    for name in clients:
        shutil.copytree(DATA / "run-a-dataintegrity", root / "ycsb" / "run" / name)
    (root / "inst-0").mkdir(parents=True)
    record = {
        "databases": len({c.split("-")[0] for c in clients}),
        "nodes": 1,
        "phases": {
            "run": {
                "wall_s": 20.0,
                "clients": [f"ycsb/run/{c}" for c in clients],
                "client_cpu_s": [1.5] * len(clients),
                "client_cpu_share": 0.2,
            }
        },
        "page_cache_bytes": 1 << 30,
        "node_ready_s": [ready_s] * len({c.split("-")[0] for c in clients}),
    }
    (root / "ycsb" / "clients.json").write_text(json.dumps(record))
    return root


def _outputs(*arts: Path) -> list[InstanceOutput]:
    outs = []
    for a in arts:
        for d in sorted(a.glob("inst-*")):
            outs.append(InstanceOutput(len(outs), d, 0, "", 1.0, 2.0))
    return outs


def test_two_hosts_parts_parse_as_one_trial(tmp_path):
    """The outputs of two hosts' parts: throughput summed, histograms merged, databases host after host."""
    a = _part_art(tmp_path / "hosts" / "a", ["db0-c0"], 11.0)
    b = _part_art(tmp_path / "hosts" / "b", ["db0-c0"], 22.0)
    one = metrics.parse(YcsbParams(), _outputs(a)).metrics
    both = metrics.parse(YcsbParams(), _outputs(a, b))
    m = both.metrics
    assert m["throughput_ops_s"] == pytest.approx(2 * one["throughput_ops_s"])
    assert m["databases"] == pytest.approx([one["databases"][0]] * 2)  # db0 of a, then db0 of b
    for op, lat in one["latency"].items():  # the same histogram from each host: twice the count, same p99
        assert m["latency"][op]["n"] == 2 * lat["n"]
        assert m["latency"][op]["p99_us"] == lat["p99_us"]
    assert m["operations"]["READ"] == 2 * one["operations"]["READ"]
    assert m["node_ready_s"] == [11.0, 22.0]
    run = m["clients"]["run"]
    assert run["clients"] == ["a/ycsb/run/db0-c0", "b/ycsb/run/db0-c0"] and run["client_cpu_s"] == [1.5, 1.5]
    assert m["cache"]["data_set_bytes"] == 2 * one["cache"]["data_set_bytes"]
    assert m["cache"]["page_cache_bytes"] == 2 << 30  # each host's page cache
    assert len(both.windows) == 2 and all(both.windows)  # one measured window per client, for the sync check


def test_one_host_parse_is_unchanged(tmp_path):
    a = _part_art(tmp_path / "art", ["db0-c0", "db1-c0"], 5.0)
    m = metrics.parse(YcsbParams(), _outputs(a)).metrics
    assert m["clients"]["run"]["clients"] == ["ycsb/run/db0-c0", "ycsb/run/db1-c0"]
    assert len(m["databases"]) == 2


class _Inner:
    def __init__(self):
        self.calls: list[str] = []

    def ready(self, timeout_s):
        self.calls.append("ready")

    def go(self):
        self.calls.append("go")
        return time.time()


def _go_later(part: Part, after_s: float) -> threading.Thread:
    def later():
        part.wait_state("ready", 5)
        time.sleep(after_s)
        part.go(time.time())

    t = threading.Thread(target=later)
    t.start()
    return t


def test_a_measure_barrier_releases_the_instances_at_once_and_meets_before_measuring():
    part, inner = Part("p", "a", go_timeout_s=5), _Inner()
    running = BarrierRunning(inner, part, at_measure=True)
    running.ready(1)
    running.go()  # no manager's go yet: the servers start at once
    assert inner.calls == ["ready", "go"] and part.state == "starting"
    t = _go_later(part, 0.1)
    rendezvous(running)  # here the part says ready and waits for the go
    t.join()
    assert part.state == "running" and part.start_at is not None
    assert part.times["ready"] <= part.times["running"]


def test_a_start_barrier_waits_at_ready_and_rendezvous_is_nothing():
    part, inner = Part("p", "a", go_timeout_s=5), _Inner()
    running = BarrierRunning(inner, part)
    t = _go_later(part, 0.1)
    running.ready(1)
    t.join()
    assert part.state == "ready"
    running.go()
    assert part.state == "running" and inner.calls == ["ready", "go"]
    rendezvous(running)  # a tool workload: its barrier was at the start
    rendezvous(inner)  # a local run's instances have none
    assert part.state == "running"


def test_the_agent_image_holds_java_and_the_jars_only_for_ycsb(tmp_path, monkeypatch):
    trees = (("/opt/strata/jars/cassandra-x", str(tmp_path)),)
    monkeypatch.setattr(jars, "agent_trees", lambda: trees)
    base = ImageSpec("agent-tools", packages=("python3", "fio"), trees=(("/opt/strata/site", "/x"),))

    class Exp:
        workloads = [{"type": "fio"}, {"type": "ycsb", "records": 10}, {"type": "ycsb"}]

    assert workload_types(Exp) == ["fio", "ycsb"]
    grown = with_workloads(base, workload_types(Exp))
    assert "openjdk-17-jre-headless" in grown.packages and set(trees) <= set(grown.trees)
    assert grown.name == base.name and set(base.trees) <= set(grown.trees)
    assert with_workloads(base, ["fio"]) == base  # the plain agent image (its tag unchanged)
    assert with_workloads(base, ["fio", "filebench", "null"]).key() == base.key()


def test_the_jars_in_the_agent_image_are_used_before_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(jars, "JARS_IN_AGENT", tmp_path / "agent")
    assert jars.cassandra_home() == tmp_path / "cache" / f"cassandra-{jars.CASSANDRA_VERSION}"
    pre = tmp_path / "agent" / f"cassandra-{jars.CASSANDRA_VERSION}"
    pre.mkdir(parents=True)
    (pre / jars.MANIFEST).write_text(json.dumps({"jars": {}}))
    assert jars.cassandra_home() == pre
    assert jars.ensure_cassandra() == pre  # nothing to build: no Maven on an agent
    ycsb = tmp_path / "agent" / jars.ycsb_rel()
    ycsb.mkdir(parents=True)
    (ycsb / jars.MANIFEST).write_text(json.dumps({"jars": {}}))
    assert jars.ycsb_home() == ycsb == jars.ensure_ycsb()
