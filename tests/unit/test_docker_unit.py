"""The docker runtime without root or docker: command lines, the wrapper, the
daemon's error text, cgroup and mount parsing, and the undo logic with fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from strata.collectors.cgroup import final_sections
from strata.core import release
from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.instances import ImageSpec, InstanceRequest
from strata.core.params import Limits, Load
from strata.stack import buildcache, procfs
from strata.stack.devices import DeviceHandle
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.filesystems import Mounted
from strata.stack.paths import DEVICE_IN_CONTAINER, LOG_IN_CONTAINER, OUT_DIR, SYNC_DIR, PathHandle
from strata.stack.runtimes.docker import client, cmdline, containers, image, session
from strata.stack.runtimes.docker import daemon as dockerd

# ---- captured dockerd 20.10.24 logs (Debian 12, kernel 6.18), trimmed -------------------

LOG_DEVICEMAPPER = textwrap.dedent("""\
    time="2026-11-22T01:48:38.196931150Z" level=info msg="containerd successfully booted in 0.038566s"
    time="2026-11-22T01:48:38.217341266Z" level=warning msg="[graphdriver] WARNING: the devicemapper storage-driver is deprecated, and will be removed in a future release"
    time="2026-11-22T01:48:38.218459454Z" level=info msg="stopping event stream following graceful shutdown" error="context canceled" module=libcontainerd namespace=plugins.moby
    time="2026-11-22T01:48:38.218537631Z" level=info msg="stopping healthcheck following graceful shutdown" module=libcontainerd
    failed to start daemon: error initializing graphdriver: driver not supported
    """)
LOG_AUFS = textwrap.dedent("""\
    time="2026-11-22T01:48:39.330813839Z" level=info msg="containerd successfully booted in 0.020331s"
    time="2026-11-22T01:48:39.344754045Z" level=warning msg="[graphdriver] WARNING: the aufs storage-driver is deprecated, and will be removed in a future release"
    time="2026-11-22T01:48:39.344939632Z" level=error msg="AUFS was not found in /proc/filesystems" storage-driver=aufs
    time="2026-11-22T01:48:39.345284025Z" level=info msg="stopping healthcheck following graceful shutdown" module=libcontainerd
    failed to start daemon: error initializing graphdriver: driver not supported
    """)
LOG_ZFS = textwrap.dedent("""\
    time="2026-11-22T01:48:40.497678708Z" level=info msg="metadata content store policy set" policy=shared
    time="2026-11-22T01:48:40.525298728Z" level=info msg="stopping event stream following graceful shutdown" error="context canceled" module=libcontainerd namespace=plugins.moby
    failed to start daemon: error initializing graphdriver: prerequisites for driver not satisfied (wrong filesystem?)
    """)


def test_daemon_error_devicemapper():
    assert (
        dockerd.daemon_error(LOG_DEVICEMAPPER)
        == "failed to start daemon: error initializing graphdriver: driver not supported"
    )


def test_daemon_error_aufs_names_the_cause_first():
    text = dockerd.daemon_error(LOG_AUFS)
    assert text.startswith("AUFS was not found in /proc/filesystems; ")
    assert text.endswith("driver not supported")


def test_daemon_error_zfs():
    assert "prerequisites for driver not satisfied (wrong filesystem?)" in dockerd.daemon_error(LOG_ZFS)


def test_daemon_error_without_a_final_line_gives_the_log_tail():
    text = dockerd.daemon_error('time="x" level=info msg="Starting up"\nsomething odd\n')
    assert text.startswith("dockerd exited") and "something odd" in text


# ---- command lines -----------------------------------------------------------------


def paths(tmp: Path) -> dockerd.DaemonPaths:
    return dockerd.DaemonPaths("0a1b2c3d", tmp / "mnt" / "docker")


def test_dockerd_argv_has_the_network_rule_and_own_paths(tmp_path):
    p = paths(tmp_path)
    argv = dockerd.dockerd_argv(p, "overlay2")
    assert argv[0] == "/usr/sbin/dockerd"
    for flag in ("--bridge=none", "--iptables=false", "--ip-masq=false", "--ip6tables=false", "--ip-forward=false"):
        assert flag in argv
    pairs = dict(zip(argv, argv[1:]))
    assert pairs["--data-root"] == str(tmp_path / "mnt" / "docker")
    assert pairs["--exec-root"] == "/run/strata/0a1b2c3d/x"
    assert pairs["-H"] == "unix:///run/strata/0a1b2c3d/d.sock"
    assert pairs["--pidfile"] == "/run/strata/0a1b2c3d/d.pid"
    assert pairs["--storage-driver"] == "overlay2"
    assert pairs["--cgroup-parent"] == "strata-0a1b2c3d"
    assert pairs["--config-file"] == "/run/strata/0a1b2c3d/daemon.json"  # never the user's daemon.json


def test_socket_path_is_short():
    # unix socket paths are limited to 108 bytes, containerd's lives below the exec-root
    p = dockerd.DaemonPaths("ffffffff", Path("/x"))
    assert len(str(p.exec_root / "containerd" / "containerd.sock.ttrpc")) < 100
    assert len(p.sock) < 100


def test_daemon_env_has_no_way_to_a_registry():
    assert dockerd.DAEMON_ENV["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert dockerd.DAEMON_ENV["HTTP_PROXY"].startswith("http://127.0.0.1:")


def handle(name: str, per: list[dict]) -> PathHandle:
    kind = "device" if name == "device" else "dir"
    return PathHandle(name, kind, DEVICE_IN_CONTAINER if kind == "device" else "/data", None, per)


@pytest.mark.parametrize(
    "name,per,expected",
    [
        ("layer", [{}], []),
        ("volume", [{"volume": "strata-ab-t-0"}], ["--mount", "type=volume,src=strata-ab-t-0,dst=/data"]),
        ("bind", [{"dir": "/mnt/x/strata-bind/t/0"}], ["--mount", "type=bind,src=/mnt/x/strata-bind/t/0,dst=/data"]),
        ("tmpfs", [{}], ["--tmpfs", "/data"]),
        ("device", [{}], ["--device", "/dev/loop7:/dev/strata-dev"]),
    ],
)
def test_path_args(name, per, expected):
    assert cmdline.path_args(handle(name, per), 0, "/dev/loop7") == expected


def test_limit_args_all():
    lim = Limits(cpus=1.5, memory="64MiB", read_bps="10MiB", write_bps="20MiB", read_iops=100, write_iops=200)
    args = cmdline.limit_args(lim, "/dev/loop7")
    pairs = list(zip(args[::2], args[1::2]))
    assert ("--cpus", "1.5") in pairs
    assert ("--memory", str(64 << 20)) in pairs and ("--memory-swap", str(64 << 20)) in pairs
    assert ("--device-read-bps", f"/dev/loop7:{10 << 20}") in pairs
    assert ("--device-write-bps", f"/dev/loop7:{20 << 20}") in pairs
    assert ("--device-read-iops", "/dev/loop7:100") in pairs
    assert ("--device-write-iops", "/dev/loop7:200") in pairs


def test_limit_args_none():
    assert cmdline.limit_args(Limits(), "/dev/loop7") == []


def test_create_argv(tmp_path):
    req = InstanceRequest(1, ["fio", "--name=x", "--output=/strata-out/fio.json"], tmp_path / "out1")
    argv = cmdline.create_argv(
        "strata-ab-3",
        "ab",
        req,
        handle("bind", [{"dir": "/b/0"}, {"dir": "/b/1"}]),
        Limits(write_bps="20MiB"),
        "/dev/loop7",
        "strata-tools:abc",
        tmp_path / "sync",
    )
    assert argv[0] == "create"
    pairs = list(zip(argv, argv[1:]))
    assert ("--network", "none") in pairs and ("--pull", "never") in pairs  # never a registry
    assert ("--mount", f"type=bind,src={tmp_path / 'out1'},dst={OUT_DIR}") in pairs
    assert ("--mount", f"type=bind,src={tmp_path / 'sync'},dst={SYNC_DIR}") in pairs
    assert ("--mount", "type=bind,src=/b/1,dst=/data") in pairs  # this instance's own dir
    assert ("--device-write-bps", f"/dev/loop7:{20 << 20}") in pairs
    i = argv.index("strata-tools:abc")
    assert argv[i + 1 : i + 3] == ["/bin/sh", "-c"] and argv[i + 3] == cmdline.WRAPPER
    assert argv[i + 4 :] == ["strata-wrap", *req.argv]


@pytest.mark.parametrize("network, flag", [("none", "none"), ("host", "host"), ("node", "host"), ("bridge", "none")])
def test_an_instance_is_on_the_hosts_network_or_none_never_a_bridge(tmp_path, network, flag):
    req = InstanceRequest(0, ["true"], tmp_path / "out0", network=network)
    argv = cmdline.create_argv("n", "ab", req, handle("layer", [{}]), Limits(), "/dev/loop7", "img", tmp_path)
    assert ("--network", flag) in list(zip(argv, argv[1:]))


def test_create_argv_rejects_a_comma(tmp_path):
    req = InstanceRequest(0, ["true"], tmp_path / "a,b")
    with pytest.raises(StrataError):
        cmdline.create_argv("n", "ab", req, handle("layer", [{}]), Limits(), "/dev/loop7", "img", tmp_path)


# ---- the wrapper, run for real with /bin/sh on temp dirs -------------------------------


def run_wrapper(tmp_path: Path, argv: list[str]) -> tuple[subprocess.Popen, Path, Path]:
    out, sync = tmp_path / "out", tmp_path / "sync"
    out.mkdir()
    sync.mkdir()
    script = cmdline.WRAPPER.replace(OUT_DIR, str(out)).replace(SYNC_DIR, str(sync))
    p = subprocess.Popen(["/bin/sh", "-c", script, "strata-wrap", *argv])
    return p, out, sync


def test_wrapper_waits_for_go_then_times_the_tool(tmp_path):
    p, out, sync = run_wrapper(tmp_path, ["sh", "-c", 'echo "to stderr $1" >&2; echo out; exit 3', "x", "arg 1"])
    time.sleep(0.3)
    assert p.poll() is None and not (out / "start").exists()  # held at the barrier
    go = time.time()
    (sync / "go").touch()
    assert p.wait(timeout=10) == 3  # the tool's exit code
    start, end = float((out / "start").read_text()), float((out / "end").read_text())
    assert go - 0.01 <= start <= end <= time.time()  # released by go, not before; how soon is judged serially
    assert (out / "stderr").read_text() == "to stderr arg 1\n"
    assert (out / "stdout").read_text() == "out\n"
    assert (out / "cgroup-final.txt").exists()


def test_parse_cgroup_final():
    text = "== memory/memory.failcnt\n0\n== blkio/blkio.throttle.io_service_bytes\n7:1 Read 5\n7:1 Write 0\nTotal 5\n"
    got = final_sections(text)
    assert got["memory/memory.failcnt"] == "0"
    assert got["blkio/blkio.throttle.io_service_bytes"].splitlines()[0] == "7:1 Read 5"


# ---- mounts and cgroups -----------------------------------------------------------------

MOUNTINFO = textwrap.dedent("""\
    31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
    32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
    33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
    35 31 0:32 /outer /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
    40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
    50 27 7:1 / /w/mnt/docker rw,relatime shared:1 - ext4 /dev/loop1 rw
    51 50 0:50 / /w/mnt/docker/overlay2/abc/merged rw,relatime - overlay overlay rw,lowerdir=x
    52 27 0:51 / /w/mnt/docker2 rw,relatime - tmpfs tmpfs rw
    53 27 0:52 / /w/with\\040space rw,relatime - tmpfs tmpfs rw
    """)
CGROUPS_TABLE = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\ncpuacct\t2\t1\t1\nmemory\t4\t1\t1\n"


def test_cgroup_hierarchies():
    h = procfs.cgroup_hierarchies(MOUNTINFO, CGROUPS_TABLE)
    assert h["cpu"] == (Path("/sys/fs/cgroup/cpu"), "/")
    assert h["memory"] == (Path("/sys/fs/cgroup/memory"), "/outer")
    assert h["name=systemd"][0] == Path("/sys/fs/cgroup/systemd")  # xattr is not a controller
    assert h[""][0] == Path("/sys/fs/cgroup/unified")


def test_mounts_under_innermost_first_and_exact_prefix():
    assert procfs.mounts_under("/w/mnt/docker", MOUNTINFO) == ["/w/mnt/docker/overlay2/abc/merged", "/w/mnt/docker"]
    assert procfs.mounts_under("/w/with space", MOUNTINFO) == ["/w/with space"]
    assert procfs.mounts_under("/w/nothing", MOUNTINFO) == []


# ---- undo with fakes ---------------------------------------------------------------------


class FakeHost:
    """Records what the undo does instead of doing it."""

    def __init__(self, monkeypatch, *, answers: bool, cmdlines: dict[int, str]):
        self.calls: list[tuple] = []
        self.cmdlines = cmdlines
        monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: answers)
        monkeypatch.setattr(dockerd, "docker", self.docker)
        monkeypatch.setattr(dockerd, "cgroup_dirs", lambda parent, known=None: [Path("/fake") / parent])
        monkeypatch.setattr(dockerd, "cgroup_pids", self.cgroup_pids)
        monkeypatch.setattr(dockerd, "signal_and_wait", self.signal)
        monkeypatch.setattr(dockerd, "cmdline", lambda pid: self.cmdlines.get(pid, ""))
        monkeypatch.setattr(dockerd, "is_running", lambda pid: pid in self.cmdlines)
        monkeypatch.setattr(dockerd, "procs_mentioning", lambda m: [p for p, c in self.cmdlines.items() if m in c])
        monkeypatch.setattr(dockerd, "unmount_under", lambda p: self.calls.append(("umount", p)))
        monkeypatch.setattr(dockerd, "remove_cgroups", lambda dirs: self.calls.append(("rmcg", [str(d) for d in dirs])))
        monkeypatch.setattr(dockerd, "remove_tree", lambda p: self.calls.append(("rm", str(p))))
        monkeypatch.setattr(dockerd, "remove_tree_unless_failing", lambda p: self.calls.append(("rm", str(p))))
        self.cg_pids = {501, 502}
        self.stuck: set[int] = set()  # processes no signal ends (in the kernel's D state)

    def docker(self, sock, *args, **kw):
        self.calls.append(("docker", *args))
        out = "c1\nc2\n" if args[:2] == ("ps", "-aq") else ""
        return subprocess.CompletedProcess(args, 0, out, "")

    def cgroup_pids(self, dirs):
        return set(self.cg_pids)

    def signal(self, pids, sig, timeout):
        self.calls.append(("kill", sorted(pids), sig))
        if sig == 9:
            self.cg_pids -= set(pids)
        for p in pids:
            if p not in self.stuck:
                self.cmdlines.pop(p, None)
        return [p for p in pids if p in self.stuck]


def daemon_data(tmp_path) -> dict:
    p = paths(tmp_path)
    d = p.journal_data("overlay2", remove_data_root=False)
    d["pidfile"] = str(tmp_path / "d.pid")
    return d


def test_undo_daemon_order_when_the_daemon_answers(monkeypatch, tmp_path):
    data = daemon_data(tmp_path)
    (tmp_path / "d.pid").write_text("4242")
    fake = FakeHost(
        monkeypatch,
        answers=True,
        cmdlines={
            4242: f"/usr/sbin/dockerd -H unix://{data['sock']} --exec-root {data['exec_root']}",
            4243: f"containerd --config {data['exec_root']}/containerd/containerd.toml",
            4244: "sshd: unrelated",
        },
    )
    dockerd.undo_daemon(data)
    kinds = [c[0] for c in fake.calls]
    assert fake.calls[1] == ("docker", "rm", "-f", "-v", "c1", "c2")
    assert ("kill", [501, 502], 9) in fake.calls  # what ran in our cgroups
    assert ("kill", [4242], 15) in fake.calls  # dockerd, by its pidfile
    assert ("kill", [4243], 15) in fake.calls  # containerd, by its command line
    assert all(4244 not in c[1] for c in fake.calls if c[0] == "kill")
    # containers, then the daemon, then mounts, cgroups and dirs
    assert kinds.index("docker") < kinds.index("kill") < kinds.index("umount") < kinds.index("rmcg") < kinds.index("rm")
    assert ("umount", data["data_root"]) in fake.calls
    assert ("rm", data["run_dir"]) in fake.calls
    assert ("rm", data["data_root"]) not in fake.calls  # on the file system under test: left to its unmount


def test_undo_daemon_never_kills_a_reused_pid(monkeypatch, tmp_path):
    data = daemon_data(tmp_path)
    (tmp_path / "d.pid").write_text("4242")
    fake = FakeHost(monkeypatch, answers=False, cmdlines={4242: "/usr/bin/python3 something-else"})
    dockerd.undo_daemon({**data, "remove_data_root": True})
    assert not any(c[0] == "kill" and 4242 in c[1] for c in fake.calls)
    assert not any(c[0] == "docker" for c in fake.calls)  # a dead daemon is not asked
    assert ("rm", data["data_root"]) in fake.calls


def test_undo_daemon_returns_only_once_its_processes_are_gone(monkeypatch, tmp_path):
    """Issue 62: a process that survives SIGKILL is named, and the entry stays for the next cleanup (nothing
    it may hold is unmounted or removed under it)."""
    data = daemon_data(tmp_path)
    (tmp_path / "d.pid").write_text("4242")
    fake = FakeHost(monkeypatch, answers=False, cmdlines={4242: f"/usr/sbin/dockerd -H unix://{data['sock']}"})
    fake.stuck = {4242}
    monkeypatch.setattr(dockerd, "exe_name", lambda pid: "dockerd")
    with pytest.raises(StrataError, match=r"\[4242\] \(dockerd\).*survived SIGKILL") as e:
        dockerd.undo_daemon(data)
    assert "strata cleanup" in e.value.message()
    assert ("kill", [4242], 9) in fake.calls and not any(c[0] in ("umount", "rm", "rmcg") for c in fake.calls)
    fake.stuck = set()
    dockerd.undo_daemon(data)  # gone at last: the next cleanup finishes
    assert ("rm", data["run_dir"]) in fake.calls


def test_undo_daemon_is_idempotent_with_nothing_left(monkeypatch, tmp_path):
    fake = FakeHost(monkeypatch, answers=False, cmdlines={})
    fake.cg_pids = set()
    data = daemon_data(tmp_path)
    dockerd.undo_daemon(data)
    dockerd.undo_daemon(data)
    assert not any(c[0] == "kill" and c[1] for c in fake.calls)


def test_undo_container_of_a_gone_private_daemon_is_done(monkeypatch):
    """Nothing to ask when the private daemon is gone: the undo of that daemon stops what ran in it."""
    monkeypatch.setattr(client, "answers", lambda sock, timeout=5: False)
    monkeypatch.setattr(client, "docker", lambda *a, **kw: pytest.fail(f"docker asked: {a}"))
    said = containers.undo_container({"socket": "/run/strata/ab/d.sock", "name": "strata-ab-1"})
    assert said is not None and "no engine answers at /run/strata/ab/d.sock" in said


def test_undo_container_on_a_silent_system_daemon_keeps_the_entry(monkeypatch):
    monkeypatch.setattr(client, "answers", lambda sock, timeout=5: False)
    with pytest.raises(StrataError):
        containers.undo_container({"socket": client.SYSTEM_SOCKET, "name": "strata-ab-1"})


def test_undo_actions_are_declared():
    from strata.stack.runtimes.docker.runtime import DOCKER
    from strata.stack.runtimes.podman import PODMAN_RUNTIME

    for kind in ("daemon", "container", "volume", "docker-image", "build-dir"):
        assert kind in DOCKER.undo and kind in PODMAN_RUNTIME.undo
    assert "podman-store" in PODMAN_RUNTIME.undo and "podman-store" not in DOCKER.undo


# ---- waiting for containers, with a fake docker CLI --------------------------------------

FAKE_DOCKER = """#!{python}
import json, os, sys, time
args = sys.argv[3:]  # after -H unix://...
state = json.load(open(os.environ["FAKE_STATE"]))
with open(os.environ["FAKE_STATE"] + ".calls", "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] == "wait":
    time.sleep(state.get("wait_s", 0))
    if state.get("wait_eof"):  # the daemon's socket closed under the client
        sys.exit("error during connect: unexpected EOF")
    print("\\n".join(str(state["codes"][n]) for n in args[1:]))
elif args[0] == "inspect" and "{{{{.Name}}}}" in args[2]:  # Running.check: which have ended
    for n in args[3:]:
        print("/%s %s %d" % (n, str(n in state.get("running", [])).lower(), state["codes"].get(n, 0)))
elif args[0] == "inspect":
    print(json.dumps({{"OOMKilled": args[-1] in state.get("oom", [])}}))
elif args[0] in ("rm", "version"):
    print("20.10")
elif args[0] == "create" and state.get("create_refused"):  # the daemon refuses the container
    sys.exit("Error response from daemon: " + state["create_refused"])
"""


class FakeJournal:
    def __init__(self):
        self.released = []

    def release(self, seq):
        self.released.append(seq)


def fake_session(monkeypatch, tmp_path, state: dict) -> session.DockerSession:
    cli = tmp_path / "docker"
    cli.write_text(FAKE_DOCKER.format(python=sys.executable))
    cli.chmod(0o755)
    (tmp_path / "state.json").write_text(json.dumps(state))
    monkeypatch.setattr(client, "docker_cli", lambda: str(cli))
    monkeypatch.setenv("FAKE_STATE", str(tmp_path / "state.json"))
    monkeypatch.setattr(client, "answers", lambda sock, timeout=5: True)
    dev = DeviceHandle("loop", "/dev/loop7", 1 << 30, ["loop7"])
    mounted = Mounted(Filesystem(type="ext4"), dev, tmp_path / "mnt")
    return session.DockerSession("docker:overlay2", mounted, FakeJournal(), "/run/strata/ab/d.sock", "ab", None, {})


def running_with(session, tmp_path, n: int) -> containers.DockerRunning:
    r = containers.DockerRunning(session, tmp_path / "sync", Limits(memory="32MiB"))
    (tmp_path / "sync").mkdir()
    for i in range(n):
        out = tmp_path / f"out{i}"
        out.mkdir()
        (out / "start").write_text("100.5\n")
        (out / "end").write_text("102.25\n")
        (out / "stderr").write_text("x" * 5000 + "tail")
        r.containers.append(containers.Container(f"c{i}", 10 + i, InstanceRequest(i, ["true"], out)))
    session.running.append(r)
    return r


def test_wait_collects_outputs_and_removes_containers(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0, "c1": 2}})
    r = running_with(s, tmp_path, 2)
    before = time.time()
    go = r.go()
    # `go` names the start, a lead ahead, so every waiter starts then however late it saw the file
    named = int((tmp_path / "sync" / "go").read_text()) / 1e9
    assert named == pytest.approx(go, abs=1e-6) and before < go <= time.time() + release.LEAD_S
    outs = r.wait(10)
    assert [(o.index, o.returncode, o.start_time_s, o.end_time_s) for o in outs] == [
        (0, 0, 100.5, 102.25),
        (1, 2, 100.5, 102.25),
    ]
    assert outs[0].stderr.endswith("tail") and len(outs[0].stderr) == client.STDERR_TAIL_CHARS
    assert s.journal.released == [10, 11] and s.running == []


def test_wait_reports_oom(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 137}, "oom": ["c0"]})
    r = running_with(s, tmp_path, 1)
    with pytest.raises(TrialFailure) as e:
        r.wait(10)
    assert e.value.category == "oom"
    assert s.journal.released == [10]


def test_wait_reports_oom_from_the_cgroup_counter(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 137}})
    r = running_with(s, tmp_path, 1)
    (tmp_path / "out0" / "cgroup-final.txt").write_text(
        "== memory/memory.oom_control\noom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
    )
    with pytest.raises(TrialFailure) as e:
        r.wait(10)
    assert e.value.category == "oom"


def test_ready_reports_an_oom_kill_in_the_prepare_step_as_oom(monkeypatch, tmp_path):
    # fio laying out its file under a memory limit: the page cache counts, and the OOM killer may strike then
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": containers.PREPARE_FAILED}, "oom": ["c0"]})
    with pytest.raises(TrialFailure) as e:
        running_with(s, tmp_path, 1).ready(10)
    assert e.value.category == "oom" and e.value.stderr.endswith("tail")
    assert s.journal.released == [10]


def test_ready_reports_a_failed_prepare_step(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": containers.PREPARE_FAILED}})
    with pytest.raises(TrialFailure) as e:
        running_with(s, tmp_path, 1).ready(10)
    assert e.value.category == "prepare" and "its prepare step failed" in str(e.value)


def test_wait_timeout_kills_and_removes(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0}, "wait_s": 30})
    r = running_with(s, tmp_path, 1)
    t = time.monotonic()
    with pytest.raises(TrialFailure) as e:
        r.wait(1)
    assert e.value.category == "timeout" and time.monotonic() - t < 30  # before the container's own 30 s end
    assert s.journal.released == [10]


def test_wait_on_a_dead_private_daemon(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0}, "wait_s": 30})
    dead = subprocess.Popen(["true"])
    dead.wait()
    s.daemon = dockerd.Daemon(dockerd.DaemonPaths("ab", tmp_path), "overlay2", dead, 0.1)
    r = running_with(s, tmp_path, 1)
    with pytest.raises(TrialFailure) as e:
        r.wait(20)
    assert e.value.category == "daemon_died"


def test_wait_whose_client_reads_eof_before_the_daemon_has_exited(monkeypatch, tmp_path):
    """The race of issue 62, at `docker wait`: the client fails first, the daemon's process exits a moment
    later. The trial is `daemon_died` (its layer is built again), not a runtime error."""
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0}, "wait_eof": True})
    monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: False)
    dying = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    s.daemon = dockerd.Daemon(dockerd.DaemonPaths("ab", tmp_path), "overlay2", dying, 0.1)
    r = running_with(s, tmp_path, 1)
    with pytest.raises(TrialFailure) as e:
        r.wait(20)
    assert e.value.category == "daemon_died" and e.value.layer == "runtime", e.value


def test_wait_whose_client_fails_on_a_live_daemon_is_a_runtime_error(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0}, "wait_eof": True})
    monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: True)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    s.daemon = dockerd.Daemon(dockerd.DaemonPaths("ab", tmp_path), "overlay2", alive, 0.1)
    try:
        with pytest.raises(TrialFailure) as e:
            running_with(s, tmp_path, 1).wait(20)
        assert e.value.category == "runtime" and "unexpected EOF" in str(e.value), (e.value, e.value.stderr)
    finally:
        alive.kill()
        alive.wait()


def docker_calls(tmp_path) -> list[list[str]]:
    """What the fake docker CLI was asked, in order."""
    log = tmp_path / "state.json.calls"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_check_is_quiet_while_every_container_runs(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0, "c1": 0}, "running": ["c0", "c1"]})
    r = running_with(s, tmp_path, 2)
    r.check(None)  # raises nothing
    asked = docker_calls(tmp_path)
    assert any(a[0] == "inspect" and a[-2:] == ["c0", "c1"] for a in asked), asked  # it looked at both
    assert not any(a[0] in ("rm", "kill", "stop") for a in asked), asked  # and left them running
    assert not any(c.removed for c in r.containers) and s.journal.released == []


def test_check_reports_a_container_that_ended(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0, "c1": 137}, "running": ["c0"]})
    with pytest.raises(TrialFailure) as e:
        running_with(s, tmp_path, 2).check(None)
    assert e.value.category == "instance_died" and "instance 1 (container c1) ended with code 137" in str(e.value)
    assert e.value.stderr.endswith("tail")


def test_check_reports_an_oom_killed_container(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 137}, "oom": ["c0"]})
    with pytest.raises(TrialFailure) as e:
        running_with(s, tmp_path, 1).check(None)
    assert e.value.category == "oom"


def test_check_reports_a_watched_layer(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {"c0": 0}, "running": ["c0"]})
    with pytest.raises(TrialFailure) as e:
        running_with(s, tmp_path, 1).check(lambda: ("remote_lost", "the storage host left"))
    assert e.value.category == "remote_lost"


# ---- availability and the image ------------------------------------------------------------


def test_available_needs_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert dockerd.available("overlay2", {}) == "needs root"


def test_incompatible():
    assert "btrfs file system" in dockerd.incompatible("btrfs", "xfs")
    assert dockerd.incompatible("btrfs", "btrfs") is None
    assert dockerd.incompatible("overlay2", "xfs") is None


def test_debian_mirror_from_deb822(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        textwrap.dedent("""\
        Types: deb
        URIs: http://mirror.example/debian-security
        Suites: bookworm-security
        Components: main

        Types: deb
        # a comment
        URIs: http://mirror.example/debian
        Suites: bookworm bookworm-updates
        Components: main
        """)
    )
    assert buildcache.debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_debian_mirror_from_sources_list(tmp_path):
    (tmp_path / "sources.list").write_text("# x\ndeb [arch=amd64] http://m.example/debian bookworm main\n")
    assert buildcache.debian_mirror(tmp_path) == "http://m.example/debian"


def test_debian_mirror_default(tmp_path):
    assert buildcache.debian_mirror(tmp_path) == buildcache.DEFAULT_MIRROR


def test_image_key_follows_the_files_and_packages(tmp_path):
    f = tmp_path / "engine"
    f.write_bytes(b"v1")
    spec = ImageSpec("wml", files=(("strata-wml", str(f)),))
    k1 = image.image_key(spec)
    assert k1 == image.image_key(ImageSpec("wml", files=(("strata-wml", str(f)),))) != image.image_key(ImageSpec())
    f.write_bytes(b"v2")
    assert image.image_key(spec) != k1
    assert image.image_key(ImageSpec("fio", packages=("fio",))) != image.image_key(ImageSpec("fio"))
    assert image.image_tag(spec).startswith("strata-wml:")
    (tmp_path / "ctx").mkdir()
    with pytest.raises(StrataError):
        image._context(tmp_path / "ctx", ImageSpec(files=(("../x", str(f)),)))


def test_dockerfile_never_names_a_registry_image(tmp_path):
    text = image.dockerfile(ImageSpec("fio", packages=("fio",), trees=(("/opt/x", str(tmp_path)),)))
    assert text.splitlines()[0] == f"FROM {image.BASE_TAG}"
    assert "install -y --no-install-recommends fio" in text and "mkdir -p /data" in text
    assert "COPY tree0/ /opt/x/" in text


def test_session_paths_refuse_what_cannot_be(monkeypatch, tmp_path):
    s = fake_session(monkeypatch, tmp_path, {"codes": {}})
    with pytest.raises(Unsupported):
        with s.path("device", tmp_path / "t", Load()):
            pass
    s.mounted = Mounted(Filesystem(type="raw"), s.mounted.device, None)
    s.daemon = object()  # a private daemon: its data-root is not on the device under test
    for name in ("bind", "volume", "layer"):
        with pytest.raises(Unsupported):
            with s.path(name, tmp_path / "t", Load()):
                pass
    with s.path("device", tmp_path / "t", Load(containers=2)) as h:
        assert h.target_kind == "device" and h.target_path == "/dev/strata-dev" and len(h.per_instance) == 2


def test_image_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATA_IMAGE_DIR", str(tmp_path))
    assert image.tarball_path(ImageSpec()).parent == tmp_path


def test_an_image_key_follows_the_trees_content_not_where_or_when_they_were_copied(tmp_path):
    """A fresh venv's site-packages, copied into the agent image's tree by a new clone, keeps the image's key
    (it was the files' times: every clean clone rebuilt the agent images); a changed byte makes a new key."""
    import os
    import shutil

    from strata.core.instances import ImageSpec

    a = tmp_path / "a"
    (a / "pkg").mkdir(parents=True)
    (a / "pkg" / "mod.py").write_text("x = 1\n")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    os.utime(b / "pkg" / "mod.py", (1_000_000, 1_000_000))
    key = ImageSpec("t", trees=(("/opt/t", str(a)),)).key()
    assert ImageSpec("t", trees=(("/opt/t", str(b)),)).key() == key
    (b / "pkg" / "mod.py").write_text("x = 2\n")
    assert ImageSpec("t", trees=(("/opt/t", str(b)),)).key() != key


def test_a_servers_log_on_a_path_of_its_own_is_a_second_mount(tmp_path):
    req = InstanceRequest(1, ["postgres"], tmp_path / "out1")
    data = handle("volume", [{"volume": "v0"}, {"volume": "v1"}])
    for name, per, expected in (
        ("bind", [{"dir": "/l/0"}, {"dir": "/l/1"}], ("--mount", "type=bind,src=/l/1,dst=/log")),
        ("volume", [{"volume": "w0"}, {"volume": "w1"}], ("--mount", "type=volume,src=w1,dst=/log")),
        ("tmpfs", [{}, {}], ("--tmpfs", "/log")),
    ):
        data.log = PathHandle(name, "dir", LOG_IN_CONTAINER, None, per)
        argv = cmdline.create_argv("n", "ab", req, data, Limits(), "/dev/loop7", "img", tmp_path / "sync")
        pairs = list(zip(argv, argv[1:]))
        assert ("--mount", "type=volume,src=v1,dst=/data") in pairs and expected in pairs, name
    data.log = PathHandle("layer", "dir", LOG_IN_CONTAINER, None, [{}, {}])  # a directory of the container's layer
    argv = cmdline.create_argv("n", "ab", req, data, Limits(), "/dev/loop7", "img", tmp_path / "sync")
    assert "/log" not in " ".join(argv[: argv.index("img")])


def test_the_set_up_a_session_did_is_taken_once(monkeypatch, tmp_path):
    """A container session declares the time it spent loading images (SetsUp): the trial takes it, and the next
    trial starts from zero, also behind the agent's wrapper (hosts/part.py), which forwards to the session."""
    from strata.hosts.part import BarrierSession
    from strata.run.trial import _take_setup_s
    from strata.stack.runtimes.base import SetsUp
    from strata.stack.runtimes.native import NativeSession

    s = fake_session(monkeypatch, tmp_path, {"codes": {}})
    s.setup_s = 2.5
    assert isinstance(s, SetsUp) and _take_setup_s(s) == 2.5 and _take_setup_s(s) == 0.0
    s.setup_s = 1.5
    wrapped = BarrierSession(s, part=None)
    assert _take_setup_s(wrapped) == 1.5 and s.setup_s == 0.0 and _take_setup_s(wrapped) == 0.0
    assert _take_setup_s(NativeSession(s.mounted)) == 0.0


def _daemon(tmp_path, argv: list[str]) -> dockerd.Daemon:
    paths = dockerd.DaemonPaths("ab12cd34", tmp_path / "root")
    return dockerd.Daemon(paths, "overlay2", subprocess.Popen(argv), 0.0)


def test_a_daemon_that_exits_just_after_its_clients_eof_died(monkeypatch, tmp_path):
    """The race of issue 62: `docker wait` reads EOF as the kernel closes a killed daemon's socket, before the
    process has exited. The daemon's own state, given a moment, says it died."""
    monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: False)  # its socket is closed
    d = _daemon(tmp_path, [sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert d.alive()  # what the client's error saw
    t0 = time.monotonic()
    assert d.died(grace_s=5)
    assert time.monotonic() - t0 < 4  # as soon as it exits, not at the end of the grace


def test_a_daemon_that_answers_did_not_die(monkeypatch, tmp_path):
    monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: True)
    d = _daemon(tmp_path, [sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        t0 = time.monotonic()
        assert not d.died(grace_s=5) and time.monotonic() - t0 < 1
    finally:
        d.proc.kill()
        d.proc.wait()


def test_a_daemon_alive_but_silent_for_the_grace_died(monkeypatch, tmp_path):
    """Hung, or shutting down: it is no daemon a next trial can use, so its layer is built again."""
    monkeypatch.setattr(dockerd, "answers", lambda sock, timeout=5: False)
    d = _daemon(tmp_path, [sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert d.died(grace_s=0.3)
    finally:
        d.proc.kill()
        d.proc.wait()


def test_a_dockerd_killed_as_it_starts_is_a_death_not_an_unsupported_driver(monkeypatch, tmp_path):
    log = tmp_path / "dockerd.log"
    log.write_text("level=info msg=starting\n")
    monkeypatch.setattr(dockerd.DaemonPaths, "log", property(lambda self: log))
    paths = dockerd.DaemonPaths("ab12cd34", tmp_path)
    killed = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    killed.wait()
    with pytest.raises(TrialFailure) as e:
        dockerd.wait_ready(paths, killed)
    assert e.value.category == "daemon_died" and e.value.layer == "runtime" and "signal 9" in str(e.value)
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    exited.wait()
    with pytest.raises(Unsupported):  # it exited by itself: its log says what this host cannot do
        dockerd.wait_ready(paths, exited)


def test_a_container_the_daemon_refuses_to_create_is_container_start(monkeypatch, tmp_path):
    """The daemon answers but refuses the container (a bad mount, a name taken): `container_start`, with its
    words, and nothing of the trial left running; not `daemon_died`, the daemon still answers."""
    s = fake_session(monkeypatch, tmp_path, {"codes": {}, "create_refused": "invalid mount config for type bind"})
    monkeypatch.setattr(s, "image_for", lambda spec: "strata-fio:x")
    monkeypatch.setattr(s, "_journal_container", lambda running, r, handle, image: ["create", "--name", "c0", image])
    req = InstanceRequest(0, ["true"], tmp_path / "out0")
    with pytest.raises(TrialFailure) as e:
        s.start([req], PathHandle("bind", "dir", "/data", str(tmp_path / "data")), Load(), tmp_path / "sync")
    assert e.value.category == "container_start" and "invalid mount config for type bind" in str(e.value), e.value
