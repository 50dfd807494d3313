"""strata doctor on the real host: what it can build, with the daemon's own reason when not."""

from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import kernel_has, strata

pytestmark = pytest.mark.integration


def _rows(text):
    rows = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0] in ("host", "device", "filesystem", "runtime", "workload", "cgroup", "tool"):
            rows[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
    return rows


@covers("command:doctor")
def test_doctor_probes_every_storage_driver():
    scratch = Path("/var/tmp/strata-doctor")
    was_there = scratch.exists()
    rows = _rows(strata("doctor", check=0).stdout)
    assert was_there or not scratch.exists(), "doctor left its scratch folder behind"
    for ok in (
        "root",
        "loop",
        "ext4",
        "xfs",
        "btrfs",
        "native",
        "docker:overlay2",
        "docker:btrfs",
        "docker:vfs",
        "fio",
    ):
        assert rows[ok][0] == "ok", (ok, rows[ok])
    # where the kernel lacks a driver's module (a probe of this host), the daemon's own words, not a guess
    if not kernel_has("dm_mod"):
        assert rows["docker:devicemapper"] == (
            "NO",
            "failed to start daemon: error initializing graphdriver: driver not supported",
        )
    else:  # the daemon's verdict either way, never a guess (newer dockerd versions dropped the driver)
        assert rows["docker:devicemapper"][0] == "ok" or rows["docker:devicemapper"][1], rows["docker:devicemapper"]
    if not kernel_has("aufs"):
        assert "AUFS was not found" in rows["docker:aufs"][1]


@covers("command:doctor")
def test_doctor_quick_does_not_claim_drivers_work():
    rows = _rows(strata("doctor", "--quick", check=0).stdout)
    assert rows["docker:devicemapper"][0] == "?" and "not probed" in rows["docker:devicemapper"][1]
