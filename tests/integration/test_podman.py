"""The podman runtime on the real thing: rootful Podman with a private store on a loop file system, real
fio in containers on every path, Podman's own words for what it cannot do, and nothing left behind."""

import signal
import uuid
from pathlib import Path

import pytest

from .helpers import leftovers, podman_left, results, start_strata, strata, tool_version, wait_for, write_spec

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


def test_fio_in_podman_on_every_path_and_driver(tmp_path, env):
    workdir, e = env
    spec = write_spec(tmp_path / "s.yaml", _spec(workdir, exclude=[{"runtime": "podman:vfs", "path": "volume"}]))
    strata("run", spec, "-o", tmp_path / "out", env=e, check=0, timeout=1800)
    rs = results(tmp_path / "out")
    assert len(rs) == 5
    for r in rs:
        assert r["status"] == "ok", r["flags"]["failed"]
        assert r["metrics"]["read"]["iops"] > 100 and len(r["metrics"]["instances"]) == 2
        f = r["stack_facts"]["runtime"]
        assert f["runtime"] == "podman" and f["podman_version"] == tool_version("podman", "--version")
        assert f["data_root"].endswith("/podman") and f["backing_fs"] == "xfs"
        assert f["locks"].startswith("/run/strata/p-") and f["locks"].endswith("/libpod/locks"), f["locks"]
        assert "ulimits" in f  # this VM has no CAP_SYS_RESOURCE: detected and recorded
        assert not r["flags"]["cache"]["suspect"], r["flags"]["cache"]
        assert r["collectors"]["cgroups"], "the containers' cgroups were sampled"
    drivers = {r["stack_facts"]["runtime"]["storage_driver"] for r in rs}
    assert drivers == {"overlay", "vfs"}


def test_podman_says_what_it_cannot_do(tmp_path, env):
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(workdir, runtimes=["podman:devicemapper", "podman:zfs"], paths=["layer"], loads=["low"]),
    )
    cp = strata("run", spec, "-o", tmp_path / "out", env=e)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    by = {r["labels"]["runtime"]: r for r in results(tmp_path / "out")}
    assert by["podman:devicemapper"]["status"] == "unsupported"
    assert "driver not supported" in by["podman:devicemapper"]["flags"]["failed"]["message"]
    assert "prerequisites for driver not satisfied" in by["podman:zfs"]["flags"]["failed"]["message"]


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
