from strata.core.params import Load
from strata.experiment.expand import expand, impossible
from strata.experiment.load import parse_spec
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.runtimes.docker.session import DockerParams
from strata.stack.runtimes.native import NativeParams

BASE = {"name": "t", "devices": ["loop"], "workloads": ["rr"]}


def test_impossible_combinations_have_reasons():
    raw, xfs, ext4 = Filesystem(type="raw"), Filesystem(type="xfs"), Filesystem(type="ext4")
    native, btrfs_drv = NativeParams(), DockerParams(storage_driver="btrfs")
    low = Load()
    assert "needs filesystem raw" in impossible(xfs, native, "device", low, None)
    assert "no directory" in impossible(raw, native, "bind", low, None)
    assert "has no layer path" in impossible(xfs, native, "layer", low, None)
    assert "runs one" in impossible(xfs, native, "bind", Load(containers=2), None)
    assert "data-root on a btrfs" in impossible(ext4, btrfs_drv, "layer", low, None)
    assert impossible(Filesystem(type="btrfs"), btrfs_drv, "layer", low, None) is None


def test_expansion_orders_raw_first_and_ids_are_stable():
    spec = {
        **BASE,
        "filesystems": ["xfs", "raw"],
        "runtimes": ["native", "docker"],
        "paths": ["layer", "volume", "bind", "device"],
        "repetitions": 2,
    }
    trials, skipped = expand(*parse_spec(spec))
    assert trials[0].filesystem.type == "raw"
    ids = [t.id for t in trials]
    assert len(set(ids)) == len(ids)
    again, _ = expand(*parse_spec(spec))
    assert [t.id for t in again] == ids
    # native: bind on xfs, device on raw; docker: layer/volume/bind on xfs, device on raw -> 6 stacks x 2 reps
    assert len(trials) == 12
    assert skipped and all(s.reason for s in skipped)


def test_trial_id_changes_with_any_option():
    a, _ = expand(*parse_spec({**BASE, "filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"]}))
    b, _ = expand(
        *parse_spec(
            {
                **BASE,
                "filesystems": [{"type": "xfs", "mount_options": ["noatime"]}],
                "runtimes": ["native"],
                "paths": ["bind"],
            }
        )
    )
    assert a[0].id != b[0].id


def test_exclude_by_glob():
    spec = {
        **BASE,
        "filesystems": ["raw", "xfs"],
        "runtimes": ["native", "docker:overlay2", "docker:vfs"],
        "paths": ["device", "bind"],
        "exclude": [{"filesystem": "raw", "runtime": "docker:*"}],
    }
    trials, skipped = expand(*parse_spec(spec))
    assert not [t for t in trials if t.filesystem.type == "raw" and t.runtime.type == "docker"]
    assert any("exclude[0]" in s.reason for s in skipped)


def test_a_workload_that_needs_a_directory_is_never_given_a_block_device():
    from strata.stack.vm.params import VmRuntime
    from strata.workloads.filebench import FilebenchParams
    from strata.workloads.fio import FioParams

    raw, xfs, low = Filesystem(type="raw"), Filesystem(type="xfs"), Load()
    fb, fio = FilebenchParams(personality="varmail"), FioParams(preset="rr")
    assert "needs a directory" in impossible(raw, NativeParams(), "device", low, fb)
    assert impossible(raw, NativeParams(), "device", low, fio) is None
    why = impossible(xfs, VmRuntime(), "image", low, fb)
    assert "needs a directory" in why and "guest_filesystem" in why
    assert impossible(xfs, VmRuntime(guest_filesystem="ext4"), "image", low, fb) is None
    assert impossible(xfs, VmRuntime(), "bind", low, fb) is None
