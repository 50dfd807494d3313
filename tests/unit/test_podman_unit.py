"""The podman runtime without root: its calls, rlimits, impossible combinations, and the shorthand."""

from pathlib import Path

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


def test_a_store_on_a_failing_file_system_releases_the_rest_and_says_what_is_lost(monkeypatch, tmp_path):
    """Regression (issue 20): the xfs under the store answered EIO (its remote device died with a killed
    strata); the undo raised at its first stat and left the store's processes, cgroups and run root."""
    from strata.stack import procfs

    root, runroot = tmp_path / "mnt" / "podman", tmp_path / "run"
    root.mkdir(parents=True)
    runroot.mkdir()
    data = {"root": str(root), "runroot": str(runroot), "cgroup_parent": "strata-podman-test"}
    real_stat = Path.stat

    def stat(self, *a, **kw):
        if str(self).startswith(str(root)):
            raise OSError(5, "Input/output error")
        return real_stat(self, *a, **kw)

    calls = []
    monkeypatch.setattr(Path, "stat", stat)
    monkeypatch.setattr(podman, "podman", lambda *a, **kw: calls.append("podman"))
    monkeypatch.setattr(podman, "cgroup_dirs", lambda parent: [])
    monkeypatch.setattr(podman, "remove_cgroups", lambda dirs: calls.append("cgroups"))
    monkeypatch.setattr(podman, "procs_using", lambda path: [])
    monkeypatch.setattr(podman, "unmount_under", lambda path: calls.append(("umount", path)))
    note = podman._undo_store(data)
    assert "podman" not in calls, "podman itself is not asked about a store it cannot read"
    assert ("umount", str(root)) in calls and "cgroups" in calls
    assert not runroot.exists(), "the run root (on /run, not on the failing file system) is removed"
    assert note and "Input/output error" in note and "lost with it" in note and str(root) in note
    assert procfs.fs_failure(tmp_path / "nowhere") is None


def test_a_store_s_processes_are_found_by_its_paths_as_whole_paths(monkeypatch):
    """Regression: the undo looked for '<root>/' and '<runroot>/', and a `podman --root R --runroot P wait`
    left by a killed strata names both with a space after them: it outlived `strata cleanup`."""
    from strata.stack import procfs

    cmdlines = {
        1: "podman --root /x/mnt/podman --runroot /run/strata/p-1 --storage-driver overlay wait c1 c2",
        2: "podman --root /x/mnt/podman2 --runroot /run/strata/p-12 info",
        3: "conmon --api-version 1 -b /x/mnt/podman/overlay-containers/abc/userdata",
        4: "less /x/mnt/podman/log",
    }
    monkeypatch.setattr(procfs, "procs_mentioning", lambda m: [p for p, c in cmdlines.items() if m in c])
    monkeypatch.setattr(procfs, "cmdline", lambda pid: cmdlines[pid])
    assert procfs.procs_using("/x/mnt/podman") == [1, 3, 4]  # (the real procs_mentioning keeps only engine programs)
    assert procfs.procs_using("/run/strata/p-1/") == [1]


def test_each_store_has_its_own_locks_and_per_boot_files(tmp_path):
    """Podman's default lock table is one shared-memory segment for every store on the host: a client
    killed holding a lock, or left waiting on a freed one, hung the next store's containers."""
    data = {"root": str(tmp_path / "root"), "runroot": str(tmp_path / "run"), "driver": "vfs"}
    assert "CONTAINERS_CONF" not in podman.client_env(data)
    (tmp_path / "run").mkdir()
    podman.write_conf(data)
    env = podman.client_env(data)
    conf = Path(env["CONTAINERS_CONF"]).read_text()
    assert 'lock_type = "file"' in conf
    # an image's temporary copy in the store (removed with it), not in /var/tmp: a killed `podman load` left
    # its blobs there (bench/chaos.py)
    assert f'image_copy_tmp_dir = "{tmp_path / "root" / "tmp"}"' in conf and (tmp_path / "root" / "tmp").is_dir()
    args = podman.global_args(data)
    assert args[args.index("--tmpdir") + 1] == str(tmp_path / "run" / "libpod")
