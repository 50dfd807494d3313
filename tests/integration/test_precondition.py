"""`precondition:` on real loop devices, and reads of blocks never written caught for what they are: a sparse
loop image on xfs read with O_DIRECT (its holes read as zeros without the disk below) is flagged "the data was
never written"; the same image after `fill` is not. A loop device over ramfs (which has no fallocate, so the
loop device takes no discard) refuses `purge` with the reason."""

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec

pytestmark = pytest.mark.integration

READ = {"fio": {"name": "rr", "rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 3, "ramp_time": 1}}
MIB = 1 << 20


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    if workdir.exists():
        workdir.rmdir()


@pytest.fixture
def xfs_dir(tmp_path):
    """A directory on xfs over a loop device of its own (the disk below the sparse image: its reads are seen)."""
    image, mnt = tmp_path / "xfs.img", tmp_path / "xfs"
    mnt.mkdir()
    sh("truncate", "-s", "1G", str(image))
    sh("mkfs.xfs", "-q", "-f", str(image))
    dev = sh("losetup", "--find", "--show", "--direct-io=on", str(image))
    try:
        sh("mount", dev, str(mnt))
        try:
            yield mnt, Path(dev).name
        finally:
            sh("umount", str(mnt))
    finally:
        sh("losetup", "-d", dev)


def _run(tmp_path, env, device: dict, name: str, check: int = 0) -> tuple[list[dict], subprocess.CompletedProcess]:
    workdir, e = env
    spec = write_spec(tmp_path / f"{name}.yaml", {
        "name": name, "workdir": str(workdir), "devices": [device], "filesystems": ["raw"], "runtimes": ["native"],
        "paths": ["device"], "workloads": [READ], "loads": [{"name": "qd4", "iodepth": 4}], "repetitions": 1,
    })  # fmt: skip
    cp = strata("run", spec, "-o", tmp_path / name, env=e, check=check)
    return results(tmp_path / name), cp


@covers(
    "device:loop",
    "filesystem:raw",
    "path:native/device",
    "workload:fio",
    "workload:fio@native",
    "runtime:native",
    "command:validate",
    "command:show",
)
def test_reads_of_a_sparse_image_are_flagged_never_written_and_after_fill_not(tmp_path, env, xfs_dir):
    mnt, below = xfs_dir
    loop = {"type": "loop", "size": "256MiB", "sparse": True}
    [sparse], _ = _run(tmp_path, env, {**loop, "backing_file": str(mnt / "sparse.img")}, "sparse")
    assert sparse["status"] == "ok", sparse.get("error")
    cache = sparse["flags"]["cache"]
    assert cache["suspect"] and cache["reason"].startswith("the data was never written"), cache
    assert "precondition: fill" in cache["reason"]
    written = cache["evidence"]["written"]
    assert written["size_bytes"] == 256 * MIB and written["share"] < 0.05, written
    assert below in cache["evidence"]["disks"]  # the xfs disk under the image: it moved (almost) nothing
    show = strata("show", tmp_path / "sparse", env=env[1], check=0).stdout
    assert "CACHE" in show

    filled = {**loop, "backing_file": str(mnt / "filled.img"), "precondition": {"fill": 1}}
    cp = strata("validate", write_spec(tmp_path / "v.yaml", {
        "name": "v", "workdir": str(env[0]), "devices": [filled], "filesystems": ["raw"], "runtimes": ["native"],
        "paths": ["device"], "workloads": [READ], "loads": ["low"]}), env=env[1], check=0)  # fmt: skip
    assert "precondition (once per device built" in cp.stdout
    assert "fill: 1 × 256 MiB = 256 MiB of sequential writes" in cp.stdout, cp.stdout
    [after], _ = _run(tmp_path, env, filled, "filled")
    assert after["status"] == "ok", after.get("error")
    done = after["stack_facts"]["device"]["precondition"]["fill"]
    assert done["passes"] == 1 and done["bytes"] == 256 * MIB and done["seconds"] > 0, done
    cache = after["flags"]["cache"]
    assert not cache["suspect"], cache
    assert cache["evidence"]["written"]["share"] == 1.0


@covers("device:loop", "filesystem:raw", "path:native/device", "workload:fio", "workload:fio@native", "runtime:native")
def test_purge_fill_and_steady_rounds_on_a_loop_device(tmp_path, env):
    pre = {"purge": True, "fill": 2, "steady": {"round": 5, "max_rounds": 7}}
    [r], _ = _run(tmp_path, env, {"type": "loop", "size": "128MiB", "precondition": pre}, "pre")
    assert r["status"] == "ok", r.get("error")
    done = r["stack_facts"]["device"]["precondition"]
    assert done["purge"]["tool"] == "blkdiscard"
    assert done["fill"]["bytes"] == 2 * 128 * MIB and done["fill"]["bw_bytes"] > 0
    steady = done["steady"]
    assert 5 <= len(steady["rounds"]) <= 7 and all(x["iops"] > 0 for x in steady["rounds"]), steady
    window = steady["window"]
    assert window["rounds"] == [len(steady["rounds"]) - 4, len(steady["rounds"])]
    assert steady["reached"] == window["holds"]  # a loop device on a busy VM need not settle in 7 rounds
    assert steady["reached"] or len(steady["rounds"]) == 7


@covers("fault:provision", "command:run")  # the device's build fails: no trial runs
def test_purge_is_refused_where_the_device_takes_no_discard(tmp_path, env):
    ramfs = tmp_path / "ramfs"
    ramfs.mkdir()
    sh("mount", "-t", "ramfs", "ramfs", str(ramfs))
    try:  # a loop device over ramfs: no fallocate there, so no discard (and no O_DIRECT: a buffered loop device)
        device = {"type": "loop", "size": "64MiB", "sparse": True, "direct_io": False,
                  "backing_file": str(ramfs / "img"), "precondition": {"purge": True}}  # fmt: skip
        rs, cp = _run(tmp_path, env, device, "nodiscard", check=None)
        assert rs and all(r["status"] == "failed" for r in rs), rs
        failed = json.dumps(rs[0]["flags"]["failed"])
        assert "takes no discard" in failed and "remove `purge`" in failed, failed
    finally:
        sh("umount", str(ramfs))
