"""The cache flag on the real cache case of this kernel: fuse-overlayfs accepts O_DIRECT
without honoring it, so the page cache answers while the device idles (docs/limits.md)."""

import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec

pytestmark = pytest.mark.integration


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:docker",
    "runtime:docker:overlay2",
    "runtime:docker:fuse-overlayfs",
    "path:docker/layer",
    "workload:fio",
    "workload:fio@docker",
)
def test_fuse_overlayfs_is_flagged_and_overlay2_is_not(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "cache",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "1GiB"}],
            "filesystems": ["xfs"],
            "runtimes": ["docker:overlay2", "docker:fuse-overlayfs"],
            "paths": ["layer"],
            "workloads": [{"fio": {"preset": "rr", "size": "128MiB", "runtime": 5, "ramp_time": 1}}],
            "loads": [{"numjobs": 4, "iodepth": 16}],
        },
    )
    try:
        strata("run", spec, "-o", tmp_path / "out", env=env, check=0)
        by = {r["labels"]["runtime"]: r for r in results(tmp_path / "out")}
        fuse, overlay = by["docker:fuse-overlayfs"], by["docker:overlay2"]
        for r in (fuse, overlay):
            assert r["status"] == "ok", r["flags"]["failed"]
        ev = fuse["flags"]["cache"]["evidence"]
        assert fuse["flags"]["cache"]["suspect"], fuse["flags"]["cache"]
        assert "cache answered" in fuse["flags"]["cache"]["reason"]
        loop = ev["disks"][0]
        assert ev["per_disk"][loop]["read_bytes"] < 0.5 * ev["read_workload_bytes"]
        assert not overlay["flags"]["cache"]["suspect"], overlay["flags"]["cache"]
        show = strata("show", tmp_path / "out", env=env, check=0).stdout
        assert any("fuse-overlayfs" in ln and "CACHE" in ln for ln in show.splitlines())
    finally:
        strata("cleanup", "--force", env=env)
        assert leftovers(workdir) == []
