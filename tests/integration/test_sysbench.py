"""The sysbench workload through `strata run`, on the real thing: MariaDB servers (Debian's) natively, in a
container of a private dockerd on a named volume, and in a pod on strata's Kubernetes test bed, with the host's
sysbench, data on a file system on a loop device made for the test.

- natively: an oltp_read_write run and an oltp_read_only run on xfs; both store tps, qps and p99, the server's
  version and settings in force; the read-only run's data set is four times its buffer pool, so InnoDB reads
  its pages from its files, the device moves those bytes and the cache rule judges them; the read-write run's
  redo log is counted;
- a settings map the server takes is in force in the running server, and one it rejects at start ends the
  trial with the server's own error line;
- a workdir the mysql user cannot enter ends the trial saying which directory and the fix;
- in a container on a named volume, with a memory limit: the data set against the memory that caches it;
- in a pod on the test bed (hostpath);
- `kill -9` of strata while the clients run, natively and in a container, then one `strata cleanup`: no
  server, client, container, mount, loop device or directory of the run is left.

Each test takes 1 to 3 minutes on the 2-core VM (the pod's test bed more when it is not up yet).
"""

import os
import uuid
from pathlib import Path

import pytest

from strata.stack.runtimes.kubernetes.cluster import connect
from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, tool_version, wait_for, write_spec

# 1800 s, not the default 600: a test here runs several trials, each of which builds its MariaDB servers,
# loads sysbench's tables before it warms up and is timed; one test brings up the Kubernetes test bed
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
SMALL = {"tables": 2, "table_size": 10000, "clients": 4, "runtime": 8, "warmup": 2}


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-sysbench-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    wait_for(lambda: our_processes(tmp_path, workdir) == [], 30, "no server or client of the run")
    if workdir.exists():
        workdir.rmdir()


def spec(workdir, **over):
    s = {
        "name": "sysbench-it",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "3GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"sysbench": SMALL}],
    }
    s.update(over)
    return s


def our_processes(*marks) -> list[str]:
    """mariadbd and sysbench processes of this test: their command line, working directory or cgroup names one
    of `marks` (a directory of the test, a container id of the run)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            exe = os.path.basename(os.readlink(p / "exe"))
            if exe not in ("mariadbd", "sysbench"):
                continue
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            where = cmd + " " + os.readlink(p / "cwd") + " " + (p / "cgroup").read_text()
        except OSError:
            continue
        if any(str(m) in where for m in marks if m):
            found.append(f"{p.name} {exe}: {cmd}")
    return found


def assert_measured(r: dict, writes: bool = True, servers: int = 1):
    assert r["status"] == "ok", r["flags"]["failed"]
    m = r["metrics"]
    assert m["primary"]["value"] > 0 and m["primary"]["unit"] == "tx/s" and m["tps"] == m["primary"]["value"]
    assert m["qps"] >= m["tps"] and m["primary"]["qps"] == m["qps"]  # qps stored (a point select is one query)
    lat = m["write" if writes else "read"]["lat_ns"]
    assert lat["n"] > 0 and 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"], lat  # p99 stored
    assert m["transactions"]["processed"] == lat["n"] and m["transactions"]["reconnects"] == 0
    assert len(m["servers"]) == servers and len(m["node_ready_s"]) == servers
    assert m["clients"]["run"]["client_cpu_s"][0] > 0
    assert m["sysbench"]["version"] == tool_version("sysbench", "--version")  # probed, not pinned
    mariadb = ".".join(tool_version("mariadbd", "--version").split(".")[:2])  # this host's, as its image's: 10.11
    assert m["server"]["version"].startswith(mariadb + ".") and m["server"]["settings"]["innodb_page_size"] == "16384"
    assert r["collectors"]["cgroups"]["0"]["cpu_ns"] > 0  # the server's own CPU, from its cgroup
    assert m["flushed"][0]["left"] == 0  # every page the load dirtied was written before the run


def _containers(state: Path) -> list[dict]:
    from strata.stack.journal import pending

    return [x["data"] for j in (state / "journal").glob("*.jsonl") for x in pending(j) if x["kind"] == "container"]


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:sysbench",
    "workload:sysbench@native",
)
def test_native_read_write_and_read_only_with_innodbs_counters(tmp_path, env):
    workdir, e = env
    # the read-only run's data set, 4 tables of 100,000 rows (about 90 MiB), against a 24 MiB buffer pool:
    # InnoDB reads most of its pages from its files (O_DIRECT), and the device moves them
    rw = {**SMALL, "settings": {"innodb_io_capacity": 1000}}
    ro = {**SMALL, "script": "oltp_read_only", "tables": 4, "table_size": 100_000, "runtime": 20}
    ro |= {"innodb_buffer_pool_size": "24MiB", "warmup": 3, "rand_type": "uniform"}
    held = {**SMALL, "script": "oltp_read_only", "runtime": 5}  # 2 x 10,000 rows: its 128 MiB pool holds them
    s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"sysbench": w} for w in (rw, ro, held)]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1200)
    rs = {r["labels"]["workload"]: r for r in results(tmp_path / "out")}
    rw, ro, held = (
        rs["sysbench-oltp_read_write-2x10000-c4-w2-innodb_io_capacity_1000"],
        rs["sysbench-oltp_read_only-4x100000-c4-w3-rand_uniform-bp_24MiB"],
        rs["sysbench-oltp_read_only-2x10000-c4-w2"],
    )
    assert_measured(rw)
    assert_measured(ro, writes=False)
    assert_measured(held, writes=False)
    # the data set its buffer pool holds: the read-only run is flagged (drawn apart) with the rows that would not
    # fit; the read-write run, whose commits wait on the redo log's flush, is said and compared
    c = held["flags"]["cache"]
    assert c["suspect"] and not c.get("expected") and "its reads come from memory" in c["reason"], c
    assert "rows or more a server (now 20,000" in c["reason"] and held["metrics"]["cache"]["fits"] is True, c
    c = rw["flags"]["cache"]
    assert c["suspect"] and c.get("expected") and "write-bound" in c["reason"], c
    assert rw["writes"]["syncs"]["what"] == "InnoDB's fsyncs" and rw["writes"]["syncs"]["count"] > 0, rw["writes"]
    assert (
        "--rand-type=uniform"
        in (tmp_path / "out" / ro["artifacts"] / "sysbench" / "run" / "server-0" / "argv.txt").read_text()
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    # the settings in force, read from the running server: the map's and the spec's own
    settings, sources = rw["metrics"]["server"]["settings"], rw["metrics"]["server"]["sources"]
    assert settings["innodb_io_capacity"] == "1000" and sources["innodb_io_capacity"] == "CONFIG"
    assert ro["metrics"]["server"]["settings"]["innodb_buffer_pool_size"] == str(24 << 20)
    # the read-write run's redo log, InnoDB's own count
    assert rw["metrics"]["innodb"]["redo_bytes"] > 0 and rw["metrics"]["innodb"]["redo_writes"] > 0
    # the read-only run read its pages from its files, and the device under test moved them: judged, not flagged
    inno, cache = ro["metrics"]["innodb"], ro["flags"]["cache"]
    # the two counters are read by one SHOW GLOBAL STATUS, but not atomically: a page read under way between them
    # is counted by one and not yet by the other (CI saw one 16 KiB page of 792 MiB), so a few pages may differ
    pages_apart = abs(inno["read_bytes"] - inno["buffer_pool_read_bytes"]) / inno["page_bytes"]
    assert inno["buffer_pool_read_bytes"] > 32 << 20 and pages_apart <= 8 and inno["redo_bytes"] < 1 << 20, inno
    assert cache["suspect"] is False and cache["evidence"]["read_disk_share"] >= 0.5, cache
    assert ro["metrics"]["cache"]["fits"] is False and rw["metrics"]["cache"]["fits"] is True
    data = Path(rw["stack_facts"]["filesystem"]["mountpoint"])
    assert (
        f"datadir={data}/strata-data/mariadb-0"
        in (tmp_path / "out" / rw["artifacts"] / "inst-0" / "my.cnf").read_text()
    )
    strata("report", tmp_path / "out", env=e, check=0)
    svgs = list((tmp_path / "out" / "report" / "figures").glob("latency-*.svg"))
    assert len(svgs) == 2 and all("breakdown" in svg.read_text() for svg in svgs)  # read-only and read-write
    read_mib = inno["read_bytes"] / 2**20
    print(
        f"\nnative xfs: read-write {rw['metrics']['tps']:.0f} tx/s, read-only {ro['metrics']['tps']:.0f} tx/s "
        f"({read_mib:.0f} MiB read by InnoDB, device share {cache['evidence']['read_disk_share']:.2f})"
    )


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:sysbench",
    "workload:sysbench@native",
)
def test_innodbs_fsyncs_on_ext4_without_barriers_are_flagged_and_with_them_not(tmp_path, env):
    """Issue 56: every commit fsyncs the redo log (innodb_flush_log_at_trx_commit=1); ext4 mounted barrier=0
    passes none of them on as a flush, and the flush check, given InnoDB's own count, says so."""
    workdir, e = env
    writes = {**SMALL, "script": "oltp_write_only", "runtime": 6}
    filesystems = ["ext4", {"type": "ext4", "mount_options": ["barrier=0"]}]
    s = write_spec(tmp_path / "s.yaml", spec(workdir, filesystems=filesystems, workloads=[{"sysbench": writes}]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1200)
    rs = {r["labels"]["filesystem"]: r for r in results(tmp_path / "out")}
    honest, dropped = rs["ext4"], rs["ext4-barrier0"]
    for r in (honest, dropped):
        assert_measured(r)
        syncs = r["writes"]["syncs"]
        # one fsync of the redo log a commit at least (group commit may join some): InnoDB's count
        assert syncs["what"] == "InnoDB's fsyncs" and syncs["count"] >= 0.5 * r["metrics"]["transactions"]["processed"]
        # the durability settings in force, the server's own (issue 56)
        d = r["metrics"]["durability"]
        assert d["durable"] and d["shown"] == "trx_commit=1 binlog=OFF sync_binlog=0 doublewrite=ON O_DIRECT", d
    assert cp.returncode == 0, cp.stdout + cp.stderr
    f = honest["flags"]["flush"]
    assert not f["suspect"], f
    f = dropped["flags"]["flush"]
    assert f["suspect"] and "barrier=0" in f["reason"], f
    print(
        f"\nInnoDB's fsyncs: ext4 {honest['writes']['syncs']['count']} with "
        f"{f['evidence']['per_disk'][f['evidence']['disks'][0]]['flush_ios']} flushes at barrier=0"
    )


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:sysbench",
    "workload:sysbench@native",
    "fault:instance_died",
    "fault:instance_died@native",
)
def test_a_setting_the_server_rejects_fails_its_trial_in_the_servers_words(tmp_path, env):
    workdir, e = env
    bad = {**SMALL, "runtime": 3, "settings": {"innodb_change_buffering": "sometimes"}}  # none, inserts, ... all
    s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"sysbench": bad}]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, check=1, timeout=600)
    (r,) = results(tmp_path / "out")
    failed = r["flags"]["failed"]
    assert r["status"] == "failed" and failed["category"] == "instance_died", failed
    assert "MariaDB server 0 ended while starting" in failed["message"], failed
    assert "Error while setting value 'sometimes' to 'innodb-change-buffering'" in failed["message"], failed["message"]
    print(f"\n{failed['message'][:300]}")
    assert cp.returncode == 1


@covers("refused:command:run")  # refused before the first trial
def test_a_workdir_the_mysql_user_cannot_enter_is_named_with_the_fix(tmp_path):
    """The template checks the servers' user's reach before anything is built (as for PostgreSQL's)."""
    private = Path(f"/var/tmp/strata-sysbench-private-{uuid.uuid4().hex[:8]}")
    private.mkdir(mode=0o700)
    workdir, e = private / "work", {"STRATA_STATE_DIR": str(tmp_path / "state")}
    try:
        s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"sysbench": {**SMALL, "runtime": 3}}]))
        cp = strata("run", s, "-o", tmp_path / "out", env=e, check=2, timeout=600)
        said = cp.stdout + cp.stderr
        who = "the mysql user, which the sysbench workload's servers run as on the native runtime"
        assert f"{who}, cannot enter {private}" in said, said
        assert "fix: choose a workdir" in said and not list(tmp_path.glob("out/trials/*.json")), said
        assert not workdir.exists()  # nothing was built
    finally:
        strata("cleanup", "--force", env=e)
        private.rmdir()


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "workload:sysbench",
    "workload:sysbench@docker",
)
def test_a_server_in_a_container_on_a_named_volume_under_a_memory_limit(tmp_path, env):
    workdir, e = env
    fsync = {**SMALL, "script": "oltp_point_select", "innodb_flush_method": "fsync"}
    s = write_spec(
        tmp_path / "s.yaml",
        spec(
            workdir,
            runtimes=["docker:overlay2"],
            paths=["volume"],
            workloads=[{"sysbench": fsync}],
            loads=[{"name": "limited", "limits": {"memory": "512MiB"}}],
        ),
    )
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1500)
    (r,) = results(tmp_path / "out")
    assert_measured(r, writes=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    # through the page cache (fsync), the data set is judged against the container's memory limit
    c = r["metrics"]["cache"]
    assert c["memory_bytes"] == 512 << 20 and "memory limit" in c["memory_of"] and c["fits"] is True, c
    assert r["metrics"]["server"]["settings"]["innodb_flush_method"] == "fsync"
    print(f"\na container on a volume: {r['metrics']['tps']:.0f} tx/s, {r['metrics']['qps']:.0f} queries/s")


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill_9_natively_then_cleanup_leaves_nothing(tmp_path, env):
    workdir, e = env
    s = write_spec(tmp_path / "s.yaml", spec(workdir, workloads=[{"sysbench": {**SMALL, "runtime": 120}}]))
    out = tmp_path / "out"
    proc = start_strata("run", s, "-o", out, env=e)
    wait_for(lambda: any("--histogram=on" in p for p in our_processes(tmp_path)), 600, "sysbench to run")
    proc.kill()
    proc.wait()
    assert our_processes(workdir) and leftovers(workdir)  # the killed run left its server and its stack
    cp = strata("cleanup", env=e, check=0)
    assert "undid" in cp.stdout
    assert leftovers(workdir) == [] and not list(Path(e["STRATA_STATE_DIR"], "journal").glob("*.jsonl"))
    wait_for(lambda: our_processes(tmp_path, workdir) == [], 30, "the client to end with its server")


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill_9_in_a_container_then_cleanup_leaves_nothing(tmp_path, env):
    workdir, e = env
    s = write_spec(
        tmp_path / "s.yaml",
        spec(
            workdir, runtimes=["docker:overlay2"], paths=["volume"], workloads=[{"sysbench": {**SMALL, "runtime": 120}}]
        ),
    )
    out, state = tmp_path / "out", Path(e["STRATA_STATE_DIR"])
    proc = start_strata("run", s, "-o", out, env=e)
    wait_for(lambda: any("--histogram=on" in p for p in our_processes(tmp_path)), 900, "sysbench to run")
    containers = [c.get("id", "") for c in _containers(state)]
    assert our_processes(*containers), "the server runs in its container"
    proc.kill()
    proc.wait()
    cp = strata("cleanup", env=e, check=0)
    assert leftovers(workdir) == [] and _containers(state) == [], cp.stdout
    wait_for(lambda: our_processes(tmp_path, *containers) == [], 30, "no server or client left")


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/hostpath",
    "workload:sysbench",
    "workload:sysbench@kubernetes",
)
def test_a_pod_on_the_test_bed(tmp_path, env):
    workdir, e = env
    s = write_spec(tmp_path / "s.yaml", spec(workdir, runtimes=["kubernetes"], paths=["hostpath"]))
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1800)
    (r,) = results(tmp_path / "out")
    assert_measured(r)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    assert r["stack_facts"]["runtime"]["bed"] is True and r["labels"]["runtime"] == "kubernetes"
    beds = list((Path(e["STRATA_STATE_DIR"]) / "kubernetes").glob("*/admin.kubeconfig"))
    if beds:  # the bed may be gone already; while it runs, no pod of the run is left in it
        pods = connect(str(beds[0])).api.get("/api/v1/pods")["items"]
        assert not [p for p in pods if p["metadata"]["namespace"].startswith("strata-")]
    p99_ms = r["metrics"]["write"]["lat_ns"]["p99"] / 1e6
    print(f"\na pod on hostpath: {r['metrics']['tps']:.0f} tx/s, p99 {p99_ms:.1f} ms")


@covers()  # an image built, no trial
def test_the_servers_image_holds_mariadb():
    """What `strata image build` makes for the workload: Debian's MariaDB 10.11 (no registry)."""
    import subprocess

    from strata.stack.runtimes.docker.image import build_image_tarball
    from strata.workloads import REGISTRY
    from strata.workloads.sysbench.params import SysbenchParams

    tar = build_image_tarball(REGISTRY["sysbench"].image(SysbenchParams()))
    listing = subprocess.run(["tar", "-tf", str(tar)], capture_output=True, text=True, check=True).stdout
    assert tar.name.startswith("strata-mariadb-") and "manifest.json" in listing
