"""The path layer every runtime shares (stack/paths.py): names, the file system a path needs, the raw device's
refusal under a mounted file system, a directory per instance."""

import pytest

from strata.core.errors import Unsupported
from strata.stack.blockdev import DeviceHandle
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.paths import bind_dirs, need_fs, raw_device, safe_name

DEV = DeviceHandle("loop", "/dev/loop7", 1 << 30, ["loop7"])


def test_a_safe_name_keeps_letters_digits_and_dots_only():
    assert safe_name("fio rr/4k:ext4") == "fio-rr-4k-ext4"
    assert len(safe_name("x" * 100)) == 60


def test_a_path_on_a_raw_stack_needs_a_file_system(tmp_path):
    raw = Mounted(FilesystemParams(type="raw"), DEV, None)
    with pytest.raises(Unsupported, match="the volume path needs a file system on the device under test"):
        need_fs(raw, "volume")
    assert need_fs(Mounted(FilesystemParams(type="ext4"), DEV, tmp_path), "bind") == tmp_path


def test_the_raw_device_is_refused_under_a_mounted_file_system(tmp_path):
    assert raw_device(Mounted(FilesystemParams(type="raw"), DEV, None), "never {fs}") == "/dev/loop7"
    with pytest.raises(Unsupported, match="holds the mounted xfs: use filesystem raw"):
        raw_device(Mounted(FilesystemParams(type="xfs"), DEV, tmp_path), "holds the mounted {fs}: use filesystem raw")


def test_bind_dirs_gives_each_instance_a_directory_and_removes_them(tmp_path):
    mounted = Mounted(FilesystemParams(type="ext4"), DEV, tmp_path)
    with bind_dirs(mounted, "strata-bind", tmp_path / "trial 1", 2, "/data") as handle:
        dirs = [d["dir"] for d in handle.per_instance]
        assert handle.name == "bind" and handle.target_kind == "dir" and handle.target_path == "/data"
        assert dirs == [str(tmp_path / "strata-bind" / "trial-1" / str(i)) for i in range(2)]
        (tmp_path / "strata-bind" / "trial-1" / "0" / "data").write_text("x")
    assert not (tmp_path / "strata-bind").exists()  # the trial's directory, and the parent once empty


def test_the_io_limits_each_runtime_maps_onto_its_knobs():
    from strata.core.params import Limits
    from strata.stack.runtimes.docker.cmdline import limit_args
    from strata.stack.runtimes.kubernetes.pods import unsupported_limits
    from strata.stack.vm.qemu import throttle_options

    limits = Limits(cpus=2, write_iops=500, read_bps="10MiB")
    assert limits.io() == {"read_bps": 10 << 20, "write_iops": 500} and Limits().io() == {}
    assert limit_args(limits, "/dev/x") == [
        "--cpus",
        "2",
        "--device-read-bps",
        f"/dev/x:{10 << 20}",
        "--device-write-iops",
        "/dev/x:500",
    ]
    assert throttle_options(limits) == {"throttling.bps-read": 10 << 20, "throttling.iops-write": 500}
    assert "read_bps, write_iops cannot be applied to a pod" in unsupported_limits(limits)
