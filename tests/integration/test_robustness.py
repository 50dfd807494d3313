"""Faults named and handled on the real thing (issue 14): a container killed by the OOM killer ends its trial
at once as `oom`; a dockerd that dies mid-run is started again for the next trials; 32 containers do their
I/O together, judged from fio's own timestamps."""

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    if workdir.exists():
        workdir.rmdir()


def _spec(workdir, **over):
    spec = {
        "name": "rb",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "1GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["docker:overlay2"],
        "paths": ["volume"],
        "workloads": [{"fio": {"preset": "rr", "size": "32MiB", "runtime": 3, "ramp_time": 0}}],
        "loads": ["low"],
    }
    spec.update(over)
    return spec


@covers(
    "device:loop",
    "filesystem:xfs",
    "path:docker/volume",
    "workload:fio",
    "workload:fio@docker",
    "runtime:docker",
    "runtime:docker:overlay2",
    "fault:oom",
    "fault:oom@docker",
)
def test_an_oom_killed_container_ends_the_trial_at_once(tmp_path, env):
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir,
            workloads=[{"fio": {"preset": "rr", "size": "256MiB", "bs": "64MiB", "runtime": 300, "ramp_time": 0}}],
            loads=[{"numjobs": 1, "iodepth": 16, "limits": {"memory": "96MiB"}}],
        ),
    )
    t = time.monotonic()
    cp = strata("run", spec, "-o", tmp_path / "out", env=e)
    (r,) = results(tmp_path / "out")
    assert r["status"] == "failed" and r["flags"]["failed"]["category"] == "oom", (r["flags"]["failed"], cp.stdout)
    # fio would run 300 s, and the trial's deadline is later still: a trial that ended before fio's own end was
    # ended by the OOM kill (how soon is printed: seconds, on a quiet machine)
    assert r["duration_s"] < 300, r["duration_s"]
    print(f"\noom trial ended after {r['duration_s']:.1f} s (whole run {time.monotonic() - t:.0f} s)")


def _daemon_pid(state: Path) -> int | None:
    """The pid of the run's private dockerd, from its journal."""
    from strata.stack.journal import pending

    for j in (state / "journal").glob("*.jsonl"):
        for entry in pending(j):
            if entry["kind"] == "daemon" and entry["data"].get("pid"):
                return entry["data"]["pid"]
    return None


@covers(
    "device:loop",
    "filesystem:xfs",
    "path:docker/volume",
    "workload:fio",
    "workload:fio@docker",
    "runtime:docker",
    "runtime:docker:overlay2",
    "fault:daemon_died",
)
@pytest.mark.parametrize("when", ["at-the-barrier", "mid-io"])
def test_a_dead_dockerd_is_started_again_for_the_next_trials(tmp_path, env, when):
    """Killed as its first container is ready (strata at the barrier, or at `docker wait`'s start), or 2 s into
    the I/O: either way the trial is `daemon_died`, and a new daemon runs the next trials (issue 62: the client's
    EOF had come before the daemon's exit and was read as a runtime error, and the dead daemon was kept)."""
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir, repetitions=3, workloads=[{"fio": {"preset": "rr", "size": "32MiB", "runtime": 8, "ramp_time": 0}}]
        ),
    )
    out = tmp_path / "out"
    proc = start_strata("run", spec, "-o", out, env=e)
    state = Path(e["STRATA_STATE_DIR"])
    wait_for(lambda: bool(list(out.glob("trials/*/inst-0/ready"))), 300, "the first container to be ready", 0.02)
    if when == "mid-io":
        time.sleep(2)
    pid = _daemon_pid(state)
    assert pid, "no dockerd of this run found in its journal"
    os.kill(pid, signal.SIGKILL)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, text
    rs = sorted(results(out), key=lambda r: r["labels"]["repetition"])
    cats = [(r["status"], (r["flags"].get("failed") or {}).get("category")) for r in rs]
    assert cats[0] == ("failed", "daemon_died"), cats
    assert [c for c in cats[1:]] == [("ok", None), ("ok", None)], (cats, text[-3000:])


@covers(
    "device:loop",
    "filesystem:xfs",
    "path:docker/volume",
    "workload:fio",
    "workload:fio@docker",
    "runtime:docker",
    "runtime:docker:overlay2",
)
def test_32_containers_do_their_io_together(tmp_path, env):
    """Files laid out before the barrier, all released at once: the instances' own I/O windows (fio's JSON)
    overlap for at least 90% of the runtime."""
    workdir, e = env
    spec = write_spec(
        tmp_path / "s.yaml",
        _spec(
            workdir,
            devices=[{"type": "loop", "size": "2GiB"}],
            workloads=[{"fio": {"preset": "rr", "size": "16MiB", "runtime": 10, "ramp_time": 1}}],
            loads=[{"numjobs": 1, "iodepth": 4, "containers": 32}],
        ),
    )
    strata("run", spec, "-o", tmp_path / "out", env=e, check=0, timeout=1800)
    (r,) = results(tmp_path / "out")
    assert r["status"] == "ok", r["flags"]["failed"]
    sync = r["flags"]["sync"]
    print(
        f"\n32 containers: I/O overlap {sync['overlap']:.1%}, I/O start skew {sync['skew_s']:.2f} s, "
        f"wrapper start skew {sync['wrapper_skew_s']:.2f} s"
    )
    assert sync["basis"] == "workload" and sync["instances"] == 32
    assert sync["overlap"] >= 0.90 and not sync["suspect"], sync
