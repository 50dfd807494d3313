"""The remote device through `strata run`: a storage host in a network namespace, the stacks above it as
on any device, the collectors of both sides in the result, and a target killed mid-run: that trial ends
as remote_lost and the next trial gets a fresh storage host."""

import os
import signal
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from strata.hosts.testbed import NETNS_PREFIX as TEST_HOST_PREFIX
from tests.coverage import covers

from .helpers import leftovers, podman_left, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    before = _namespaces()
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    assert _namespaces() <= before, "a storage host's namespace was left behind"
    if workdir.exists():
        workdir.rmdir()


def _namespaces() -> set[str]:
    d = Path("/run/netns")
    # a Swarm test bed's hosts are not storage hosts: another worker's test may hold them
    names = os.listdir(d) if d.is_dir() else []
    return {n for n in names if n.startswith("strata-") and not n.startswith(TEST_HOST_PREFIX)}


def _spec(workdir, **over):
    spec = {
        "name": "remote",
        "workdir": str(workdir),
        "devices": [{"type": "remote", "size": "768MiB"}],
        "filesystems": ["ext4"],
        "runtimes": ["native", "docker:overlay2"],
        "paths": ["bind", "volume"],
        "workloads": [{"fio": {"preset": "rr", "size": "64MiB", "runtime": 3, "ramp_time": 0}}],
        "loads": ["low"],
    }
    spec.update(over)
    return spec


@covers(
    "device:remote",
    "device:remote:nbd",
    "filesystem:ext4",
    "runtime:native",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:native/bind",
    "path:docker/bind",
    "path:docker/volume",
    "workload:fio",
    "workload:fio@native",
    "workload:fio@docker",
)
def test_every_stack_on_the_remote_device(tmp_path, env):
    workdir, e = env
    spec = write_spec(tmp_path / "s.yaml", _spec(workdir))
    strata("run", spec, "-o", tmp_path / "out", env=e, check=0, timeout=1800)
    rs = results(tmp_path / "out")
    assert sorted(r["stack"] for r in rs) == [
        "remote-nbd/ext4/docker:overlay2/bind",
        "remote-nbd/ext4/docker:overlay2/volume",
        "remote-nbd/ext4/native/bind",
    ]
    for r in rs:
        assert r["status"] == "ok", r["flags"]["failed"]
        dev = r["stack_facts"]["device"]
        assert dev["type"] == "remote" and dev["transport"] == "nbd" and dev["client_path"].startswith("nbdfuse")
        assert not r["flags"]["cache"]["suspect"], r["flags"]["cache"]  # the backing disk moved the bytes
        assert len(r["flags"]["cache"]["evidence"]["disks"]) >= 2  # the client device and the storage host's disk
        assert r["collectors"]["remote_procs"] and r["collectors"]["remote_link"]


@covers(
    "device:remote",
    "device:remote:nbd",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:fio",
    "workload:fio@native",
    "fault:remote_lost",
)
def test_a_killed_target_ends_the_trial_and_the_next_one_gets_a_fresh_storage_host(tmp_path, env):
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir,
            runtimes=["native"],
            paths=["bind"],
            repetitions=2,
            workloads=[{"fio": {"preset": "rr", "size": "64MiB", "runtime": 60, "ramp_time": 0}}],
        ),
    )
    out = tmp_path / "out"
    proc = start_strata("run", spec, "-o", out, env=e)

    def nbdkit() -> int | None:
        for line in leftovers(workdir):
            if line.startswith("process") and "nbdkit" in line:
                return int(line.split()[1].rstrip(":"))
        return None

    wait_for(lambda: bool(list(out.glob("trials/*/inst-0/stderr"))) and nbdkit(), 300, "fio on the remote device")
    seen = time.time()  # fio's 60 s began before this
    time.sleep(3)
    first = nbdkit()
    os.kill(first, signal.SIGKILL)
    t = time.monotonic()
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 1, text
    rs = sorted(results(out), key=lambda r: r["labels"]["repetition"])
    assert rs[0]["status"] == "failed" and rs[0]["flags"]["failed"]["category"] == "remote_lost", rs[0]["flags"]
    # ended when the target died, not at fio's own end, however slow the machine: the trial's end (whole seconds)
    ended = datetime.fromisoformat(rs[0]["finished_at"]).timestamp()
    assert ended < seen + 60, ended - seen
    assert rs[1]["status"] == "ok", rs[1]["flags"]["failed"]
    print(f"\nremote_lost after the kill; the whole run ended {time.monotonic() - t:.0f} s later")


@pytest.mark.parametrize(
    "runtime",
    [
        pytest.param(
            rt,
            marks=covers("fault:kill9", "command:cleanup"),  # killed before a trial ended: it stores none
        )
        for rt in ("podman:overlay", "docker:overlay2")
    ],
)  # fmt: skip
def test_kill9_on_a_remote_device_then_one_cleanup_leaves_nothing(tmp_path, env, runtime):
    """Regression: the storage host's nbdkit asks for PR_SET_PDEATHSIG, so it dies with a killed strata;
    the xfs above the remote device then shuts down (EIO), and a podman store on it, or a docker
    container whose layer is on it (its volume in use), could not be undone until the layers beneath
    were. One `strata cleanup` undoes everything and says what was lost with the failing layer."""
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir,
            filesystems=["xfs"],
            runtimes=[runtime],
            paths=["volume"],
            workloads=[{"fio": {"preset": "rr", "size": "64MiB", "runtime": 120, "ramp_time": 0}}],
        ),
    )
    out = tmp_path / "out"
    proc = start_strata("run", spec, "-o", out, env=e)
    wait_for(lambda: bool(list(out.glob("trials/*/inst-0/start"))), 600, "fio in the container")
    time.sleep(3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    cp = strata("cleanup", env=e, check=0)
    print(f"\n{cp.stdout}")
    assert "kept" not in cp.stdout, cp.stdout
    assert not list((Path(e["STRATA_STATE_DIR"]) / "journal").glob("*.jsonl")), cp.stdout
    assert leftovers(workdir) == [] and podman_left() == [], (leftovers(workdir), podman_left())
