"""The podman runtime without root: its calls, rlimits, impossible combinations, and the shorthand."""

from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.stack.filesystems import FilesystemParams
from strata.stack.runtimes import podman

DATA = {
    "id": "ab12",
    "driver": "overlay",
    "root": "/mnt/x/podman",
    "runroot": "/run/strata/p-ab12",
    "cgroup_parent": "strata-podman-ab12",
}


def test_every_call_names_the_private_store():
    argv = podman.global_args(DATA)
    assert argv[:4] == ["--root", "/mnt/x/podman", "--runroot", "/run/strata/p-ab12"]
    assert "--storage-driver" in argv and "cgroupfs" in argv
    assert podman.CLIENT_ENV["HTTP_PROXY"].startswith("http://127.0.0.1")  # nothing reaches a registry


def test_rlimits_only_without_cap_sys_resource(monkeypatch, tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t000001fffeffffff\n")  # this VM: bit 24 (CAP_SYS_RESOURCE) missing
    real = podman.Path

    monkeypatch.setattr(podman, "Path", lambda p: status if p == "/proc/self/status" else real(p))
    assert podman.needs_ulimits()
    status.write_text("Name:\tx\nCapEff:\t000001ffffffffff\n")
    assert not podman.needs_ulimits()


def test_btrfs_driver_needs_btrfs_and_the_shorthand_parses():
    p = podman.PodmanParams(storage_driver="btrfs")
    assert "btrfs file system" in podman.PODMAN_RUNTIME.impossible(p, FilesystemParams(type="xfs"))
    assert podman.PODMAN_RUNTIME.impossible(p, FilesystemParams(type="btrfs")) is None
    exp, wls = parse_spec(
        {
            "name": "p",
            "devices": ["loop"],
            "filesystems": ["xfs", "btrfs"],
            "runtimes": ["podman", "podman:vfs", "podman:btrfs"],
            "paths": ["layer", "volume"],
            "workloads": ["rr"],
        }
    )
    assert [r.name for r in exp.runtimes] == ["podman:overlay", "podman:vfs", "podman:btrfs"]
    trials, skipped = expand(exp, wls)
    assert not [t for t in trials if t.runtime.name == "podman:btrfs" and t.filesystem.type == "xfs"]
    assert any("btrfs file system" in s.reason for s in skipped)
