"""Issue 56 on a real Cassandra 5.0: its memory and its commit-log syncs judged from its own counters.

- a smoke run of examples/xu2017-cassandra.yaml (200 records a database) fits in memory: its reads are flagged
  from the table's SSTables after the flush before the run, as Cassandra counts them over CQL;
- the same workload in a container under a 1 GiB memory limit, with a data set beyond it, is not flagged: its
  reads reach the device;
- `commitlog_sync: batch` on ext4 and ext4 mounted barrier=0: every write waits on a sync of the commit log,
  and the flush check finds the flushes short where the file system drops them.

About 15 minutes on the 2-core VM: the memory-limited run loads 1.2 million records.
"""

import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec
from .test_ycsb_run import our_jvms

pytestmark = pytest.mark.integration
EXAMPLE = Path(__file__).parents[2] / "examples" / "xu2017-cassandra.yaml"
MiB = 1 << 20


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-ycsb-v-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == [] and our_jvms(workdir, tmp_path) == []
    if workdir.exists():
        workdir.rmdir()


def counted(r: dict) -> dict:
    """The one node's counters of the measured run (metrics.cassandra), checked to be Cassandra's own."""
    seen = r["metrics"]["cassandra"]
    (node,) = seen["nodes"]
    assert seen["flushed"] and "error" not in node, seen
    assert node["local_reads_in_run"] > 0 and node["sstable_mib"] is not None, node
    return node


@covers("device:loop", "filesystem:xfs", "runtime:native", "path:native/bind", "workload:ycsb", "workload:ycsb@native")
def test_a_smoke_run_of_the_xu2017_example_is_flagged_from_its_counters(tmp_path, env):
    workdir, e = env
    part = "device=loop and runtime=native and workload=*d*"
    cp = strata(
        "run", EXAMPLE, "--scale", "smoke", "--only", part, "--set", f"workdir={workdir}", "-o", tmp_path / "out",
        env=e, timeout=1500,
    )  # fmt: skip
    (r,) = results(tmp_path / "out")
    assert r["status"] == "ok", cp.stdout + cp.stderr
    node = counted(r)
    c = r["flags"]["cache"]
    # workload D's inserts wait on no sync (commitlog_sync periodic): the run is not write-bound, its reads decide
    assert node["settings"]["commitlog_sync"] == "periodic", node["settings"]
    d = r["metrics"]["durability"]  # as the node said it (issue 56): a write acknowledged before its sync
    assert not d["durable"] and d["settings"]["commitlog_sync"] == "periodic" and "commitlog_sync" in d["lax"], d
    assert c["suspect"] and not c.get("expected") and "its reads come from memory" in c["reason"], c
    mem = c["evidence"]["memory"]
    assert mem["fits"] is True and "records of" in c["reason"] and "limits.memory" in c["reason"], c
    print(
        f"\nxu2017 smoke, ycsb-d: {node['local_reads_in_run']:,} local reads, SSTables {node['sstable_mib']} MiB, "
        f"read per query after the run {node['sstables_read_after']}, key cache {node['key_cache']}; "
        f"data set {mem['data_set_bytes'] / MiB:,.1f} MiB beside {mem['memory_bytes'] / MiB:,.0f} MiB"
    )


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "workload:ycsb",
    "workload:ycsb@docker",
)
def test_a_data_set_beyond_its_containers_memory_limit_is_not_flagged(tmp_path, env):
    """1.2 million records (about 1.3 GiB of SSTables) in a container limited to 1 GiB: heap 512 MiB, the rest for
    the page cache charged to the container. Cassandra's own count of its SSTables is the data set judged."""
    workdir, e = env
    reads = {"workload": "c", "records": 1_200_000, "runtime": 20, "warmup": 5, "threads": 8,
             "properties": {"requestdistribution": "uniform"}}  # fmt: skip
    s = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "ycsb-beyond",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "8GiB"}],
            "filesystems": ["ext4"],
            "runtimes": ["docker:overlay2"],
            "paths": ["volume"],
            "workloads": [{"ycsb": reads}],
            "loads": [{"name": "limited", "limits": {"memory": "1GiB"}}],
        },
    )
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=2400)
    (r,) = results(tmp_path / "out")
    assert r["status"] == "ok", cp.stdout + cp.stderr
    node = counted(r)
    c = r["flags"]["cache"]
    mem = c["evidence"]["memory"]
    assert node["sstable_mib"] * MiB > 1 << 30 and mem["data_set_bytes"] == node["sstable_mib"] * MiB, (node, mem)
    assert mem["memory_bytes"] == 1 << 30 and "memory limit" in mem["memory_of"], mem
    assert mem["fits"] is False and not c["suspect"], c
    strata("report", tmp_path / "out", env=e, check=0)
    (svg,) = (tmp_path / "out" / "report" / "figures").glob("latency-*.svg")  # its reads are the device's: drawn
    drawn = svg.read_text()
    assert "latency breakdown, load " in drawn and "I/Os in flight" not in drawn  # YCSB's threads are its own
    print(
        f"\n1.2M records under 1 GiB: {r['metrics']['primary']['value']:,.0f} ops/s, SSTables "
        f"{node['sstable_mib']:,} MiB, {node['local_reads_in_run']:,} local reads, key cache {node['key_cache']}, "
        f"read per query after the run {node['sstables_read_after']}; device read "
        f"{r['metrics']['cache'].get('read_device_bytes', 'n/a')}"
    )


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:ycsb", "workload:ycsb@native")
def test_batch_commit_log_syncs_on_ext4_without_barriers_are_flagged_and_with_them_not(tmp_path, env):
    """Each write waits on a sync of the commit log (commitlog_sync: batch): ext4 mounted barrier=0 passes none
    of them on as a flush, and the flush check, given the syncs the writes waited on, says so."""
    workdir, e = env
    writes = {"workload": "a", "records": 2000, "runtime": 10, "warmup": 2, "threads": 4,
              "settings": {"commitlog_sync": "batch"}}  # fmt: skip
    s = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "ycsb-batch",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "3GiB"}],
            "filesystems": ["ext4", {"type": "ext4", "mount_options": ["barrier=0"]}],
            "runtimes": ["native"],
            "paths": ["bind"],
            "workloads": [{"ycsb": writes}],
        },
    )
    cp = strata("run", s, "-o", tmp_path / "out", env=e, timeout=1800)
    rs = {r["labels"]["filesystem"]: r for r in results(tmp_path / "out")}
    honest, dropped = rs["ext4"], rs["ext4-barrier0"]
    for r in (honest, dropped):
        assert r["status"] == "ok", r["flags"].get("failed")
        assert counted(r)["settings"]["commitlog_sync"] == "batch"
        assert r["metrics"]["durability"]["durable"] and r["metrics"]["durability"]["shown"] == "commitlog_sync=batch"
        syncs = r["writes"]["syncs"]
        assert "commit-log syncs" in syncs["what"] and syncs["count"] > 0, syncs
        c = r["flags"]["cache"]  # the data fits, but each write waits on its sync: compared, the flushes judged
        assert c["suspect"] and c.get("expected") and "write-bound" in c["reason"], c
    assert cp.returncode == 0, cp.stdout + cp.stderr
    f = honest["flags"]["flush"]
    assert not f["suspect"], f
    f = dropped["flags"]["flush"]
    assert f["suspect"] and "barrier=0" in f["reason"], f
    ev = f["evidence"]
    print(
        f"\ncommitlog_sync batch: ext4 owed {honest['writes']['syncs']['count']:,} syncs; barrier=0 owed "
        f"{dropped['writes']['syncs']['count']:,} and its device saw {ev['per_disk'][ev['disks'][0]]['flush_ios']} "
        "flushes"
    )
