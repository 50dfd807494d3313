"""The docker runtime on real loop devices, real file systems and real private dockerds.

Needs root, Debian's docker.io (dockerd 20.10), fuse-overlayfs, debootstrap and
Debian's package archive (the image is built once per machine and cached under
the real state dir; later sessions only load it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from strata.collectors.cgroup import final_sections
from strata.core.errors import TrialFailure, Unsupported
from strata.core.instances import ImageSpec, InstanceRequest
from strata.core.params import Limits, Load
from strata.run.undo import undo_actions
from strata.stack import journal as jn
from strata.stack import procfs
from strata.stack.devices.loop import LOOP, LoopParams
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems import FilesystemParams
from strata.stack.runtimes.docker import client, image, probe
from strata.stack.runtimes.docker.daemon import private_daemon
from strata.stack.runtimes.docker.runtime import DOCKER, DockerParams
from strata.stack.runtimes.docker.session import DockerSession
from tests.coverage import covers

from . import ledger
from .helpers import kernel_has, tool_version

BASE_IMAGE = ImageSpec()  # the Debian base: sh, dd, coreutils
NO_LIMITS = Limits()


@contextlib.contextmanager
def provision_loop(params, journal, wd):
    with LOOP.provision(params, journal, wd) as dev:
        ledger.built("device:loop")
        yield dev


@contextlib.contextmanager
def provision_fs(fs, dev, journal, wd):
    with FILESYSTEMS[fs.type].provision(fs, dev, journal, wd) as mounted:
        ledger.built(f"filesystem:{fs.type}")
        yield mounted


pytestmark = pytest.mark.integration

SRC = Path(__file__).resolve().parents[2] / "src"
MiB = 1 << 20
DD = (
    "dd if=/dev/zero of={t} bs=1M count={n} oflag=direct status=none"
    " && dd if={t} of=/dev/null bs=1M iflag=direct status=none && echo ok"
)


@pytest.fixture(scope="session", autouse=True)
def state(tmp_path_factory):
    """Build (or find) the default image in the machine's image cache, then run every test with a
    state dir (journals) of its own."""
    assert os.geteuid() == 0, "the docker integration tests need root"
    t = time.monotonic()
    tarball = image.build_image_tarball(BASE_IMAGE)
    print(f"\nimage tarball {tarball} ready in {time.monotonic() - t:.1f} s")
    d = tmp_path_factory.mktemp("state")
    old = os.environ.get("STRATA_STATE_DIR")
    os.environ["STRATA_STATE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("STRATA_STATE_DIR")
    else:
        os.environ["STRATA_STATE_DIR"] = old


@contextlib.contextmanager
def stack(tmp: Path, fs_type: str, driver: str, size_mib: int = 1024):
    journal = jn.Journal(f"it-{fs_type}-{driver}-{os.getpid()}-{time.monotonic_ns() % 10**6}")
    wd = tmp / "wd"
    with (
        provision_loop(LoopParams(name=f"l{os.getpid()}", size=size_mib * MiB), journal, wd) as dev,
        provision_fs(FilesystemParams(type=fs_type), dev, journal, wd) as mounted,
        DOCKER.provision(DockerParams(storage_driver=driver), mounted, journal, wd, {}) as s,
    ):
        ledger.built("runtime:docker", f"runtime:docker:{driver}")
        yield s, journal
    assert_nothing_left(journal, wd)  # only after a clean exit: never hide the test's own failure


def daemons_of(journal: jn.Journal) -> list[dict]:
    """Every daemon the journal ever recorded (released or not), with its updates."""
    found: dict[int, dict] = {}
    for line in journal.path.read_text().splitlines() if journal.path.exists() else []:
        e = json.loads(line)
        if e.get("kind") == "daemon":
            found[e["seq"]] = dict(e["data"])
        elif e.get("update") in found:
            found[e["update"]].update(e["data"])
    return list(found.values())


def assert_nothing_left(journal: jn.Journal, wd: Path) -> None:
    daemons = daemons_of(journal)
    assert not journal.path.exists() or not jn.pending(journal.path), jn.pending(journal.path)
    for d in daemons:
        assert not [p for p in procfs.procs_mentioning(d["run_dir"] + "/") if procfs.is_running(p)], "a process of ours"
        assert not Path(d["run_dir"]).exists()
        assert not procfs.cgroup_dirs(d["cgroup_parent"], d["cgroup_dirs"])
    assert procfs.mounts_under(str(wd)) == []
    assert not (wd / "mnt").exists(), "a mount point of ours"
    assert "(" + str(wd) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    journal.close()


def written_to(final: dict[str, str], device: str) -> int:
    st = os.stat(device)
    key = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)} Write "
    for line in final.get("blkio/blkio.throttle.io_service_bytes", "").splitlines():
        if line.startswith(key):
            return int(line.split()[-1])
    return 0


def run_once(
    s: DockerSession,
    path: str,
    trial: Path,
    n: int,
    argv: list[str],
    limits: Limits = NO_LIMITS,
    timeout_s: float = 120,
    image_spec: ImageSpec = BASE_IMAGE,
):
    """One trial on `path`: n containers, the barrier, and their outputs."""
    load = Load(containers=n, limits=limits)
    with s.path(path, trial, load) as h:
        reqs = [InstanceRequest(i, argv, trial / f"out{i}", image=image_spec) for i in range(n)]
        running = s.start(reqs, h, load, trial / "sync")
        running.ready(60)
        ledger.built(f"path:docker/{path}")  # its containers started on it
        assert len(running.cgroups) == n and all(Path(c["memory"]).is_dir() for c in running.cgroups)
        time.sleep(0.3)
        assert not any((r.out_dir / "start").exists() for r in reqs), "a container passed the barrier early"
        go = running.go()
        try:
            outs = running.wait(timeout_s)
        except TrialFailure as e:
            ledger.failed(e.category, "docker")
            raise
        return h, go, outs


# ---- drivers and paths ----------------------------------------------------------------

DRIVERS = [  # (file system, driver, loop size MiB, paths, containers per path)
    ("xfs", "overlay2", 1024, ("layer", "volume", "bind", "tmpfs"), 2),
    ("ext4", "overlay2", 1024, ("layer", "volume", "bind", "tmpfs"), 2),
    ("btrfs", "btrfs", 1024, ("layer", "volume", "bind", "tmpfs"), 2),
    ("ext4", "vfs", 3072, ("layer", "bind"), 1),  # vfs copies the whole image per container: slow, big
    ("ext4", "fuse-overlayfs", 1024, ("layer", "volume", "bind", "tmpfs"), 2),
]


def _driver_case(fs_type, driver, size, paths, n):
    keys = ["device:loop", f"filesystem:{fs_type}", "runtime:docker", f"runtime:docker:{driver}"]
    return pytest.param(
        fs_type, driver, size, paths, n,
        id=f"{driver}-on-{fs_type}",
        marks=covers(*keys, *(f"path:docker/{p}" for p in paths)),
    )  # fmt: skip


@pytest.mark.parametrize("fs_type,driver,size,paths,n", [_driver_case(*d) for d in DRIVERS])
def test_driver_runs_every_path(tmp_path, fs_type, driver, size, paths, n):
    with stack(tmp_path, fs_type, driver, size) as (s, journal):
        f = s.facts
        assert f["storage_driver"] == driver and f["dockerd_version"] == tool_version("dockerd", "--version")
        assert f["data_root"] == str(s.mounted.mountpoint / "docker")
        assert f["cgroup_driver"] == "cgroupfs"
        print(f"\n{driver} on {fs_type}: daemon answered in {f['daemon_start_s']:.2f} s")
        t = time.monotonic()
        tag = image.ensure_image(s, BASE_IMAGE)
        print(f"  image loaded in {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        assert image.ensure_image(s, BASE_IMAGE) == tag and time.monotonic() - t < 2  # loaded once per daemon
        for path in paths:
            t = time.monotonic()
            h, go, outs = run_once(s, path, tmp_path / f"trial-{path}", n, ["sh", "-c", DD.format(t="/data/f", n=8)])
            starts = [o.start_time_s for o in outs]
            print(f"  {path}: {time.monotonic() - t:.1f} s, start skew {max(starts) - min(starts):.3f} s")
            for o in outs:
                assert o.returncode == 0, o.stderr
                assert (o.out_dir / "stdout").read_text() == "ok\n"
                assert go - 0.05 <= o.start_time_s <= o.end_time_s
                final = final_sections((o.out_dir / "cgroup-final.txt").read_text())
                assert int(final["memory/memory.max_usage_in_bytes"]) > 0
                if path != "tmpfs" and not (path == "layer" and driver == "fuse-overlayfs"):
                    # the I/O reached the device under test (fuse-overlayfs writes from its own daemon;
                    # btrfs submits a little of it from its workers, seen: 7.95 of 8 MiB)
                    assert written_to(final, s.mounted.device.path) >= 6 * MiB, final
            assert max(starts) - min(starts) < 1.0
            if path in ("bind", "volume"):
                assert h.host_path.startswith(str(s.mounted.mountpoint))


@covers(
    "device:loop",
    "filesystem:raw",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/device",
)
def test_device_path_on_a_raw_device(tmp_path):
    with stack(tmp_path, "raw", "overlay2", 256) as (s, journal):
        data_root = Path(s.facts["data_root"])
        assert data_root.parent == tmp_path / "wd"  # no file system on the device: data-root in the workdir
        _, _, outs = run_once(s, "device", tmp_path / "trial", 1, ["sh", "-c", DD.format(t="/dev/strata-dev", n=16)])
        assert outs[0].returncode == 0, outs[0].stderr
        final = final_sections((outs[0].out_dir / "cgroup-final.txt").read_text())
        assert written_to(final, s.mounted.device.path) >= 16 * MiB
    assert not data_root.exists()


# ---- drivers this host cannot run ------------------------------------------------------

UNSUPPORTED = [  # (file system, driver, the daemon's words, the kernel module whose absence makes them certain)
    ("ext4", "devicemapper", "error initializing graphdriver: driver not supported", "dm_mod"),
    ("ext4", "aufs", "AUFS was not found in /proc/filesystems", "aufs"),
    ("ext4", "zfs", "prerequisites for driver not satisfied (wrong filesystem?)", None),  # the data root is ext4
    ("xfs", "btrfs", "prerequisites for driver not satisfied (wrong filesystem?)", None),
]


@pytest.mark.parametrize(
    "fs_type,driver,text,module",
    [
        pytest.param(
            *d,
            id=f"{d[1]}-on-{d[0]}",
            # refused here: a driver this host can run (btrfs) is not exercised by its refusal on another file system
            marks=covers("device:loop", f"filesystem:{d[0]}", f"refused:runtime:docker:{d[1]}"),
        )
        for d in UNSUPPORTED
    ],
)
def test_unsupported_driver_gives_the_daemon_text(tmp_path, fs_type, driver, text, module):
    """The daemon's own words where a probe of this kernel makes them certain (the driver's module absent);
    on a kernel that has the module, its verdict, whichever it is: a daemon that starts, or a refusal."""
    journal = jn.Journal(f"it-unsup-{driver}-{os.getpid()}")
    wd = tmp_path / "wd"
    refusal = started = None
    with (
        provision_loop(LoopParams(name="u", size=512 * MiB), journal, wd) as dev,
        provision_fs(FilesystemParams(type=fs_type), dev, journal, wd) as mounted,
    ):
        try:
            with DOCKER.provision(DockerParams(storage_driver=driver), mounted, journal, wd, {}) as session:
                started = session.facts.get("storage_driver")  # the daemon's own word of the driver it runs
                ledger.built("runtime:docker", f"runtime:docker:{started}")
        except Unsupported as e:
            refusal = str(e)
            ledger.built(f"refused:runtime:docker:{driver}")
        if module is None or not kernel_has(module):
            assert not started and refusal is not None and text in refusal, refusal
            assert not (mounted.mountpoint / "docker").exists()
        else:
            # the kernel has the module: the daemon runs the driver asked for, or refuses it in its own words (its
            # fatal or storage-driver error lines, or its log's end: daemon.py daemon_error), never strata's guess
            words = ("failed to start daemon", "graphdriver", "driver", "dockerd exited")
            assert started == driver or (not started and refusal and any(w in refusal for w in words)), (
                started,
                refusal,
            )
        assert procfs.mounts_under(str(mounted.mountpoint)) == [str(mounted.mountpoint)]
    assert_nothing_left(journal, wd)


# ---- limits, OOM, timeout ---------------------------------------------------------------


@pytest.fixture(scope="module")
def overlay2_ext4(tmp_path_factory):
    with stack(tmp_path_factory.mktemp("ov"), "ext4", "overlay2", 1024) as (s, journal):
        image.ensure_image(s, BASE_IMAGE)
        yield s


@covers("device:loop", "filesystem:ext4", "runtime:docker", "runtime:docker:overlay2", "path:docker/bind")
def test_write_bps_limit_on_a_bind_mount(overlay2_ext4, tmp_path):
    """The limit as the kernel holds it: the container's own cgroup rule, its bytes from the cgroup's counters, and
    dd's own timing of the writes alone (the unthrottled read-back left out). A throttle is a ceiling: a busy
    machine only makes the writes slower, never faster, so the bound holds beside any other test."""
    s = overlay2_ext4
    rule = "cat /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"
    cmd = f"dd if=/dev/zero of=/data/f bs=1M count=60 oflag=direct 2>&1 | tail -n 1 && {rule}"
    _, _, outs = run_once(s, "bind", tmp_path, 1, ["sh", "-c", cmd], Limits(write_bps="20MiB"))
    o = outs[0]
    assert o.returncode == 0, o.stderr
    said = (o.out_dir / "stdout").read_text()
    st = os.stat(s.mounted.device.path)
    assert f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)} {20 * MiB}" in said.splitlines(), said  # the rule
    final = final_sections((o.out_dir / "cgroup-final.txt").read_text())
    assert written_to(final, s.mounted.device.path) >= 60 * MiB  # every byte through the throttled device
    m = re.search(r"^(\d+) bytes .* copied, ([\d.]+) s,", said, re.M)  # GNU dd's own count and seconds
    assert m and int(m.group(1)) == 60 * MiB, said
    rate = int(m.group(1)) / float(m.group(2)) / MiB
    print(f"\nwrite_bps 20MiB/s: dd wrote at {rate:.1f} MiB/s")
    assert rate <= 20 * 1.1, said  # the kernel's throttle slices let a little more through at the start


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/layer",
    "fault:oom",
    "fault:oom@docker",
)
def test_oom_is_reported(overlay2_ext4, tmp_path):
    with pytest.raises(TrialFailure) as e:
        run_once(
            overlay2_ext4,
            "layer",
            tmp_path,
            1,
            ["dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"],
            Limits(memory="32MiB"),
        )
    assert e.value.category == "oom"
    assert client.docker(overlay2_ext4.sock, "ps", "-aq").stdout.strip() == ""


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/tmpfs",
    "fault:timeout",
    "fault:timeout@docker",
)
def test_timeout_kills_the_containers(overlay2_ext4, tmp_path):
    s = overlay2_ext4
    load = Load()
    with s.path("tmpfs", tmp_path, load) as h:
        running = s.start([InstanceRequest(0, ["sleep", "60"], tmp_path / "out0")], h, load, tmp_path / "sync")
        ledger.built("path:docker/tmpfs")
        running.go()
        with pytest.raises(TrialFailure) as e:
            running.wait(1)
    ledger.failed(e.value.category, "docker")
    assert e.value.category == "timeout"
    assert client.docker(s.sock, "ps", "-aq").stdout.strip() == ""


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
)
def test_eight_containers_start_together(overlay2_ext4, tmp_path):
    _, go, outs = run_once(overlay2_ext4, "volume", tmp_path, 8, ["sh", "-c", DD.format(t="/data/f", n=4)])
    starts = [o.start_time_s for o in outs]
    print(f"\n8 containers: start skew {max(starts) - min(starts):.3f} s, first {min(starts) - go:.3f} s after go")
    assert all(o.returncode == 0 for o in outs) and max(starts) - min(starts) < 0.5


# ---- the user's own daemon -----------------------------------------------------------------


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:system",
    "path:docker/volume",
    "path:docker/bind",
)
def test_system_daemon_is_used_as_it_is(tmp_path, monkeypatch):
    """`docker:system` against a stand-in for the user's daemon (a private one at a patched socket):
    strata starts and stops no daemon there and leaves no container, volume or image of its own."""
    journal = jn.Journal(f"it-system-{os.getpid()}")
    wd = tmp_path / "wd"
    with (
        provision_loop(LoopParams(name="sys", size=1024 * MiB), journal, wd) as dev,
        provision_fs(FilesystemParams(type="ext4"), dev, journal, wd) as mounted,
        private_daemon("overlay2", mounted.mountpoint / "users", journal, remove_data_root=False) as users,
    ):
        monkeypatch.setattr(client, "SYSTEM_SOCKET", users.sock)
        with DOCKER.provision(DockerParams(storage_driver="system"), mounted, journal, wd, {}) as s:
            ledger.built("runtime:docker", "runtime:docker:system")
            assert s.daemon is None and s.facts["daemon"] == "system"
            for path in ("volume", "bind"):
                _, _, outs = run_once(s, path, tmp_path / path, 1, ["sh", "-c", DD.format(t="/data/f", n=4)])
                assert outs[0].returncode == 0, outs[0].stderr
            assert s.loaded_images  # loaded here, so removed at the end
        assert users.alive()
        assert client.docker(users.sock, "ps", "-aq").stdout.strip() == ""
        assert client.docker(users.sock, "volume", "ls", "-q").stdout.strip() == ""
        assert client.docker(users.sock, "images", "-q", "strata-tools").stdout.strip() == ""
    assert_nothing_left(journal, wd)


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/tmpfs",
)
def test_extra_files_make_a_new_image(overlay2_ext4, tmp_path, state, monkeypatch):
    """How the engine binary gets into the image: a new tag, built in a private build daemon
    (in an image cache of its own that shares only the debootstrap result)."""
    base = f"strata-base-{image.SUITE}.tar"
    shared_base = image.images_dir() / base
    images = tmp_path / "images"
    images.mkdir()
    (images / base).symlink_to(shared_base)
    monkeypatch.setenv("STRATA_IMAGE_DIR", str(images))
    tool = tmp_path / "hello.sh"
    tool.write_text("#!/bin/sh\necho hello from the image\n")
    t = time.monotonic()
    hello = ImageSpec("hello", files=(("strata-hello", str(tool)),))
    tag = image.ensure_image(overlay2_ext4, hello)
    print(f"\nimage with an extra file built and loaded in {time.monotonic() - t:.1f} s")
    assert tag == image.image_tag(hello) != image.image_tag(BASE_IMAGE)
    _, _, outs = run_once(overlay2_ext4, "tmpfs", tmp_path / "t", 1, ["strata-hello"], image_spec=hello)
    assert (outs[0].out_dir / "stdout").read_text() == "hello from the image\n"
    assert not [j for j in (state / "journal").glob("image-build-*.jsonl")]  # closed: all undone
    assert sorted(p.name for p in images.iterdir() if not p.name.startswith(".")) == sorted(
        [base, image.tarball_path(hello).name]
    )


@covers()  # the probe `strata doctor` uses: no driver runs a trial
def test_probe_driver(tmp_path):
    assert probe.probe_driver("overlay2", tmp_path) is None
    assert "AUFS was not found in /proc/filesystems" in probe.probe_driver("aufs", tmp_path)
    assert procfs.mounts_under(str(tmp_path)) == []


# ---- a daemon or strata killed -----------------------------------------------------------


@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/bind",
    "fault:daemon_died",
)
def test_dead_daemon_is_reported_and_cleaned_up(tmp_path):
    with stack(tmp_path, "ext4", "overlay2") as (s, journal):
        load = Load(containers=2)
        with s.path("bind", tmp_path / "t", load) as h:
            reqs = [InstanceRequest(i, ["sleep", "300"], tmp_path / f"out{i}") for i in range(2)]
            running = s.start(reqs, h, load, tmp_path / "sync")
            ledger.built("path:docker/bind")
            running.go()
            os.kill(s.daemon.proc.pid, signal.SIGKILL)
            with pytest.raises(TrialFailure) as e:
                running.wait(60)
            ledger.failed(e.value.category, "docker")
            assert e.value.category == "daemon_died"
            # the containers outlive dockerd under containerd-shim until the teardown
    # stack() checked: no process, mount, cgroup or loop device left


KILLED_SCRIPT = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from strata.core.instances import ImageSpec, InstanceRequest
    from strata.core.params import Load
    from strata.stack import journal as jn
    from strata.stack.devices.loop import LOOP, LoopParams
    from strata.stack.filesystems.mkfs import EXT4
    from strata.stack.filesystems import FilesystemParams
    from strata.stack.runtimes.docker.runtime import DOCKER, DockerParams
    wd = Path(sys.argv[1])
    j = jn.Journal("killed")
    with LOOP.provision(LoopParams(name="k", size=1024 << 20), j, wd) as dev, \\
            EXT4.provision(FilesystemParams(type="ext4"), dev, j, wd) as m, \\
            DOCKER.provision(DockerParams(storage_driver="overlay2"), m, j, wd, {}) as s:
        load = Load(containers=2)
        with s.path("volume", wd / "t", load) as h:
            r = s.start([InstanceRequest(i, ["sleep", "300"], wd / f"o{i}", image=ImageSpec()) for i in range(2)],
                        h, load, wd / "s")
            r.go()
            print("READY", j.path, flush=True)
            time.sleep(300)
""")


@pytest.mark.parametrize("daemon_too", [False, True], ids=["strata", "strata-and-dockerd"])
@covers(
    "device:loop",
    "filesystem:ext4",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "fault:kill9",
)
def test_kill9_then_cleanup_leaves_nothing(tmp_path, state, daemon_too):
    # its own state dir: cleanup() must see only the killed run's journal, not this process's
    own_state = tmp_path / "state"
    own_state.mkdir()
    wd = tmp_path / "wd"
    script = tmp_path / "strata_killed.py"
    script.write_text(KILLED_SCRIPT)
    p = subprocess.Popen(
        [sys.executable, str(script), str(wd)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "STRATA_STATE_DIR": str(own_state)},
    )
    t = time.monotonic()
    try:
        line = p.stdout.readline()
        print(f"\nkilled run ready after {time.monotonic() - t:.1f} s")
        assert line.startswith("READY"), line
        # the killed run's stack, built: its containers on a volume
        ledger.built(
            "device:loop", "filesystem:ext4", "runtime:docker", "runtime:docker:overlay2", "path:docker/volume"
        )
        jpath = Path(line.split()[1])
        daemon = next(e["data"] for e in jn.pending(jpath) if e["kind"] == "daemon")
        assert procfs.cgroup_pids(procfs.cgroup_dirs(daemon["cgroup_parent"], daemon["cgroup_dirs"]))  # containers run
    finally:
        p.kill()
        p.wait()
    if daemon_too:
        os.kill(int(Path(daemon["pidfile"]).read_text()), signal.SIGKILL)
    logs: list[str] = []
    t = time.monotonic()
    undone = jn.cleanup(own_state, log=logs.append, undo=undo_actions())
    ledger.kill9(p.returncode, undone)
    print(f"cleanup took {time.monotonic() - t:.1f} s")
    assert not jpath.exists(), logs
    assert undone >= 6, logs  # file, loop, mount, daemon, volumes, containers
    # issue 32: what one call undoes is never said as "could not undo" (kept for what stays)
    assert not [line for line in logs if "could not undo" in line], logs
    assert not [q for q in procfs.procs_mentioning(daemon["run_dir"] + "/") if procfs.is_running(q)]
    assert not procfs.cgroup_dirs(daemon["cgroup_parent"], daemon["cgroup_dirs"])
    assert not Path(daemon["run_dir"]).exists()
    assert procfs.mounts_under(str(wd)) == []
    assert "(" + str(wd) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
