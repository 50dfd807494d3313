"""The ycsb workload through `strata run`, on the real thing: Cassandra 5.0 nodes natively and in
containers of a private dockerd, the YCSB 0.17.0 client on the host, data on a file system on a loop
device made for the test.

- natively: a two-node cluster with replication factor 2 (load, warm-up, measured run with YCSB's
  data-integrity check), its data on the mount point;
- in containers: a database container killed in the middle of the measured run ends that trial as
  `instance_died` with the reason, and the run goes on with the next trial (one node in a
  container, which passes the data-integrity check);
- `kill -9` of strata while a node runs in a container, then `strata cleanup`: no JVM, container,
  mount, loop device or directory of the run is left.

Each node takes ~1.5 GB and 10-70 s to start on the 2-core VM: about 6 minutes in all.
"""

import os
import signal
import subprocess
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration
SMALL = {"workload": "a", "records": 2000, "runtime": 8, "warmup": 2, "threads": 4, "data_integrity": True}


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-ycsb-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == [] and our_jvms(workdir, tmp_path) == []
    if workdir.exists():
        workdir.rmdir()


def spec(workdir, **over):
    s = {
        "name": "ycsb-it",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "3GiB"}],
        "filesystems": ["ext4"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"ycsb": SMALL}],
    }
    s.update(over)
    return s


def our_jvms(*marks) -> list[str]:
    """Cassandra JVMs whose command line or cgroup names one of `marks`: a directory of this test (a
    native node's conf dir is under the results dir) or a container id of the run."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                cg = (p / "cgroup").read_text()
            except OSError:
                continue
            if "CassandraDaemon" in cmd and any(str(m) in cmd or str(m) in cg for m in marks if m):
                found.append(f"{p.name}: {cmd[:120]}")
    return found


def assert_measured(r: dict, nodes: int = 1):
    assert r["status"] == "ok", r["flags"]["failed"]
    m = r["metrics"]
    assert m["primary"]["value"] > 0 and m["primary"]["unit"] == "ops/s"
    assert m["errors"] == 0 and m["returns"]["VERIFY"] == {"OK": m["operations"]["READ"]}, m["returns"]
    for op in ("READ", "UPDATE"):
        lat = m["latency"][op]
        assert lat["n"] > 0 and lat["mean_us"] > 0 and lat["p95_us"] <= lat["p99_us"] <= lat["p99_9_us"]
    assert len(m["node_ready_s"]) == nodes and all(s > 0 for s in m["node_ready_s"])
    for phase in ("load", "warmup", "run"):
        assert m["clients"][phase]["client_cpu_s"][0] > 0, m["clients"]
    assert m["cache"]["page_cache_bytes"] > 0
    # a few thousand records fit in memory: its reads are flagged from Cassandra's own counters, after the flush
    # before the run (commitlog_sync periodic: the writes wait on no sync, so the run is not write-bound)
    cache, seen = r["flags"]["cache"], m["cassandra"]
    assert cache["suspect"] and not cache.get("expected") and "fits" in cache["reason"], cache
    assert seen["flushed"] and len(seen["nodes"]) == nodes, seen
    for n in seen["nodes"]:
        assert n["settings"]["commitlog_sync"] == "periodic" and n["local_reads_in_run"] > 0, n
    assert r["collectors"]["cgroups"]["0"]["cpu_ns"] > 0  # the node's own CPU, from its cgroup


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:ycsb", "workload:ycsb@native")
def test_native_two_node_cluster_with_replication_2(tmp_path, env):
    """Natively on the mount point: two nodes, one after the other, RF 2 written and read at ALL."""
    workdir, e = env
    cluster = {**SMALL, "cluster": {"nodes": 2, "replication_factor": 2, "consistency": "ALL"}}
    s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"ycsb": cluster}]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1500)
    (r,) = results(tmp_path / "out")
    assert r["labels"]["workload"] == "ycsb-a-1x2n-rf2", cp.stdout + cp.stderr
    assert_measured(r, nodes=2)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    m = r["metrics"]
    data = Path(r["stack_facts"]["filesystem"]["mountpoint"])
    assert f"{data}/strata-data/node-1" in (tmp_path / "out" / r["artifacts"] / "command.json").read_text()
    strata("report", tmp_path / "out", env=e, check=0)
    # its reads came from memory: drawn apart as a cache, never in a latency breakdown of the device
    figures = tmp_path / "out" / "report" / "figures"
    assert not list(figures.glob("latency-*.svg")), sorted(f.name for f in figures.iterdir())
    assert any("cache answered" in f.read_text() for f in figures.glob("*.svg")), sorted(figures.iterdir())
    print(f"\nnative, 2 nodes RF 2 at ALL: {m['primary']['value']:.0f} ops/s (ready in {m['node_ready_s']} s)")


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:ycsb", "workload:ycsb@native")
def test_under_a_target_the_latency_is_timed_from_the_intended_start(tmp_path, env):
    """Issue 56: a real Cassandra under `target: 300`: the clients time every operation from its intended start
    too (measurement.interval=both), counted once; that latency is the one stored and compared."""
    workdir, e = env
    s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"ycsb": {**SMALL, "target": 300}}]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1500)
    (r,) = results(tmp_path / "out")
    assert_measured(r)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    m = r["metrics"]
    assert m["latency_timed_from"] == "intended" and "Intended-READ" in m["latency"], m["latency"].keys()
    assert not any(op.startswith("Intended-") for op in m["operations"]), m["operations"]
    for d in ("read", "write"):
        lat, sent = m[d]["lat_ns"], m[d]["lat_ns_sent"]
        assert lat["n"] == sent["n"] > 0 and lat["p99"] >= sent["p99"] * 0.99, (lat, sent)
    argv = (tmp_path / "out" / r["artifacts"] / "ycsb" / "run").glob("*/argv.txt")
    assert any("measurement.interval=both" in a.read_text() for a in argv)
    print(f"\ntarget 300: p99 read {m['read']['lat_ns']['p99'] / 1e6:.2f} ms from the intended start, "
          f"{m['read']['lat_ns_sent']['p99'] / 1e6:.2f} ms from the send")  # fmt: skip


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:ycsb", "workload:ycsb@native")
def test_strata_loopback_moves_the_nodes_to_a_block_of_their_own(tmp_path, env):
    """STRATA_LOOPBACK=X: the node listens, and the clients connect, in 127.X.0.0/16 (two runs on one
    machine never share an address); the run measures as on the default block."""
    workdir, e = env
    s = write_spec(tmp_path / "s.yaml", spec(workdir))
    cp = strata("run", s, "-o", tmp_path / "out", env={**e, "STRATA_LOOPBACK": "37"}, timeout=1500)
    (r,) = results(tmp_path / "out")
    assert_measured(r)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    commands = (tmp_path / "out" / r["artifacts"] / "command.json").read_text()
    assert "127.37.1.1" in commands and "127.0.1.1" not in commands, commands[:2000]


def _containers(state: Path) -> list[dict]:
    """The journal entries (socket, name, id) of the run's containers still there."""
    from strata.stack.journal import pending

    return [x["data"] for j in (state / "journal").glob("*.jsonl") for x in pending(j) if x["kind"] == "container"]


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "workload:ycsb",
    "workload:ycsb@docker",
    "fault:instance_died",
    "fault:instance_died@docker",
)
def test_a_killed_database_container_fails_its_trial_and_the_run_goes_on(tmp_path, env):
    workdir, e = env
    long = {**SMALL, "runtime": 60, "data_integrity": False, "name": "long"}
    s = write_spec(
        tmp_path / "s.yaml",
        spec(workdir, runtimes=["docker:overlay2"], paths=["volume"], workloads=[{"ycsb": long}, {"ycsb": SMALL}],
             order="spec"),
    )  # fmt: skip
    out, state = tmp_path / "out", Path(e["STRATA_STATE_DIR"])
    proc = start_strata("run", s, "-o", out, env=e)
    # the first run to start is the long one's (the spec's order: a random one may start with the short one)
    wait_for(lambda: bool(list(out.glob("trials/*/ycsb/run/db0-c0/stderr.txt"))), 900, "the measured run")
    seen = time.time()  # the long run's 60 s began before this
    time.sleep(5)
    c = _containers(state)[0]
    docker = ["docker", "-H", f"unix://{c['socket']}"]
    subprocess.run([*docker, "kill", c["name"]], check=True, capture_output=True, timeout=60)
    killed = time.monotonic()
    text, _ = proc.communicate(timeout=900)
    rs = {r["labels"]["workload"]: r for r in results(out)}
    assert set(rs) == {"long", "ycsb-a"}, text
    failed = rs["long"]["flags"]["failed"]
    assert rs["long"]["status"] == "failed" and failed["category"] == "instance_died", failed
    assert "while it should have run" in failed["message"]
    # ended when the node died, not at the end of its 60 s run, however slow the machine (the trial's end, whole s)
    ended = datetime.fromisoformat(rs["long"]["finished_at"]).timestamp()
    assert ended < seen + 60, (ended - seen, failed)
    assert_measured(rs["ycsb-a"])
    assert proc.returncode == 1, text
    after_s = time.monotonic() - killed
    print(f"\nkilled container: its trial failed as {failed['category']}; the run ended {after_s:.0f} s later")


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill_9_then_cleanup_removes_the_node_its_container_and_dirs(tmp_path, env):
    workdir, e = env
    s = write_spec(
        tmp_path / "s.yaml",
        spec(workdir, runtimes=["docker:overlay2"], paths=["volume"], workloads=[{"ycsb": {**SMALL, "runtime": 120}}]),
    )
    out, state = tmp_path / "out", Path(e["STRATA_STATE_DIR"])
    proc = start_strata("run", s, "-o", out, env=e)
    ids = lambda: [c.get("id", "") for c in _containers(state)]  # noqa: E731
    wait_for(lambda: bool(our_jvms(*ids())), 600, "the Cassandra JVM in its container")
    containers = ids()
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert our_jvms(*containers)  # left behind by the killed strata
    cp = strata("cleanup", env=e, check=0)
    assert our_jvms(*containers, tmp_path) == [], cp.stdout
    assert leftovers(workdir) == [] and _containers(state) == [], cp.stdout
