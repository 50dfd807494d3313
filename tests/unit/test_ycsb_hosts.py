"""The ycsb workload across hosts without Cassandra or a Swarm: the parse of several hosts' parts as one
trial (captured YCSB output), the barrier at the measured phase, what the agent image holds for it,
and the placement advice measured from synthetic results placed on one host and on two."""

import hashlib
import json
import shutil
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.core.errors import TrialFailure  # noqa: E402
from strata.core.instances import ImageSpec, InstanceOutput  # noqa: E402
from strata.hosts.agentimage import with_workloads, workload_types  # noqa: E402
from strata.hosts.part import BarrierRunning, Part  # noqa: E402
from strata.report import csv as report_csv  # noqa: E402
from strata.workloads.base import rendezvous  # noqa: E402
from strata.workloads.ycsb import jars  # noqa: E402
from strata.workloads.ycsb.params import YcsbParams  # noqa: E402
from strata.workloads.ycsb.plugin import YCSB  # noqa: E402

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
    one = YCSB.parse(YcsbParams(), _outputs(a)).metrics
    both = YCSB.parse(YcsbParams(), _outputs(a, b))
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
    m = YCSB.parse(YcsbParams(), _outputs(a)).metrics
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


def test_an_abort_while_a_host_waits_before_measuring_fails_its_part():
    """Another host's part failed while its nodes started: this host's part stops at the rendezvous."""
    part = Part("p", "a", go_timeout_s=5)
    running = BarrierRunning(_Inner(), part, at_measure=True)
    running.ready(1)
    running.go()
    threading.Timer(0.1, part.abort, args=("the part on host b failed",)).start()
    with pytest.raises(TrialFailure) as e:
        rendezvous(running)
    assert e.value.category == "host_lost" and "host b" in str(e.value)
    assert part.state == "ready"  # said ready, never ran


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


# ---- the placement advice: measured when the results hold it ------------------------------------


def _ycsb_result(placement: dict, rep: int, ops_s: float, p99_us: float, containers: int = 2) -> dict:
    """A stored ycsb result placed on hosts (synthetic): its throughput and read p99."""
    r = make_result(fs="ext4", runtime="docker", path="volume", containers=containers, rep=rep, value=ops_s)
    name = "spread" if len(placement) > 1 else "".join(f"{h}{n}" for h, n in placement.items())
    r["trial"]["workload"] = {"type": "ycsb", "name": "ycsb-a", "workload": "a", "records": 1000}
    r["trial"]["placement"] = {"name": name, "instances": placement, "nodes": {}}
    r["labels"].update(workload="ycsb-a", placement=name)
    r["trial_id"] = hashlib.sha256(repr((placement, rep, ops_s)).encode()).hexdigest()[:16]
    lat = {"n": 100, "mean": p99_us * 300, "p99": p99_us * 1000}
    r["metrics"] = {
        "kind": "ycsb",
        "primary": {"value": ops_s, "unit": "ops/s", "metric": "throughput_ops_s", "series": None},
        "read": {"iops": ops_s / 2, "lat_ns": lat},
        "write": {"iops": ops_s / 2 - 1, "lat_ns": lat},
    }
    r["flags"]["cache"] = {"suspect": False, "expected": True}
    return r


def _results(one: tuple, spread: tuple, p99s=(8000.0, 5000.0)) -> list[dict]:
    rs = [_ycsb_result({"a": 2}, i, v, p99s[0]) for i, v in enumerate(one)]
    return rs + [_ycsb_result({"a": 1, "b": 1}, i, v, p99s[1]) for i, v in enumerate(spread)]


def test_measured_placements_replace_the_prediction():
    a = analyse(_results((1000, 1020, 980), (1800, 1850, 1750)))
    (m,) = a.placements
    assert m.source == "measured" and m.instances == 2 and m.one_host.name == "a2"
    (sp,) = m.spread
    assert sp.hosts == 2 and sp.aggregate.mean == pytest.approx(1800) and sp.aggregate.ci_low is not None
    assert sp.vs_one_host.rel == pytest.approx(0.8) and m.verdict(sp) == "gains"
    assert m.one_host.p99_ns.mean == pytest.approx(8e6) and sp.p99_ns.mean == pytest.approx(5e6)
    text = m.text()
    assert "(measured)" in text and "predicted" not in text
    assert "1.80x [" in text and "read p99 5.00 ms" in text and "gains" in text
    assert a.placement_advice == [m]  # no containers sweep tells it already


def test_measured_placement_ties_loses_and_needs_repetitions():
    (m,) = analyse(_results((1000, 1010, 990), (1001, 1011, 991))).placements
    assert m.verdict(m.spread[0]) == "tied"
    (m,) = analyse(_results((1000, 1010, 990), (600, 610, 590))).placements
    assert m.verdict(m.spread[0]) == "loses"
    (m,) = analyse(_results((1000,), (1500,))).placements  # one repetition each: no interval
    assert m.verdict(m.spread[0]) == "undecided" and "repeat each placement" in m.text()
    assert "[" not in m.entry_text(m.one_host)  # no interval without repetitions
    (m,) = analyse(_results((1000, 400, 1600), (1500, 700, 2300))).placements  # noisy: the intervals overlap
    assert m.verdict(m.spread[0]) == "undecided" and "do not decide at n=3" in m.text()
    assert m.one_host.aggregate.ci_low < 0 and "[0.00 ops/s," in m.entry_text(m.one_host)  # shown from zero


def test_no_measured_placement_without_both_sides():
    only_one_host = [_ycsb_result({"a": 2}, i, v, 1000.0) for i, v in enumerate((1000, 1010))]
    assert analyse(only_one_host).placements == []
    no_hosts = [_ycsb_result({"a": 2}, 0, 1000, 1000.0)]
    del no_hosts[0]["trial"]["placement"]
    assert analyse(no_hosts).placements == []


def test_a_containers_advice_says_measured_when_its_placement_was_measured():
    """The containers curve on one host predicts the placement; a measured placement replaces it."""
    curve = [
        r
        for n, v in ((1, 600), (2, 1000))
        for r in [make_result(fs="ext4", runtime="docker", path="volume", containers=n, rep=i, value=v) for i in (0, 1)]
    ]
    (c,) = analyse(curve).containers
    assert "(predicted from this curve)" in c.text() and c.measured is None
    placed = []
    for n, v in ((1, 600), (2, 1000)):
        for i in (0, 1):
            r = make_result(fs="ext4", runtime="docker", path="volume", containers=n, rep=i, value=v)
            r["trial"]["placement"] = {"name": f"a{n}", "instances": {"a": n}, "nodes": {}}
            placed.append(r)
    for i, v in enumerate((1700, 1750)):
        r = make_result(fs="ext4", runtime="docker", path="volume", containers=2, rep=i, value=v)
        r["trial"]["placement"] = {"name": "spread", "instances": {"a": 1, "b": 1}, "nodes": {}}
        r["trial_id"] += "s"
        placed.append(r)
    a = analyse(placed)
    told = [c for c in a.containers if c.measured is not None]
    assert told and all("(measured)" in c.text() and "predicted" not in c.text() for c in told)
    assert a.placement_advice == []  # told by the containers advice, not twice


def test_the_csv_and_terminal_reports_carry_the_measured_placement():
    a = analyse(_results((1000, 1020, 980), (1800, 1850, 1750)))
    files = report_csv.render(SimpleNamespace(analysis=a, figures=[], tables=[]))
    rows = files["placements.csv"].decode().splitlines()
    assert rows[0].startswith("workload,load,stack,instances,placement") and len(rows) == 3
    assert ",spread,2," in rows[2] and rows[2].endswith(",gains,measured")
    assert "placements.csv" not in report_csv.render(SimpleNamespace(analysis=analyse([]), figures=[], tables=[]))
