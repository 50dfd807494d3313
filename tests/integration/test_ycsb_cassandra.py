"""Real Cassandra 5.0 nodes under the real YCSB 0.17.0 client: natively, as a two-node
cluster, and in a container on a private dockerd; data on an ext4 file system on a loop
device made for the test. Every JVM is stopped and every directory, mount and loop device
removed at the end (checked).

Slow (a node starts in 20-40 s on the 2-core VM): about 6 minutes in all. The jars come from
strata's cache (assembled with Maven on first use, which needs Maven Central once).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from strata.errors import StrataError, TrialFailure
from strata.stack.devices.loop import LOOP
from strata.stack.devices.loop import LoopParams as LoopDevice
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.filesystems.mkfs import EXT4
from strata.stack.journal import Journal, cleanup, pending
from strata.stack.runtimes.docker.daemon import private_daemon
from strata.workloads.ycsb import cassandra, client, image, jars, node, parse

from .helpers import leftovers, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
GiB = 1 << 30


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    """Our own journal directory, so cleanup never touches another run's resources."""
    d = tmp_path_factory.mktemp("state")
    old = os.environ.get("STRATA_STATE_DIR")
    os.environ["STRATA_STATE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("STRATA_STATE_DIR")
    else:
        os.environ["STRATA_STATE_DIR"] = old


@pytest.fixture(scope="module")
def homes():
    return jars.ensure_cassandra(), jars.ensure_ycsb()


@pytest.fixture(scope="module")
def ext4(state):
    """An ext4 file system on a 3 GiB loop device (direct I/O), and the work dir beside it."""
    workdir = Path(f"/var/tmp/strata-ycsb-it-{uuid.uuid4().hex[:8]}")
    journal = Journal("ycsb-it")
    try:
        with (
            LOOP.provision(LoopDevice(size=3 * GiB), journal, workdir) as dev,
            EXT4.provision(Filesystem(type="ext4"), dev, journal, workdir) as mounted,
        ):
            yield workdir, mounted.mountpoint, journal
    finally:
        journal.close()
        assert leftovers(workdir) == []
        shutil.rmtree(workdir, ignore_errors=True)


def native(homes, workdir, mountpoint, cfgs_kw=None, nodes=1, name="n"):
    """NodeConfigs of a native cluster: data on the file system under test, conf and log beside."""
    lib = homes[0] / "lib"
    return cassandra.cluster_configs(
        0,
        nodes,
        data_dir=lambda i: str(mountpoint / f"{name}{i}-data"),
        conf_dir=lambda i: str(workdir / f"{name}{i}-conf"),
        lib_dir=str(lib),
        **(cfgs_kw or {}),
    )


def load_and_run(hosts, ycsb_home, out: Path, workload="a", records=2000, operations=2000, rf=1, **kw):
    lib = ycsb_home / "lib"
    common = dict(records=records, threads=4, replication_factor=rf, data_integrity=True, **kw)
    client.run_client(
        client.ClientRun("load", client.workload_file(workload), tuple(hosts), out / "load", **common),
        lib,
        timeout_s=600,
    )
    res = client.run_client(
        client.ClientRun(
            "run",
            client.workload_file(workload),
            tuple(hosts),
            out / "run",
            operations=operations,
            create_schema=False,
            **common,
        ),
        lib,
        timeout_s=600,
    )
    agg = parse.aggregate(
        [parse.ClientOutput(res.stdout_path.read_text(), res.stderr_path.read_text(), out / "run" / "hdr")]
    )
    return agg, res


def assert_integrity(agg, reads_op="READ"):
    assert agg["errors"] == 0, agg["returns"]
    assert agg["returns"]["VERIFY"] == {"OK": agg["operations"][reads_op]}, agg["returns"]
    lat = agg["latency"][reads_op]
    assert lat["n"] > 0 and lat["p50_us"] <= lat["p99_us"] <= lat["max_us"]
    assert agg["throughput_ops_s"] > 0 and agg["series_ops_s"]


def ring_ok(hosts, ycsb_home):
    cp = subprocess.run(client.ring_check_argv(hosts, ycsb_home / "lib"), capture_output=True, text=True, timeout=300)
    return cp.returncode, json.loads(cp.stdout)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_single_node_native_workloads_a_and_d_with_data_integrity(ext4, homes, tmp_path):
    workdir, mnt, journal = ext4
    cfg = native(homes, workdir, mnt, {"memory_limit_bytes": 2 * GiB})[0]
    with (
        node.node_dir(journal, Path(cfg.data_dir)),
        node.node_dir(journal, Path(cfg.conf_dir)),
        node.native_node(cfg, jars.jar_names(homes[0]), journal, workdir / "n0.log") as n,
    ):
        start_s = n.wait_ready()
        print(f"\nnative node ready in {start_s:.1f} s, RSS {rss_mib(n.pid):.0f} MiB (heap 1 GiB)")
        assert "-Xmx1024m" in Path(f"/proc/{n.pid}/cmdline").read_bytes().decode().split("\0")
        a, res = load_and_run([cfg.address], homes[1], tmp_path / "a")
        assert_integrity(a)
        assert set(a["operations"]) == {"READ", "UPDATE", "VERIFY"}
        d, _ = load_and_run([cfg.address], homes[1], tmp_path / "d", workload="d", keyspace="ycsbd")
        assert_integrity(d)
        assert d["operations"].get("INSERT", 0) > 0
        print(
            f"A {a['throughput_ops_s']:.0f} ops/s (window {a['window_ops_s']:.0f}), "
            f"D {d['throughput_ops_s']:.0f} ops/s; client CPU share {res.cpu_share():.2f}"
        )
        # the data really is on the file system under test
        assert any((mnt / "n0-data" / "commitlog").iterdir())
        assert list((mnt / "n0-data" / "data").glob("ycsb/usertable-*"))
        print(f"node RSS after the runs {rss_mib(n.pid):.0f} MiB")
    assert not (mnt / "n0-data").exists() and not (workdir / "n0-conf").exists()
    assert not [e for e in pending(journal.path) if e["kind"] in ("ycsb-dir", "cassandra-jvm")]


def test_killed_node_makes_the_client_fail_fast(ext4, homes, tmp_path):
    workdir, mnt, journal = ext4
    cfg = native(homes, workdir, mnt, name="k")[0]
    lib = homes[1] / "lib"
    with (
        node.node_dir(journal, Path(cfg.data_dir)),
        node.node_dir(journal, Path(cfg.conf_dir)),
        node.native_node(cfg, jars.jar_names(homes[0]), journal, workdir / "k0.log") as n,
    ):
        n.wait_ready()
        client.run_client(
            client.ClientRun(
                "load", client.workload_file("a"), (cfg.address,), tmp_path / "load", records=1000, threads=2
            ),
            lib,
            timeout_s=600,
        )
        run = client.ClientRun(
            "run",
            client.workload_file("a"),
            (cfg.address,),
            tmp_path / "run",
            records=1000,
            runtime_s=300,
            threads=2,
            create_schema=False,
        )
        t0 = time.monotonic()
        proc = client.start_client(run, lib)
        wait_for(
            lambda: any(p.operations > 0 for p in parse.parse_status((tmp_path / "run" / "stderr.txt").read_text())),
            120,
            "operations",
        )
        n.kill()
        killed = time.monotonic()
        with pytest.raises(TrialFailure) as e:
            client.wait_client(proc, run, t0, timeout_s=600)
        after_s = time.monotonic() - killed
        print(f"\nclient ended {after_s:.1f} s after the node was killed: {e.value}")
        assert "no Cassandra node is up" in str(e.value) and proc.returncode == client.FATAL_EXIT
        assert after_s < 30


def test_node_with_a_bad_option_fails_with_its_log(ext4, homes):
    workdir, mnt, journal = ext4
    cfg = native(homes, workdir, mnt, {"extra_yaml": {"no_such_option_xyz": 1}}, name="b")[0]
    with (
        node.node_dir(journal, Path(cfg.data_dir)),
        node.node_dir(journal, Path(cfg.conf_dir)),
        node.native_node(cfg, jars.jar_names(homes[0]), journal, workdir / "b0.log") as n,
    ):
        with pytest.raises(TrialFailure) as e:
            n.wait_ready(timeout_s=120)
    assert e.value.category == "tool_error"
    assert "no_such_option_xyz" in e.value.stderr and "exited while starting" in str(e.value)


def test_node_not_ready_in_time_fails_with_its_log(ext4, homes):
    workdir, mnt, journal = ext4
    cfg = native(homes, workdir, mnt, name="t")[0]
    with (
        node.node_dir(journal, Path(cfg.data_dir)),
        node.node_dir(journal, Path(cfg.conf_dir)),
        node.native_node(cfg, jars.jar_names(homes[0]), journal, workdir / "t0.log") as n,
    ):
        wait_for(lambda: "Configuration location" in n.read_log(), 60, "the first log line")
        with pytest.raises(TrialFailure) as e:
            n.wait_ready(timeout_s=1)
        pid = n.pid
    assert e.value.category == "timeout" and "was not ready within 1 s" in str(e.value)
    log = (workdir / "t0.log").read_text()
    assert len(e.value.stderr) > 200 and e.value.stderr[-200:] in log  # the tail of the node's log
    assert e.value.stderr[-200:] in str(e.value)
    assert not Path(f"/proc/{pid}").exists() or "CassandraDaemon" not in Path(f"/proc/{pid}/cmdline").read_text()


def test_two_node_cluster_replication_factor_2(ext4, homes, tmp_path):
    workdir, mnt, journal = ext4
    cfgs = native(homes, workdir, mnt, nodes=2, name="c")
    assert [c.address for c in cfgs] == ["127.0.1.1", "127.0.1.2"]
    names = jars.jar_names(homes[0])
    with (
        node.node_dir(journal, Path(cfgs[0].data_dir)),
        node.node_dir(journal, Path(cfgs[0].conf_dir)),
        node.node_dir(journal, Path(cfgs[1].data_dir)),
        node.node_dir(journal, Path(cfgs[1].conf_dir)),
        node.native_node(cfgs[0], names, journal, workdir / "c0.log") as n0,
    ):
        t0 = n0.wait_ready()
        with node.native_node(cfgs[1], names, journal, workdir / "c1.log") as n1:  # joins after the seed
            t1 = n1.wait_ready()
            print(f"\nseed ready in {t0:.1f} s, second node joined in {t1:.1f} s")
            rc, ring = ring_ok([c.address for c in cfgs], homes[1])
            assert rc == 0 and ring["ok"], ring
            assert [x["peers"] for x in ring["nodes"]] == [["127.0.1.2"], ["127.0.1.1"]]
            # writes at ALL need both replicas: RF 2 really holds two copies
            agg, _ = load_and_run(
                [c.address for c in cfgs],
                homes[1],
                tmp_path / "rf2",
                rf=2,
                write_consistency="ALL",
                read_consistency="ALL",
            )
            assert_integrity(agg)
            print(f"RF 2 at ALL: {agg['throughput_ops_s']:.0f} ops/s")
            for c in cfgs:
                assert list((Path(c.data_dir) / "data").glob("ycsb/usertable-*/*Data.db")) or any(
                    (Path(c.data_dir) / "commitlog").iterdir()
                )
            n1.kill()
            wait_for(lambda: not n1.alive(), 30, "the second node to die")
            rc, ring = ring_ok([c.address for c in cfgs], homes[1])
            assert rc != 0 and not ring["ok"]  # a node down: not all UN


def test_single_node_in_a_container(ext4, homes, tmp_path):
    workdir, mnt, journal = ext4
    cfg_host = native(homes, workdir, mnt, {"memory_limit_bytes": int(1.5 * GiB)}, name="d")[0]
    cfg = node.container_config(cfg_host)
    with (
        private_daemon("overlay2", mnt / "docker", journal, remove_data_root=True) as daemon,
        node.node_dir(journal, Path(cfg_host.data_dir)) as data,
        node.node_dir(journal, Path(cfg_host.conf_dir)) as conf,
        node.node_dir(journal, workdir / "d0-log") as logdir,
    ):
        tag = image.ensure_image(daemon.sock, homes[0])
        with node.container_node(cfg, jars.jar_names(homes[0]), journal, daemon.sock, tag, data, conf, logdir) as n:
            start_s = n.wait_ready()
            top = subprocess.run(
                [
                    "docker",
                    "-H",
                    f"unix://{daemon.sock}",
                    "stats",
                    "--no-stream",
                    "--format",
                    "{{.MemUsage}}",
                    n.container,
                ],
                capture_output=True,
                text=True,
            ).stdout.strip()
            print(f"\ncontainer node ready in {start_s:.1f} s, memory {top} (heap 768 MiB, limit 1.5 GiB)")
            a, _ = load_and_run([cfg.address], homes[1], tmp_path / "a")
            assert_integrity(a)
            d, _ = load_and_run([cfg.address], homes[1], tmp_path / "d", workload="d", keyspace="ycsbd")
            assert_integrity(d)
            print(f"container: A {a['throughput_ops_s']:.0f} ops/s, D {d['throughput_ops_s']:.0f} ops/s")
            assert list((data / "data").glob("ycsb/usertable-*"))  # on the bind mount, on ext4
            # a container killed mid-run: the client stops at once, saying why
            run = client.ClientRun(
                "run",
                client.workload_file("a"),
                (cfg.address,),
                tmp_path / "kill",
                records=2000,
                runtime_s=300,
                threads=2,
                create_schema=False,
            )
            t0 = time.monotonic()
            proc = client.start_client(run, homes[1] / "lib")
            wait_for(
                lambda: any(
                    p.operations > 0 for p in parse.parse_status((tmp_path / "kill" / "stderr.txt").read_text())
                ),
                120,
                "operations",
            )
            n.kill()
            with pytest.raises(TrialFailure, match="no Cassandra node is up"):
                client.wait_client(proc, run, t0, timeout_s=600)
            assert not n.alive() and not n.oom_killed()


def test_cleanup_after_kill_9_stops_the_node_and_removes_its_dirs(ext4, homes, tmp_path):
    """strata killed with -9 while a node runs: `strata cleanup` (journal.cleanup) undoes it all."""
    workdir, mnt, _ = ext4
    state = tmp_path / "state"
    cfg = native(homes, workdir, mnt, name="x")[0]
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from strata.stack.journal import Journal
        from strata.workloads.ycsb import node
        from strata.workloads.ycsb.cassandra import NodeConfig
        cfg = NodeConfig(**{dict(cfg.__dict__)!r})
        j = Journal("killed", Path({str(state)!r}))
        with node.node_dir(j, Path(cfg.data_dir)), node.node_dir(j, Path(cfg.conf_dir)), \\
                node.native_node(cfg, {jars.jar_names(homes[0])!r}, j, Path({str(workdir / "x0.log")!r})) as n:
            print(n.pid, flush=True)
            time.sleep(600)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "STRATA_STATE_DIR": str(state)},
    )
    pid = int(proc.stdout.readline())
    wait_for(lambda: "Configuration location" in (workdir / "x0.log").read_text(), 60, "the node to start")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert Path(f"/proc/{pid}").exists() and Path(cfg.data_dir).exists()
    undone = cleanup(state, log=lambda m: None)
    assert undone == 3
    assert not Path(f"/proc/{pid}").exists() or "CassandraDaemon" not in Path(f"/proc/{pid}/cmdline").read_text()
    assert not Path(cfg.data_dir).exists() and not Path(cfg.conf_dir).exists()


def test_jars_need_no_network_once_cached(homes, tmp_path, monkeypatch):
    """With Maven Central unreachable: the cached jars are used as they are, a changed binding
    builds offline from strata's Maven repository, and an empty cache is a clear StrataError."""
    settings = tmp_path / "settings.xml"
    # the mirror keeps Central's id: Maven ties cached artifacts to the id they came from
    settings.write_text(
        "<settings><mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/</url></mirror></mirrors></settings>\n"
    )
    monkeypatch.setenv("STRATA_MAVEN_SETTINGS", str(settings))
    assert jars.ensure_cassandra() == homes[0] and jars.ensure_ycsb() == homes[1]
    src = tmp_path / "binding"
    shutil.copytree(jars.binding_source(), src, ignore=shutil.ignore_patterns("target"))
    java = src / "src" / "main" / "java" / "strata" / "ycsb" / "RingCheck.java"
    java.write_text(java.read_text() + "\n// changed\n")
    home = jars.ycsb_home(src)
    try:
        assert jars.ensure_ycsb(src) == home and "ycsb-cassandra-0.1.0.jar" in jars.jar_names(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(StrataError) as e:
        jars.ensure_cassandra()
    assert "Maven could not fetch Cassandra" in str(e.value) and "Maven Central" in e.value.fix
    assert "127.0.0.1:9" in str(e.value) and "full stack trace" not in str(e.value)  # Maven's reason, not its advice
    assert not list((tmp_path / "empty-cache").glob("cassandra-*"))
