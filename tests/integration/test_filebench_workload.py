"""The filebench workload on the real thing: the engine natively and baked into the image, N containers."""

import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata, write_spec

pytestmark = pytest.mark.integration


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:native/bind",
    "path:docker/bind",
    "path:docker/volume",
    "workload:filebench",
    "workload:filebench@native",
    "workload:filebench@docker",
)
def test_personalities_natively_and_in_two_containers(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "fb",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "1GiB"}],  # the data root holds the ~250 MB image
            "filesystems": ["ext4"],
            "runtimes": ["native", "docker:overlay2"],
            "paths": ["bind", "volume"],
            "workloads": [
                {
                    "filebench": {
                        "personality": ["webserver", "varmail"],
                        "runtime": 3,
                        # webserver's log grows ~5% of the bytes read: small appends keep it in 1 GiB
                        "set": {"nthreads": 2, "nfiles": 200, "meanappendsize": 1024},
                    }
                },
                {"filebench": {"personality": "randomfileaccess", "runtime": 3}},
            ],
            "loads": [{"name": "one"}, {"name": "two", "containers": 2}],
            "exclude": [{"runtime": "native", "load": "two"}, {"runtime": "docker:*", "path": "bind", "load": "one"}],
        },
    )
    try:
        strata("run", spec, "-o", tmp_path / "out", env=env, check=0)
        rs = results(tmp_path / "out")
        assert len(rs) == 12
        for r in rs:
            assert r["status"] == "ok", r["flags"]["failed"]
            m = r["metrics"]
            assert m["kind"] == "filebench" and m["primary"]["ops_per_s"] > 0
            assert len(m["instances"]) == r["trial"]["load"]["containers"]
            assert r["flags"]["cache"]["expected"] and not r["warnings"]
            if r["trial"]["load"]["containers"] == 2:  # the engines made their filesets, then started together
                sync = r["flags"]["sync"]
                assert sync["basis"] == "workload" and sync["overlap"] >= 0.9, sync
            assert any(f["ops"] > 0 and f["latency_us"]["p99"] for f in m["flowops"])
        web = next(r for r in rs if r["labels"]["workload"] == "webserver" and r["labels"]["load"] == "two")
        ops = {f["name"]: f["ops"] for f in web["metrics"]["flowops"]}
        # webserver: 10 reads per log append (the personality's own mix)
        assert 8 <= ops["readfile1"] * 10 / max(1, ops["appendlog"]) / 1 <= 12 * 10
        assert abs(ops["readfile1"] - ops["readfile10"]) <= 0.05 * ops["readfile1"] + 200
    finally:
        strata("cleanup", "--force", env=env)
        assert leftovers(workdir) == []


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:native",
    "path:native/bind",
    "workload:filebench",
    "workload:filebench@native",
    "fault:disk_full",
)
def test_a_log_that_fills_the_file_system_is_disk_full(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = write_spec(
        tmp_path / "s.yaml",
        {
            "name": "full",
            "workdir": str(workdir),
            "devices": [{"type": "loop", "size": "64MiB"}],
            "filesystems": ["ext4"],
            "runtimes": ["native"],
            "paths": ["bind"],
            # webserver's log grows by 8 KiB per append: the 64 MiB fill, and the run ends there (disk_full), seconds
            # in on a quiet machine; the 300 s runtime is only a ceiling, so that a busy one fills it too
            "workloads": [
                {"filebench": {"personality": "webserver", "runtime": 300, "set": {"nthreads": 2, "nfiles": 50}}},
                {"filebench": {"personality": "varmail", "runtime": 2, "set": {"nthreads": 2, "nfiles": 50}}},
            ],
        },
    )
    try:
        strata("run", spec, "-o", tmp_path / "out", env=env, check=1)
        by = {r["labels"]["workload"]: r for r in results(tmp_path / "out")}
        failed = by["webserver"]["flags"]["failed"]
        assert by["webserver"]["status"] == "failed" and failed["category"] == "disk_full", failed
        assert "larger device" in failed["message"]
        assert by["varmail"]["status"] == "ok"  # the run went on: each trial's files are removed after it
    finally:
        strata("cleanup", "--force", env=env)
        assert leftovers(workdir) == []
