"""What the device really did, on the real thing: the flushes that reach it (the flush flag), the writes it
really took (the absorbed flag), and the bytes each layer adds (write amplification): real loop and zram
devices, ext4 mounted with and without barriers and with data=journal, a tmpfs path in a private dockerd,
real fio and the Filebench engine."""

import json
import uuid
from pathlib import Path

import pytest

from strata.results.validity.absorbed import MIN_CHECKED_WRITES
from strata.results.validity.flushes import MIN_CHECKED_SYNCS
from strata.results.writes import MIN_AMPLIFIED_BYTES
from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec

pytestmark = pytest.mark.integration

# An fsync after every 4 KiB random write: each must reach the device as a flush. The flags judge only runs
# past their checks' own minimums (MIN_CHECKED_SYNCS, MIN_CHECKED_WRITES), which these 4 s runs pass a hundred
# times over: 9,873 fsyncs and 57,867 O_DIRECT random writes in 4 s on ext4 on a loop device, measured beside a
# chaos bench (2026-12-07). A busy machine slows them, never a hundredfold.
FSYNC = {"fio": {"name": "fsync", "rw": "randwrite", "bs": "4k", "size": "64MiB", "runtime": 4, "ramp_time": 1,
                 "options": {"fsync": 1}}}  # fmt: skip


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    if workdir.exists():
        workdir.rmdir()


def run(tmp_path, env, **spec):
    workdir, e = env
    doc = {"name": "writes", "workdir": str(workdir), "devices": [{"type": "loop", "size": "1GiB"}],
           "runtimes": ["native"], "paths": ["bind"], "loads": ["low"], **spec}  # fmt: skip
    strata("run", write_spec(tmp_path / "s.yaml", doc), "-o", tmp_path / "out", env=e, check=0)
    rs = results(tmp_path / "out")
    for r in rs:
        assert r["status"] == "ok", r["flags"]["failed"]
    return rs


def by(rs, label):
    return {r["labels"][label]: r for r in rs}


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:fio", "workload:fio@native")
def test_ext4_without_barriers_is_flagged_and_with_them_not(tmp_path, env):
    rs = by(run(tmp_path, env, filesystems=["ext4", {"type": "ext4", "mount_options": ["barrier=0"]}],
                workloads=[FSYNC]), "filesystem")  # fmt: skip
    honest, dropped = rs["ext4"], rs["ext4-barrier0"]
    for r in (honest, dropped):
        syncs = r["writes"]["syncs"]
        assert syncs["what"] == "fsync" and syncs["streams"] == 1 and syncs["count"] >= MIN_CHECKED_SYNCS, syncs
        assert syncs["count"] == pytest.approx(r["metrics"]["write"]["total_ios"], abs=2)  # one after each write
        loop = r["flags"]["flush"]["evidence"]["disks"][0]
        disk = r["collectors"]["diskstats"][loop]
        assert disk["write_cache"] == "write back" and "flush_ios" in disk and "discard_ios" in disk
        series = json.loads((tmp_path / "out" / r["artifacts"] / "series.json").read_text())
        assert len(series["diskstats"][loop]["flush_ios"]) == len(series["t"]) - 1  # in the per-second series
        assert r["writes"]["window"] == "measured"
        if r["writes"]["workload_bytes"] >= MIN_AMPLIFIED_BYTES:  # fsyncs are slow on a busy machine
            assert loop in r["writes"]["amplification"]
    f = honest["flags"]["flush"]
    assert not f["suspect"], f
    seen = f["evidence"]["per_disk"][f["evidence"]["disks"][0]]["flush_ios"]
    assert seen >= honest["writes"]["syncs"]["count"] * 0.9  # about one flush per fsync, measured 1.1 to 2.0
    f = dropped["flags"]["flush"]
    assert f["suspect"] and "barrier=0" in f["reason"] and "power failure" in f["reason"], f
    assert f["evidence"]["per_disk"][f["evidence"]["disks"][0]]["flush_ios"] < 0.1 * dropped["writes"]["syncs"]["count"]
    show = strata("show", tmp_path / "out", env=env[1], check=0).stdout
    assert any("ext4-barrier0" in ln and "NOFLUSH" in ln for ln in show.splitlines())
    assert not any("loop/ext4/" in ln and "NOFLUSH" in ln for ln in show.splitlines())


@covers("device:loop", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:fio", "workload:fio@native")
def test_o_direct_random_writes_into_ext4s_journal_are_flagged_and_on_plain_ext4_not(tmp_path, env):
    rs = by(run(tmp_path, env, filesystems=["ext4", {"type": "ext4", "mount_options": ["data=journal"]}],
                workloads=[{"fio": {"preset": "rw", "size": "128MiB", "runtime": 4, "ramp_time": 1}}]),
            "filesystem")  # fmt: skip
    plain, journal = rs["ext4"], rs["ext4-datajournal"]
    for r in (plain, journal):
        assert r["writes"]["direct"]["random"] and r["writes"]["direct"]["count"] >= MIN_CHECKED_WRITES
        assert r["writes"]["syncs"]["count"] == 0 and "flush" not in r["flags"]  # asked for none
    a = plain["flags"]["absorbed"]
    assert not a["suspect"], a
    assert a["evidence"]["device_merges"] < 0.1 * a["evidence"]["writes"]
    assert 0.8 < plain["writes"]["amplification"][a["evidence"]["disk"]] < 2.5  # ext4's journal, its lazy init
    a = journal["flags"]["absorbed"]
    assert a["suspect"] and "without data=journal" in a["reason"], a
    assert a["evidence"]["device_merges"] > 0.5 * a["evidence"]["writes"]
    assert not journal["flags"]["cache"]["suspect"]  # the bytes moved: only the writes' shape tells
    show = strata("show", tmp_path / "out", env=env[1], check=0).stdout
    assert any("ext4-datajournal" in ln and "ABSORBED" in ln for ln in show.splitlines())


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/tmpfs",
    "path:docker/volume",
    "workload:fio",
    "workload:fio@docker",
)
def test_a_tmpfs_path_in_docker_is_flagged_and_a_volume_not(tmp_path, env):
    rs = by(run(tmp_path, env, filesystems=["xfs"], runtimes=["docker:overlay2"], paths=["tmpfs", "volume"],
                workloads=[FSYNC]), "path")  # fmt: skip
    tmpfs, volume = rs["tmpfs"]["flags"]["flush"], rs["volume"]["flags"]["flush"]
    assert tmpfs["suspect"] and "tmpfs" in tmpfs["reason"] and "volume" in tmpfs["reason"], tmpfs
    assert rs["tmpfs"]["writes"]["syncs"]["count"] >= MIN_CHECKED_SYNCS
    assert not volume["suspect"], volume


@covers("device:zram", "filesystem:ext4", "runtime:native", "path:native/bind", "workload:fio", "workload:fio@native")
def test_a_device_without_a_volatile_cache_says_so_instead_of_a_flag(tmp_path, env):
    if not Path("/sys/class/zram-control").exists():
        pytest.skip("no zram on this kernel (modprobe zram)")
    (r,) = run(tmp_path, env, devices=[{"type": "zram", "size": "512MiB"}], filesystems=["ext4"], workloads=[FSYNC])
    f = r["flags"]["flush"]
    assert not f["suspect"] and "write through" in f["reason"], f
    assert r["collectors"]["diskstats"][f["evidence"]["disks"][0]]["write_cache"] == "write through"


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:filebench",
    "workload:filebench@native",
)
def test_varmail_records_its_fsyncs_and_the_devices_flushes(tmp_path, env):
    (r,) = run(tmp_path, env, filesystems=["ext4"],
               workloads=[{"filebench": {"personality": "varmail", "runtime": 5}}])  # fmt: skip
    fsyncs = sum(f["ops"] for f in r["metrics"]["flowops"] if f["type"] == "fsync")
    syncs = r["writes"]["syncs"]
    assert syncs["count"] == fsyncs > 100 and syncs["streams"] == 32, syncs  # 16 threads, 2 fsync flowops each
    f = r["flags"]["flush"]
    loop = f["evidence"]["disks"][0]
    assert r["collectors"]["diskstats"][loop]["flush_ios"] > 0
    assert f["evidence"]["per_disk"][loop]["flush_ios"] >= fsyncs / 32 and not f["suspect"], f
    assert r["writes"]["direct"] is None and "absorbed" not in r["flags"]  # buffered: not judged
