"""The podman runtime on the real thing: rootful Podman with a private store on a loop file system, real
fio in containers on every path, Podman's own words for what it cannot do, and nothing left behind."""

import signal
import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import (
    kernel_has,
    leftovers,
    podman_left,
    results,
    start_strata,
    strata,
    tool_version,
    wait_for,
    write_spec,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    assert not podman_left(), podman_left()
    if workdir.exists():
        workdir.rmdir()


def _spec(workdir, **over):
    spec = {
        "name": "pm",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "1GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["podman:overlay", "podman:vfs"],
        "paths": ["layer", "volume", "bind"],
        "workloads": [{"fio": {"preset": "rr", "size": "32MiB", "runtime": 2, "ramp_time": 0}}],
        "loads": [{"numjobs": 1, "iodepth": 4, "containers": 2}],
    }
    spec.update(over)
    return spec


@covers(
    "device:loop",
    "filesystem:xfs",
    "filesystem:raw",
    "runtime:podman",
    "runtime:podman:overlay",
    "runtime:podman:vfs",
    "path:podman/layer",
    "path:podman/volume",
    "path:podman/bind",
    "path:podman/tmpfs",
    "path:podman/device",
    "workload:fio",
    "workload:fio@podman",
)
def test_fio_in_podman_on_every_path_and_driver(tmp_path, env):
    workdir, e = env
    spec = _spec(
        workdir,
        filesystems=["xfs", "raw"],
        paths=["layer", "volume", "bind", "tmpfs", "device"],
        exclude=[{"runtime": "podman:vfs", "path": "volume"}, {"runtime": "podman:vfs", "filesystem": "raw"}],
    )
    strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=e, check=0, timeout=1800)
    rs = results(tmp_path / "out")
    assert sorted((r["labels"]["runtime"], r["labels"]["path"]) for r in rs) == [
        ("podman:overlay", "bind"),
        ("podman:overlay", "device"),
        ("podman:overlay", "layer"),
        ("podman:overlay", "tmpfs"),
        ("podman:overlay", "volume"),
        ("podman:vfs", "bind"),
        ("podman:vfs", "layer"),
        ("podman:vfs", "tmpfs"),
    ]
    for r in rs:
        assert r["status"] == "ok", r["flags"]["failed"]
        assert r["metrics"]["read"]["iops"] > 0 and len(r["metrics"]["instances"]) == 2
        f = r["stack_facts"]["runtime"]
        assert f["runtime"] == "podman" and f["podman_version"] == tool_version("podman", "--version")
        assert f["data_root"].endswith("/podman")
        assert f["backing_fs"] == ("xfs" if r["labels"]["path"] != "device" else f["backing_fs"])
        assert f["locks"].startswith("/run/strata/p-") and f["locks"].endswith("/libpod/locks"), f["locks"]
        assert "ulimits" in f  # this VM has no CAP_SYS_RESOURCE: detected and recorded
        if r["labels"]["path"] != "tmpfs":  # tmpfs is memory: the device moves nothing, nor should it
            assert not r["flags"]["cache"]["suspect"], r["flags"]["cache"]
        assert r["collectors"]["cgroups"], "the containers' cgroups were sampled"
    drivers = {r["stack_facts"]["runtime"]["storage_driver"] for r in rs}
    assert drivers == {"overlay", "vfs"}


@covers(
    "device:loop",
    "filesystem:btrfs",
    "runtime:podman",
    "runtime:podman:btrfs",
    "path:podman/layer",
    "path:podman/volume",
    "workload:fio",
    "workload:fio@podman",
)
def test_the_btrfs_driver_on_btrfs(tmp_path, env):
    """Podman's btrfs driver keeps each layer in a subvolume of its own, which the store's removal must delete as
    a subvolume (`rm --one-file-system` does not enter it): a run, then nothing left."""
    workdir, e = env
    spec = _spec(workdir, filesystems=["btrfs"], runtimes=["podman:btrfs"], paths=["layer", "volume"])
    strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=e, check=0, timeout=1800)
    rs = results(tmp_path / "out")
    assert sorted(r["labels"]["path"] for r in rs) == ["layer", "volume"]
    for r in rs:
        assert r["status"] == "ok", r["flags"]["failed"]
        f = r["stack_facts"]["runtime"]
        assert f["storage_driver"] == "btrfs" and f["backing_fs"] == "btrfs", f
        assert r["metrics"]["read"]["iops"] > 0 and not r["flags"]["cache"]["suspect"], r["flags"]["cache"]


@covers(
    "refused:runtime:podman:devicemapper",
    "refused:runtime:podman:zfs",
    "refused:runtime:podman:aufs",
    "fault:unsupported",
)
def test_podman_says_what_it_cannot_do(tmp_path, env):
    workdir, e = env
    drivers = ["podman:devicemapper", "podman:zfs", "podman:aufs"]
    spec = write_spec(tmp_path / "s.yaml", _spec(workdir, runtimes=drivers, paths=["layer"], loads=["low"]))
    cp = strata("run", spec, "-o", tmp_path / "out", env=e)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    by = {r["labels"]["runtime"]: r for r in results(tmp_path / "out")}
    assert sorted(by) == sorted(drivers)
    # Podman's own words where a probe of this kernel makes them certain (its module absent); else its verdict,
    # whichever it is: a run, or a refusal that says why
    words = {
        "podman:devicemapper": ("driver not supported", "dm_mod"),
        "podman:zfs": ("prerequisites for driver not satisfied", None),  # the store is on xfs, not zfs
        "podman:aufs": ("kernel does not support aufs", "aufs"),
    }
    for runtime, (text, module) in words.items():
        r = by[runtime]
        if module is None or not kernel_has(module):
            assert r["status"] == "unsupported" and text in r["flags"]["failed"]["message"], r["flags"]["failed"]
        else:
            assert r["status"] == "ok" or r["flags"]["failed"]["message"], r["flags"]["failed"]


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill9_then_cleanup_leaves_nothing(tmp_path, env):
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir,
            runtimes=["podman:overlay"],
            paths=["volume"],
            workloads=[{"fio": {"preset": "rr", "size": "32MiB", "runtime": 120, "ramp_time": 0}}],
        ),
    )
    proc = start_strata("run", spec, "-o", tmp_path / "out", env=e)
    wait_for(lambda: bool(list((tmp_path / "out").glob("trials/*/inst-1/start"))), 600, "the containers to run")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert podman_left(), "the containers should outlive a killed strata"
    cp = strata("cleanup", env=e, check=0)
    assert "podman-store" in cp.stdout
