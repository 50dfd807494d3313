"""The ycsb workload plugin without Cassandra: its spec and errors, its instances and their node
scripts, the metrics from captured YCSB output, the server hook with a fake Running, and
`containers: auto` scaling through the whole pipeline (fake plugins, the null workload)."""

import dataclasses
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from strata.core.errors import SpecErrors, TrialFailure
from strata.core.instances import InstanceOutput, Target
from strata.core.params import Limits, Load
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.experiment.plan import resolve
from strata.results.store import ResultStore, load_results
from strata.run.progress import Progress
from strata.run.runner import run_experiment
from strata.run.scaling import FAILING, MAX, PEAK, Series
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import MeasureContext
from strata.workloads.ycsb import client, metrics, parse, script, server
from strata.workloads.ycsb.params import YcsbParams
from strata.workloads.ycsb.plugin import VM_REASON

from .fakes import fake_registries

DATA = Path(__file__).parents[1] / "data" / "ycsb" / "0.17.0"
GiB = 1 << 30
YCSB = WORKLOADS["ycsb"]


def spec(tmp_path, workload=None, loads=None, runtimes=("docker",), **over):
    doc = {
        "name": "y",
        "workdir": str(tmp_path / "work"),
        "devices": ["loop"],
        "filesystems": ["ext4"],
        "runtimes": list(runtimes),
        "paths": ["volume"] if "docker" in runtimes else ["bind"],
        "workloads": [{"ycsb": workload or {}}],
    }
    if loads is not None:
        doc["loads"] = loads
    doc.update(over)
    return parse_spec(doc, base_dir=tmp_path)


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))


# ---- the spec -------------------------------------------------------------------------


def test_defaults_and_name():
    p = YCSB.parse_params({"type": "ycsb"}, Path("."))
    assert (p.workload, p.records, p.runtime, p.threads, p.warmup, p.target) == ("a", 10000, 60, 16, 30, None)
    assert p.name == "ycsb-a"
    p = YCSB.parse_params(
        {
            "type": "ycsb",
            "workload": "D",
            "profile": "read",
            "target": 500,
            "cluster": {"nodes": 3, "replication_factor": 2},
        },  # noqa: E501
        Path("."),
    )
    assert p.name == "ycsb-d-read-t500-1x3n-rf2" and p.nodes == 3


def test_target_list_is_a_sweep_and_none_is_flat_out(tmp_path):
    exp, wls = spec(tmp_path, {"target": [1000, 2000, "none"]})
    assert [w.target for w in wls] == [1000, 2000, None]
    assert len({w.name for w in wls}) == 3


def test_a_relative_target_is_a_share_of_the_peak_and_sweeps(tmp_path):
    exp, wls = spec(tmp_path, {"profile": "mixed", "target": ["20%", "40%", 1000, "none"]})
    assert [(w.target, w.target_share) for w in wls] == [(None, 0.2), (None, 0.4), (1000, None), (None, None)]
    assert [w.name for w in wls] == ["ycsb-a-mixed-t20pct", "ycsb-a-mixed-t40pct", "ycsb-a-mixed-t1000", "ycsb-a-mixed"]
    assert wls[1].peak_s == 30 and YcsbParams(target_share=0.1, runtime=5).peak_s == 5
    # without a relative target the stored workload (hashed into the trial id) has no new key
    assert "target_share" not in wls[2].model_dump() and wls[1].model_dump()["target_share"] == 0.4
    assert YcsbParams.model_validate(wls[1].model_dump()) == wls[1]


@pytest.mark.parametrize("bad, says", [("0%", "above 0%"), ("120%", "at most 100%"), ("half%", "a number and %")])
def test_a_bad_share_is_refused_with_its_key_path(tmp_path, bad, says):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {"target": bad})
    assert "workloads[0].ycsb" in str(e.value) and says in str(e.value)


def test_the_peak_runs_flat_out_and_the_run_offers_its_share(tmp_path):
    p = YcsbParams(threads=16, clients=2, target="40%", runtime=60, warmup=5, profile="read")
    db = server.layout(p, Load())[0]
    assert [(r.target_ops_s, r.runtime_s) for r in server.client_runs("warmup", p, db, tmp_path)] == [(None, 5)] * 2
    assert [(r.target_ops_s, r.runtime_s) for r in server.client_runs("peak", p, db, tmp_path)] == [(None, 30)] * 2
    assert [r.target_ops_s for r in server.client_runs("run", p, db, tmp_path, rate=900)] == [450, 450]
    art = _captured_trial(tmp_path, ["db0-c0", "db1-c0"])
    dirs = sorted((art / "ycsb" / "run").iterdir())
    peak = metrics.parse_trial(YcsbParams(), art).metrics["throughput_ops_s"]  # the same clients, as a run
    got = server.offered(p, 2, dirs)
    assert got["share"] == 0.4 and got["peak_ops_s"] == pytest.approx(peak, rel=1e-3)
    assert got["target_ops_s"] == round(0.4 * peak / 2)
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(TrialFailure, match="no operations"):
        server.offered(p, 1, [empty])


def test_a_relative_target_is_kept_at_smoke_scale_and_stored_with_the_metrics(tmp_path):
    assert YCSB.smoke({"target": ["20%", "40%", "80%", "none"]})["target"] == ["20%", "80%", "none"]
    art = _captured_trial(tmp_path, ["db0-c0"])
    record = json.loads((art / "ycsb" / "clients.json").read_text())
    record["offered"] = {"share": 0.4, "peak_ops_s": 1500.0, "target_ops_s": 600}
    (art / "ycsb" / "clients.json").write_text(json.dumps(record))
    assert metrics.parse_trial(YcsbParams(), art).metrics["offered"] == record["offered"]
    merged = metrics.merged_record([record, record], [art, art])
    assert merged["offered"] == {"share": 0.4, "peak_ops_s": 3000.0, "target_ops_s": 600}


def test_every_spec_error_at_once_with_its_key_path(tmp_path):
    with pytest.raises(SpecErrors) as e:
        spec(
            tmp_path,
            {"workload": "g", "records": 0, "threads": 5000, "cluster": {"nodes": 2, "replication_factor": 3}},
        )
    text = str(e.value)
    assert "workloads[0].ycsb.workload" in text and "unknown YCSB workload 'g'" in text
    assert "workloads[0].ycsb.records" in text and "workloads[0].ycsb.threads" in text
    assert "workloads[0].ycsb.cluster" in text and "replication_factor 3 is above the node count 2" in text


def test_operations_or_runtime_not_both(tmp_path):
    with pytest.raises(SpecErrors, match="not both"):
        spec(tmp_path, {"operations": 100, "runtime": 10})


def test_own_properties_file(tmp_path):
    (tmp_path / "mine.properties").write_text("readproportion=1\n")
    exp, wls = spec(tmp_path, {"workload": "file:mine.properties"})
    assert wls[0].file == str((tmp_path / "mine.properties").resolve()) and wls[0].name == "ycsb-file-mine.properties"
    with pytest.raises(SpecErrors, match="no YCSB workload properties file"):
        spec(tmp_path, {"workload": "file:missing.properties"})


def test_memory_limit_below_a_node_is_a_plan_error_naming_the_load(tmp_path):
    exp, wls = spec(tmp_path, {}, loads=[{"containers": 2, "limits": {"memory": "512M"}}])
    with pytest.raises(SpecErrors) as e:
        resolve(exp, wls, {})
    assert "loads[0].limits.memory" in str(e.value) and "at least 1024 MiB" in str(e.value)


def test_vm_runtime_is_impossible_with_the_reason(tmp_path):
    exp, wls = spec(tmp_path, {}, runtimes=("vm",), paths=["bind"])
    trials, skipped = expand(exp, wls)
    assert trials == [] and skipped[0].reason == VM_REASON
    assert YCSB.impossible(wls[0], RUNTIMES["docker"]) is None


# ---- instances -------------------------------------------------------------------------


def test_instances_are_every_node_of_every_database():
    p = YcsbParams(clusters=2, cluster={"nodes": 3, "replication_factor": 2})
    assert YCSB.instances(p, Load(containers=2)) == 12
    dbs = server.layout(p, Load(containers=2))
    assert len(dbs) == 4 and dbs[1].instances == [3, 4, 5]
    assert dbs[1].hosts == ["127.0.2.1", "127.0.2.2", "127.0.2.3"]


def test_node_command_runs_the_node_on_the_path_under_test(monkeypatch, tmp_path):
    home = tmp_path / "cassandra"
    (home / "lib").mkdir(parents=True)
    (home / "MANIFEST.json").write_text(json.dumps({"jars": ["jamm-0.4.0.jar", "x.jar"]}))
    monkeypatch.setattr("strata.workloads.ycsb.jars.ensure_cassandra", lambda *a: home)
    p = YcsbParams(cluster={"nodes": 2, "replication_factor": 2})
    load = Load(containers=1, limits=Limits(memory=2 * GiB))
    container = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync")
    argv = YCSB.command(p, load, container, 1)
    text = argv[2]
    assert argv[:2] == ["sh", "-c"]
    assert "- /data/node-1/data" in text and "listen_address: 127.0.1.2" in text and "127.0.1.1:7000" in text
    assert "while [ ! -e /strata-sync/start-1 ]" in text  # the second node waits for its turn
    assert "-Xmx1024m" in text and "/opt/cassandra/lib/jamm-0.4.0.jar" in text
    assert "start-0" not in YCSB.command(p, load, container, 0)[2]
    native = Target("dir", "/mnt/strata-data", "/res/inst-0", host_tools=True, sync_dir="/res/sync")
    text = YCSB.command(p, Load(), native, 0)[2]
    assert f"{home}/lib/jamm-0.4.0.jar" in text and "-Xmx1024m" in text and "/res/sync/stop" in text


def test_node_script_stops_on_the_stop_file_and_reports_an_early_end(tmp_path):
    """The script around the JVM, with `sleep` standing in for java (sh is real)."""
    out, sync = tmp_path / "out", tmp_path / "sync"
    out.mkdir()
    sync.mkdir()
    run = _script_with(tmp_path, out, sync, "sleep 30")
    p = subprocess.Popen(["sh", "-c", run])
    (sync / "stop").touch()
    assert p.wait(timeout=40) == 0
    (sync / "stop").unlink()
    dying = _script_with(tmp_path, out, sync, "sh -c 'echo dying; exit 7'")
    p = subprocess.run(["sh", "-c", dying], capture_output=True, text=True, timeout=30)
    assert p.returncode == 7 and "exited with code 7 before it was asked to stop" in p.stderr and "dying" in p.stderr


def _script_with(tmp_path, out, sync, fake_java: str) -> str:
    from strata.workloads.ycsb import cassandra

    cfg = cassandra.cluster_configs(
        0, 1, data_dir=lambda i: str(tmp_path / "data"), conf_dir=lambda i: str(out / "conf"), lib_dir="/lib"
    )[0]
    text = script.node_script(cfg, ["jamm-0.4.0.jar"], str(out), str(sync), None)
    java_line = next(ln for ln in text.splitlines() if ln.startswith("java "))
    return text.replace(java_line.split(" >", 1)[0], fake_java)


# ---- the measured phase with a fake Running ---------------------------------------------


class FakeRunning:
    cgroups = [{}]

    def __init__(self, dies_after: int | None = None):
        self.checks, self.dies_after = 0, dies_after

    def ready(self, timeout_s):
        pass

    def go(self):
        return 0.0

    def check(self, watch=None):
        self.checks += 1
        if self.dies_after is not None and self.checks > self.dies_after:
            raise TrialFailure("instance_died", "instance 0 ended with code 137 while it should have run", "")

    def wait(self, timeout_s, watch=None):
        return [InstanceOutput(0, self.art / "inst-0", 0, "")]

    def stop(self):
        pass


def test_a_node_that_dies_while_starting_fails_with_its_log(tmp_path, monkeypatch):
    (tmp_path / "inst-0").mkdir()
    (tmp_path / "inst-0" / "node.log").write_text("INFO starting\nERROR disk on fire\n")
    monkeypatch.setattr("strata.workloads.ycsb.cassandra.cql_port_open", lambda *a, **k: False)
    running = FakeRunning(dies_after=1)
    ctx = MeasureContext(running, None, 10, None, tmp_path)
    with pytest.raises(TrialFailure) as e:
        server.wait_node(ctx, 0, "127.0.1.1", 30)
    assert e.value.category == "instance_died" and "disk on fire" in e.value.stderr


def test_a_node_not_up_in_time_is_not_ready_with_its_log(tmp_path, monkeypatch):
    (tmp_path / "inst-0").mkdir()
    (tmp_path / "inst-0" / "node.log").write_text("INFO still compacting\n")
    monkeypatch.setattr("strata.workloads.ycsb.cassandra.cql_port_open", lambda *a, **k: False)
    ctx = MeasureContext(FakeRunning(), None, 10, None, tmp_path)
    with pytest.raises(TrialFailure) as e:
        server.wait_node(ctx, 0, "127.0.1.1", 0.3)
    assert e.value.category == "not_ready" and "still compacting" in e.value.stderr


def test_client_runs_split_threads_and_target_per_database(tmp_path):
    p = YcsbParams(threads=16, clients=2, target=1000, runtime=20, warmup=5, profile="mixed")
    db = server.layout(p, Load())[0]
    runs = server.client_runs("run", p, db, tmp_path)
    assert [(r.threads, r.target_ops_s, r.runtime_s) for r in runs] == [(8, 500, 20), (8, 500, 20)]
    assert runs[0].extra["readproportion"] == "0.75" and not runs[0].create_schema
    (load,) = server.client_runs("load", p, db, tmp_path)
    assert load.phase == "load" and load.threads == 16 and load.create_schema
    assert server.client_runs("warmup", p, db, tmp_path)[0].runtime_s == 5


# ---- metrics from captured YCSB output --------------------------------------------------


def _captured_trial(tmp_path, runs: list[str], captured: str = "run-a-dataintegrity") -> Path:
    """A trial's artifact dir holding captured real client outputs (tests/data/ycsb) as its run."""
    art = tmp_path / "art"
    dirs = []
    for name in runs:
        d = art / "ycsb" / "run" / name
        shutil.copytree(DATA / captured, d)
        dirs.append(str(d.relative_to(art)))
    (art / "inst-0").mkdir()
    record = {
        "databases": len({r.split("-")[0] for r in runs}),
        "phases": {"run": {"wall_s": 20.0, "clients": dirs, "client_cpu_s": [1.0] * len(dirs)}},
        "page_cache_bytes": 1 << 30,
        "node_ready_s": [12.0],
    }
    (art / "ycsb" / "clients.json").write_text(json.dumps(record))
    return art


def test_metrics_merge_histograms_across_databases(tmp_path):
    art = _captured_trial(tmp_path, ["db0-c0", "db1-c0"])
    one = metrics.parse_trial(YcsbParams(), _captured_trial(tmp_path / "one", ["db0-c0"]))
    two = metrics.parse_trial(YcsbParams(), art)
    assert len(two.metrics["databases"]) == 2
    assert two.metrics["throughput_ops_s"] == pytest.approx(sum(two.metrics["databases"]))
    for op, lat in one.metrics["latency"].items():  # the same histogram twice: same percentiles, twice the count
        assert two.metrics["latency"][op]["n"] == 2 * lat["n"]
        assert two.metrics["latency"][op]["p99_us"] == lat["p99_us"]
    assert two.metrics["primary"]["series"] == metrics.SERIES and two.series[metrics.SERIES]
    assert two.metrics["read"]["lat_ns"]["p99"] is not None
    assert two.metrics["cache"]["page_cache_over_data_set"] > 0


# ---- containers: auto -------------------------------------------------------------------


class _Proto:
    load = Load(containers=1, scale="auto", max_containers=8)


def test_auto_scaling_stops_after_two_falls_and_keeps_the_peak():
    s = Series(_Proto())
    curve = {1: 100, 2: 180, 3: 240, 4: 230, 5: 260, 6: 250, 7: 200}
    n, seen = 1, []
    while n is not None:
        seen.append(n)
        s.values[n] = [curve[n]]
        n = s.next_count(n)
    assert seen == [1, 2, 3, 4, 5, 6, 7] and s.stopped == PEAK and s.peak == 5  # one fall (4) is not enough
    assert s.report()["peak"] == 5 and s.report()["counts"] == seen


def test_auto_scaling_stops_at_the_maximum_or_when_a_count_fails():
    s = Series(_Proto())
    for n in range(1, 9):
        s.values[n] = [n * 10.0]
    assert s.next_count(8) is None and s.stopped == MAX and s.peak == 8
    s = Series(_Proto())
    s.values[1] = [10.0]
    assert s.next_count(1) == 2
    s.failures[2] = 1
    assert s.next_count(2) is None and s.stopped == FAILING


def test_containers_auto_runs_through_the_pipeline(tmp_path):
    exp, wls = parse_spec(
        {
            "name": "auto",
            "workdir": str(tmp_path / "work"),
            "devices": ["loop"],
            "filesystems": ["xfs"],
            "runtimes": ["docker"],
            "paths": ["volume"],
            "workloads": [{"null": {"iops": 100}}],
            "loads": [{"containers": "auto", "max_containers": 3}],
        }
    )
    trials, skipped = expand(exp, wls)
    assert [t.load.containers for t in trials] == [1]
    s = run_experiment(
        exp,
        wls,
        trials,
        skipped,
        tmp_path / "out",
        host={},
        registries=fake_registries(tmp_path),
        progress=Progress(1, [0.1], quiet=True),
    )
    results = load_results(tmp_path / "out")
    assert s.ok == 3 and sorted(r.trial["load"]["containers"] for r in results) == [1, 2, 3]
    assert {r.labels["load"] for r in results} == {"j1xqd1x1c", "j1xqd1x2c", "j1xqd1x3c"}
    run = json.loads(next((tmp_path / "out" / "runs").glob("*.json")).read_text())
    (series,) = run["scaling"].values()
    assert series == {"counts": [1, 2, 3], "throughput": [100.0, 200.0, 300.0], "peak": 3, "stopped": MAX}
    assert ResultStore(tmp_path / "out").count() == 3


def test_auto_is_impossible_natively(tmp_path):
    exp, wls = spec(tmp_path, {}, loads=[{"containers": "auto"}], runtimes=("native",))
    trials, skipped = expand(exp, wls)
    assert trials == [] and "runs one" in skipped[0].reason


def test_fixed_loads_keep_their_stored_form():
    from strata.experiment.expand import load_dump

    assert "scale" not in load_dump(Load(containers=2)) and load_dump(Load(scale="auto"))["scale"] == "auto"


# ---- limit presets (003 Table 2) ---------------------------------------------------------


@pytest.mark.parametrize(
    "preset,expected",
    [
        ("none", {}),
        ("CPU", {"cpus": 6.0}),
        ("MEM", {"memory": 6 * GiB}),
        ("BW", {"read_bps": 400_000_000, "write_bps": 400_000_000}),
        ("CPU+MEM", {"cpus": 6.0, "memory": 6 * GiB}),
        ("ALL", {"cpus": 6.0, "memory": 6 * GiB, "read_bps": 400_000_000, "write_bps": 400_000_000}),
    ],
)
def test_presets_give_the_papers_table_on_the_papers_host(preset, expected):
    """003's server: 48 cores, 48 GiB, 3.2 GB/s, divided by eight containers: Table 2."""
    from strata.experiment import presets

    load = Load.model_validate({"containers": 4, "limits": preset})
    resolved, record = presets.resolve(load, 48, 48 * GiB, 3_200_000_000)
    assert resolved.limits.model_dump(exclude_none=True, exclude={"share"}) == expected
    assert record["preset"] == preset and record["basis"]["cores"] == 48
    assert load.name == f"j1xqd1x4c-{preset}"


def test_explicit_values_override_a_preset_and_share_is_the_divisor():
    from strata.experiment import presets

    load = Load.model_validate({"limits": {"preset": "CPU+MEM", "share": 2, "memory": "3G"}})
    resolved, _ = presets.resolve(load, 2, 24 * GiB, None)
    assert (resolved.limits.cpus, resolved.limits.memory) == (1.0, 3 * GiB)


def test_presets_sweep_and_are_skipped_natively(tmp_path):
    loads = [{"containers": [1, 2], "limits": ["none", "MEM"]}]
    exp, wls = spec(tmp_path, {}, loads=loads, runtimes=("docker", "native"), paths=["bind"])
    trials, skipped = expand(exp, wls)
    names = sorted({(t.runtime.name, t.load.name) for t in trials})
    assert ("docker:overlay2", "j1xqd1x2c-MEM") in names and ("native", "j1xqd1-none") in names
    assert not any(t.runtime.name == "native" and t.load.limits.preset == "MEM" for t in trials)


# ---- Running.check on host processes (the native runtime) -----------------------------------


def test_host_processes_check_reports_an_instance_that_ended(tmp_path):
    from strata.core.instances import InstanceRequest
    from strata.stack.hostprocs import HostProcesses

    reqs = []
    for i, argv in enumerate((["sleep", "30"], ["sh", "-c", "echo gone >&2; exit 3"])):
        (tmp_path / f"i{i}").mkdir()
        reqs.append(InstanceRequest(i, argv, tmp_path / f"i{i}"))
    running = HostProcesses(reqs, None, sync_dir=tmp_path)
    running.ready(10)
    running.go()
    try:
        with pytest.raises(TrialFailure) as e:
            for _ in range(100):
                running.check(None)
                time.sleep(0.05)
        assert e.value.category == "instance_died" and "instance 1 ended with code 3" in str(e.value)
        assert "gone" in e.value.stderr
        with pytest.raises(TrialFailure, match="remote gone"):
            running.check(lambda: ("remote_lost", "remote gone"))
    finally:
        running.stop()


def test_a_mem_preset_below_a_node_on_this_host_is_a_plan_error(tmp_path):
    exp, wls = spec(tmp_path, {}, loads=[{"containers": 2, "limits": {"preset": "MEM", "share": 16}}])
    with pytest.raises(SpecErrors) as e:
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})  # 512 MiB each
    assert "loads[0].limits.memory" in str(e.value) and "preset MEM: 1/16 of this host" in str(e.value)
    resolve(exp, wls, {"cpus": 2, "memory_bytes": 24 * GiB})  # 1.5 GiB each: fine


def test_seconds_to_ready_count_from_the_launch(tmp_path):
    (tmp_path / "node.launched").write_text(f"{time.time() - 12.5:.3f}\n")
    from strata.workloads.server import lifecycle

    assert lifecycle.since_launch(tmp_path, 0.0) == pytest.approx(12.5, abs=1)
    assert lifecycle.since_launch(tmp_path / "missing", 3.0) == 3.0


@pytest.mark.parametrize(
    "said",
    [
        "Unable to contact any seeds: [/127.0.1.1:7000]",
        "java.lang.UnsupportedOperationException: Other bootstrapping/leaving/moving nodes detected, cannot "
        "bootstrap while cassandra.consistent.rangemovement is true",
    ],
)
def test_a_node_that_lost_a_join_race_is_started_again(tmp_path, said):
    """Regression (smoke runs of study 001 on a busy machine): node 2 of a three-node cluster ended with
    `Unable to contact any seeds` while the seed's gossip answered late, or saw the node before it still
    bootstrapping; the node script starts it again (at most twice), keeps each failed attempt's log, and the
    node then serves until it is stopped."""
    import os
    import subprocess
    import threading
    import time

    from strata.workloads.ycsb.cassandra import NodeConfig
    from strata.workloads.ycsb.script import node_script

    out, sync, fake = tmp_path / "out", tmp_path / "sync", tmp_path / "bin"
    for d in (out, sync, fake):
        d.mkdir()
    calls = tmp_path / "calls"
    # a JVM that finds no seed the first time, then runs until it is told to stop
    (fake / "java").write_text(
        "#!/bin/sh\necho x >>" + str(calls) + "\n"
        "if [ $(wc -l <" + str(calls) + ") -eq 1 ]; then\n"
        f"  echo '{said}'; exit 3\nfi\n"
        "echo started; while :; do sleep 0.1; done\n"
    )  # fmt: skip
    (fake / "java").chmod(0o755)
    cfg = NodeConfig(2, 3, "127.0.1.3", ("127.0.1.1",), "c", str(tmp_path / "data"), str(out / "conf"), "/lib")
    script = node_script(cfg, ["jamm-0.4.0.jar"], str(out), str(sync), None)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    p = subprocess.Popen(["sh", "-c", script], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while (not calls.exists() or len(calls.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    threading.Timer(0.5, lambda: (sync / "stop").touch()).start()
    assert p.wait(timeout=60) == 0, p.stderr.read()
    assert len(calls.read_text().split()) == 2
    assert said in (out / "node.log.failed-1").read_text()
    assert "started" in (out / "node.log").read_text()


def test_the_bandwidth_presets_measure_through_a_workload_that_probes_devices(monkeypatch):
    """Issue 33: the BW and ALL presets' device bandwidth comes from a registered `DeviceProbe` (fio's), once
    per device; with none registered, a clear error names the presets that need none."""
    from strata.core.errors import StrataError
    from strata.experiment import presets
    from strata.workloads import REGISTRY
    from strata.workloads.base import DeviceProbe

    assert isinstance(REGISTRY["fio"], DeviceProbe)
    calls = []

    class Probe:
        probe_words = "reads of {path}"

        def read_bps(self, device_path: str) -> int:
            calls.append(device_path)
            return 123

    monkeypatch.setattr(presets, "WORKLOADS", {"probe": Probe()})
    monkeypatch.setattr(presets, "_measured", {})
    assert presets.device_read_bps("/dev/x") == 123 and presets.device_read_bps("/dev/x") == 123
    assert calls == ["/dev/x"] and presets.measured_by("/dev/x") == "reads of /dev/x"
    monkeypatch.setattr(presets, "WORKLOADS", {})
    with pytest.raises(StrataError, match="CPU or MEM"):
        presets.device_read_bps("/dev/y")


def test_under_a_target_latency_is_timed_from_each_operations_intended_start(tmp_path):
    """Issue 56: a client at -target 400 with measurement.interval=both (captured: YCSB 0.17.0's own BasicDB with
    4 ms of simulated delay). The operations are counted once; `lat_ns` is timed from the intended start, which
    holds the throttle's queueing (coordinated omission), the time from the send beside it; YCSB's own summary
    gives the same p99 for each (hdr, exactly)."""
    captured = DATA / "run-a-target-intended"
    m = metrics.parse_trial(
        YcsbParams(target=400), _captured_trial(tmp_path, ["db0-c0"], "run-a-target-intended")
    ).metrics
    summary = parse.parse_summary((captured / "stdout.txt").read_text())
    assert m["operations"] == {"READ": summary.operations["READ"], "UPDATE": summary.operations["UPDATE"]}
    assert not any(op.startswith("Intended-") for op in summary.operations)
    assert m["latency_timed_from"] == "intended"
    reads = m["read"]
    assert reads["lat_ns"]["n"] == reads["lat_ns_sent"]["n"] == summary.operations["READ"]
    assert reads["lat_ns"]["p99"] > 5 * reads["lat_ns_sent"]["p99"]  # the queueing the send time leaves out
    for section, lat in (("Intended-READ", reads["lat_ns"]), ("READ", reads["lat_ns_sent"])):
        yc = summary.reported[section]["99thPercentileLatency(us)"]
        assert lat["p99"] == pytest.approx(yc * 1000, rel=0.01), section
    assert {"READ", "Intended-READ"} <= set(m["latency"])
    flat = metrics.parse_trial(YcsbParams(), _captured_trial(tmp_path / "flat", ["db0-c0"])).metrics
    assert flat["latency_timed_from"] == "sent" and "lat_ns_sent" not in flat["read"]


def test_a_target_asks_the_client_for_both_timings():
    run = client.ClientRun(
        phase="run", workload=Path("w"), hosts=("127.0.1.1",), out_dir=Path("/o"), records=10, target_ops_s=100
    )
    assert client.properties(run)["measurement.interval"] == "both"
    flat = dataclasses.replace(run, target_ops_s=None)
    assert "measurement.interval" not in client.properties(flat)
