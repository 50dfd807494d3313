"""`repetitions: auto` on the real thing: a clearly slower stack is raced out before a close pair (issue 21)."""

import json
import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec

pytestmark = pytest.mark.integration


@covers(
    "device:loop",
    "filesystem:xfs",
    "filesystem:btrfs",
    "path:native/bind",
    "workload:fio",
    "workload:fio@native",
    "runtime:native",
)
def test_auto_stops_a_clearly_different_stack_before_a_close_one(tmp_path):
    """Random writes on one loop device: btrfs (copy-on-write) is several times slower than xfs, and xfs
    with `noatime` is xfs again. After the first look btrfs is eliminated; the close pair is not raced out
    before it. (3 s trials after a 2 s ramp: with 2 s and 1 s, a busy machine once gave xfs trials of 25k to
    70k IOPS, and btrfs was eliminated only at the second look, with the pair.)"""
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "decide",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "768MiB"}],
            "filesystems": ["xfs", {"type": "xfs", "name": "xfs-noatime", "mount_options": ["noatime"]}, "btrfs"],
            "runtimes": ["native"],
            "paths": ["bind"],
            "workloads": [{"fio": {"preset": "rw", "size": "128MiB", "runtime": 3, "ramp_time": 2}}],
            "loads": [{"name": "mid", "numjobs": 2, "iodepth": 16}],
            "repetitions": "auto",
            "min_repetitions": 3,
            "max_repetitions": 6,
        },
    )
    try:
        strata("run", spec, "-o", tmp_path / "out", env=env, check=0, timeout=1800)
    finally:
        strata("cleanup", "--force", env=env)
    assert leftovers(workdir) == []
    rs = results(tmp_path / "out")
    assert all(r["status"] == "ok" for r in rs), [r["flags"]["failed"] for r in rs if r["status"] != "ok"]
    n = {}
    for r in rs:
        n[r["labels"]["filesystem"]] = n.get(r["labels"]["filesystem"], 0) + 1
        assert r["design"] == {"repetitions": "auto", "min": 3, "max": 6, "looks": [3, 6], "margin": 0.05}
    run = json.loads(next((tmp_path / "out" / "runs").glob("*.json")).read_text())
    stops = {k.split("/")[1]: v for k, v in run["repetitions"].items()}
    iops = {fs: sum(r["metrics"]["primary"]["value"] for r in rs if r["labels"]["filesystem"] == fs) / k
            for fs, k in n.items()}  # fmt: skip
    print(f"trials per stack {n}; mean IOPS {iops}; stopped {stops}")
    assert stops["btrfs"]["stopped"] == "eliminated" and n["btrfs"] == 3, (stops, iops)
    assert stops["btrfs"]["trials"] == 3
    # The close pair: the leader is one of them, and neither stops before btrfs. Whether the other one goes on
    # is not for this test to say: the rounds are blocks, so a gap that holds in every round (xfs 87k against
    # xfs-noatime 79k IOPS in all three, once in CI) may be decided at the first look. How often such a
    # decision is wrong is the rule's error rate, measured by bench/decisions_sim.py, not by one real run.
    assert any(stops[fs]["stopped"] != "eliminated" for fs in ("xfs", "xfs-noatime")), (n, stops)
    for fs in ("xfs", "xfs-noatime"):
        assert n[fs] >= n["btrfs"], (n, stops)
    assert "variance" in run and run["variance"], "the variance components are stored with the run"
    report = strata("report", tmp_path / "out", "-o", tmp_path / "report", env=env, check=0)
    assert "advice:" in report.stdout
