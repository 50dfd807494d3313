"""The mechanics below the ycsb workload on the real thing: a node that fails to start or is not
ready in time fails with the tail of its log, and the jars need no network once cached. (The
workload itself, natively, in containers, as a cluster, with a killed node and after kill -9, is
tested through `strata run` in test_ycsb_run.py.) Data on an ext4 file system on a loop device
made for the test; every JVM, directory, mount and loop device is removed at the end (checked).
The jars come from strata's cache (assembled with Maven on first use, which needs Maven Central once).
"""

import os
import shutil
import uuid
from pathlib import Path

import pytest

from strata.core.errors import StrataError, TrialFailure
from strata.stack.devices.loop import LOOP
from strata.stack.devices.loop import LoopParams as LoopDevice
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.filesystems.mkfs import EXT4
from strata.stack.journal import Journal
from strata.workloads.ycsb import cassandra, jars, node
from tests.coverage import covers

from . import ledger
from .helpers import leftovers, wait_for

pytestmark = pytest.mark.integration
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
            ledger.built("device:loop", "filesystem:ext4")
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


@covers("device:loop", "filesystem:ext4", "fault:tool_error")  # a Cassandra node, no YCSB run
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
    ledger.failed(e.value.category, "native")
    assert e.value.category == "tool_error"
    assert "no_such_option_xyz" in e.value.stderr and "exited while starting" in str(e.value)


@covers("device:loop", "filesystem:ext4", "fault:timeout")  # a Cassandra node, no YCSB run
def test_node_not_ready_in_time_fails_with_its_log(ext4, homes):
    workdir, mnt, journal = ext4
    cfg = native(homes, workdir, mnt, name="t")[0]
    with (
        node.node_dir(journal, Path(cfg.data_dir)),
        node.node_dir(journal, Path(cfg.conf_dir)),
        node.native_node(cfg, jars.jar_names(homes[0]), journal, workdir / "t0.log") as n,
    ):
        # a few log lines first (under load the first second may hold fewer than the 200 characters checked)
        wait_for(lambda: len(n.read_log()) > 1000, 120, "the first log lines")
        with pytest.raises(TrialFailure) as e:
            n.wait_ready(timeout_s=1)
        ledger.failed(e.value.category, "native")
        pid = n.pid
    assert e.value.category == "timeout" and "was not ready within 1 s" in str(e.value)
    log = (workdir / "t0.log").read_text()
    assert len(e.value.stderr) > 200 and e.value.stderr[-200:] in log  # the tail of the node's log
    assert e.value.stderr[-200:] in str(e.value)
    assert not Path(f"/proc/{pid}").exists() or "CassandraDaemon" not in Path(f"/proc/{pid}/cmdline").read_text()


@covers()  # the jars' cache: no trial
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
