"""The vm runtime without root or QEMU: command lines from parameters and limits, throttling,
share selection, the agent script (its functions run for real with /bin/sh on temp dirs),
guest-side stats, the clock protocol, and the undo of journaled processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from strata.core.errors import Unsupported
from strata.core.params import Limits, Load
from strata.stack.devices import DeviceHandle
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.filesystems import Mounted
from strata.stack.journal import Journal, pending
from strata.stack.vm import agent, guest, guest_stats, qemu
from strata.stack.vm.accel import Probe
from strata.stack.vm.cgroup import VmCgroup, planned_dirs
from strata.stack.vm.params import VmRuntime, memory_for, vcpus_for
from strata.stack.vm.running import VmRunning, default_boot_timeout_s
from strata.stack.vm.runtime import choose_share, session_facts
from strata.stack.vm.session import VmSession


def spec(**over) -> qemu.VmSpec:
    base = dict(
        accel="tcg",
        vcpus=2,
        memory_bytes=1 << 30,
        kernel="/g/vmlinuz",
        initrd="/g/initrd.img",
        rootfs="/g/rootfs.img",
        console_log="/r/inst-0/console.log",
        pidfile="/run/strata-vm-run-ab/vm0.pid",
        append="strata.share=virtiofs strata.index=0",
    )
    base.update(over)
    return qemu.VmSpec(**base)


def opt(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


# ---- QEMU command lines ------------------------------------------------------------


def test_argv_tcg_no_network_no_display_direct_kernel_boot():
    argv = qemu.qemu_argv(spec())
    assert argv[0] == "qemu-system-x86_64"
    assert opt(argv, "-accel") == ["tcg,thread=multi"] and opt(argv, "-cpu") == ["max"]
    assert "-nodefaults" in argv and opt(argv, "-nic") == ["none"] and opt(argv, "-display") == ["none"]
    assert "-no-reboot" in argv  # the agent powers off; a panic ends QEMU instead of rebooting
    assert opt(argv, "-smp") == ["2"] and opt(argv, "-m") == ["1024M"]
    assert opt(argv, "-kernel") == ["/g/vmlinuz"] and opt(argv, "-initrd") == ["/g/initrd.img"]
    cmdline = opt(argv, "-append")[0]
    assert "console=ttyS0" in cmdline and "root=/dev/vda ro" in cmdline and f"init={agent.AGENT_PATH}" in cmdline
    assert cmdline.endswith("strata.share=virtiofs strata.index=0")
    assert opt(argv, "-chardev")[0] == "file,id=console,path=/r/inst-0/console.log"
    assert opt(argv, "-serial") == ["chardev:console"]
    # the root disk first (it is /dev/vda) and read-only: N VMs boot from one file
    assert opt(argv, "-drive")[0] == "file=/g/rootfs.img,if=none,id=root,format=raw,readonly=on"
    assert opt(argv, "-pidfile") == ["/run/strata-vm-run-ab/vm0.pid"]


def test_argv_kvm():
    argv = qemu.qemu_argv(spec(accel="kvm"))
    assert opt(argv, "-accel") == ["kvm"] and opt(argv, "-cpu") == ["host"]
    with pytest.raises(ValueError):
        qemu.accel_args("hvf")


def test_data_disk_defaults_cache_none_aio_native():
    argv = qemu.qemu_argv(spec(disk=qemu.Disk("/dev/loop3")))
    drive = opt(argv, "-drive")[1]
    assert drive == "file=/dev/loop3,if=none,id=data,format=raw,cache=none,aio=native"
    device = opt(argv, "-device")[1]
    assert device == f"virtio-blk-pci,drive=data,serial={agent.DATA_SERIAL},num-queues=1"
    assert "iothread,id=io0" not in opt(argv, "-object")


def test_data_disk_parameters_and_throttling():
    limits = Limits(read_bps="20MiB", write_bps=10 << 20, read_iops=500, write_iops=300)
    throttle = qemu.throttle_options(limits)
    assert throttle == {
        "throttling.bps-read": 20 << 20,
        "throttling.bps-write": 10 << 20,
        "throttling.iops-read": 500,
        "throttling.iops-write": 300,
    }
    disk = qemu.Disk(
        "/w/a,b/0.qcow2", "qcow2", "writeback", "threads", iothread=True, queues=4, throttle=throttle, share_rw=True
    )
    argv = qemu.qemu_argv(spec(disk=disk))
    drive = opt(argv, "-drive")[1]
    assert drive.startswith("file=/w/a,,b/0.qcow2,if=none,id=data,format=qcow2,cache=writeback,aio=threads,")
    assert f"throttling.bps-read={20 << 20}" in drive.split(",") and "throttling.iops-write=300" in drive.split(",")
    assert "iothread,id=io0" in opt(argv, "-object")
    assert opt(argv, "-device")[1] == (
        f"virtio-blk-pci,drive=data,serial={agent.DATA_SERIAL},num-queues=4,iothread=io0,share-rw=on"
    )


def test_no_limits_no_throttling():
    assert qemu.throttle_options(Limits()) == {}
    assert qemu.throttle_options(Limits(cpus=2, memory="1GiB")) == {}


def test_virtiofs_needs_shared_guest_memory():
    shares = (qemu.Share("strata-out", "/r/inst-0", "virtiofs", "/run/x/vm0-out.sock"),)
    argv = qemu.qemu_argv(spec(shares=shares))
    assert "memory-backend-memfd,id=mem,size=1024M,share=on" in opt(argv, "-object")
    assert opt(argv, "-machine") == ["pc,memory-backend=mem"]
    assert "socket,id=fs-strata-out,path=/run/x/vm0-out.sock" in opt(argv, "-chardev")
    assert "vhost-user-fs-pci,chardev=fs-strata-out,tag=strata-out" in opt(argv, "-device")


def test_9p_shares_need_no_daemon_nor_shared_memory():
    shares = (qemu.Share("strata-out", "/r/a,b", "9p"), qemu.Share("strata-sync", "/r/sync", "9p"))
    argv = qemu.qemu_argv(spec(shares=shares))
    assert not any("memory-backend" in o for o in opt(argv, "-object"))
    assert opt(argv, "-virtfs") == [
        "local,path=/r/a,,b,mount_tag=strata-out,id=fs-strata-out,security_model=none,multidevs=remap",
        "local,path=/r/sync,mount_tag=strata-sync,id=fs-strata-sync,security_model=none,multidevs=remap",
    ]


def test_virtiofsd_passes_o_direct_and_caches_nothing():
    argv = qemu.virtiofsd_argv("/usr/lib/qemu/virtiofsd", "/run/s.sock", "/m/bind/0")
    assert argv[:3] == ["/usr/lib/qemu/virtiofsd", "--socket-path=/run/s.sock", "-o"]
    assert "source=/m/bind/0" in argv and "cache=none" in argv and "allow_direct_io" in argv


# ---- parameters and limits -----------------------------------------------------------


def test_params_defaults_and_names():
    p = VmRuntime()
    assert (p.name, p.accel, p.disk_cache, p.disk_aio, p.guest_filesystem) == ("vm", "auto", "none", "native", "none")
    assert VmRuntime(guest_filesystem="xfs").name == "vm:xfs"
    assert (
        VmRuntime(disk_cache="writeback", disk_aio="threads", iothread=True, queues=2).name
        == "vm-writeback-threads-iothread-q2"
    )
    assert VmRuntime(memory="2GiB").memory == 2 << 30
    assert VmRuntime(name="mine").name == "mine"


@pytest.mark.parametrize(
    "bad",
    [
        {"disk_cache": "writeback"},  # aio=native needs O_DIRECT
        {"memory": "64MiB"},
        {"guest_mount_options": ["noatime"]},  # no guest file system to mount
        {"accel": "hvf"},
        {"queues": 0},
        {"unknown": 1},
    ],
)
def test_params_rejected(bad):
    with pytest.raises(ValidationError):
        VmRuntime(**bad)


def test_limits_map_to_vcpus_and_memory():
    p = VmRuntime(vcpus=2, memory="1GiB")
    assert vcpus_for(p, Limits()) == 2 and memory_for(p, Limits()) == 1 << 30
    assert vcpus_for(p, Limits(cpus=0.5)) == 1 and vcpus_for(p, Limits(cpus=2.2)) == 3
    assert memory_for(p, Limits(memory=(512 << 20) + 123)) == 512 << 20


def test_boot_timeout_scales_with_vms_per_host_cpu():
    cpus = os.cpu_count() or 1
    assert default_boot_timeout_s("kvm", 1, 1) == 60
    assert default_boot_timeout_s("tcg", 4 * cpus, 1) == 4 * 240


# ---- share selection and facts ----------------------------------------------------------


def probe(**over) -> Probe:
    base = dict(accel="tcg", boots=True, boot_s=12.0, error=None, virtiofs=True, ninep=True)
    base.update(over)
    return Probe(**base)


def test_share_selection():
    assert choose_share(VmRuntime(), probe()) == "virtiofs"
    assert choose_share(VmRuntime(), probe(virtiofs=False)) == "9p"
    assert choose_share(VmRuntime(share="9p"), probe()) == "9p"
    with pytest.raises(Unsupported, match="virtiofs does not work"):
        choose_share(VmRuntime(share="virtiofs"), probe(virtiofs=False))
    with pytest.raises(Unsupported, match="neither"):
        choose_share(VmRuntime(), probe(virtiofs=False, ninep=False))


def test_tcg_facts_say_emulated_and_keep_the_kvm_error():
    g = guest.Guest(
        "k",
        Path("/g"),
        Path("/g/vmlinuz"),
        Path("/g/initrd.img"),
        Path("/g/rootfs.img"),
        {"suite": "bookworm", "kernel": "6.1.0-50-amd64", "packages": {"fio": "3.33-3"}},
    )
    kvm = probe(accel="kvm", boots=False, error="failed to set MSR 0x10a")
    facts = session_facts(VmRuntime(), g, probe(), kvm, "virtiofs")
    assert facts["accel"] == "tcg" and facts["emulated"] is True and "MSR" in facts["kvm_error"]
    assert facts["disk"] == {
        "interface": "virtio-blk",
        "cache": "none",
        "aio": "native",
        "iothread": False,
        "queues": 1,
    }
    assert facts["share"] == "virtiofs" and "allow_direct_io" in facts["share_options"]
    assert facts["guest"]["packages"]["fio"] == "3.33-3"
    kvm_facts = session_facts(VmRuntime(), g, probe(accel="kvm"), None, "9p")
    assert kvm_facts["emulated"] is False and "kvm_error" not in kvm_facts and kvm_facts["share"] == "9p"


# ---- paths ----------------------------------------------------------------------------


def session(tmp_path: Path, fs: str, **params) -> VmSession:
    dev = DeviceHandle("d", "/dev/loop9", 1 << 30, ["loop9"])
    mp = None if fs == "raw" else tmp_path / "mnt"
    if mp:
        mp.mkdir(parents=True)
    journal = Journal("unit", tmp_path / "state")
    return VmSession(VmRuntime(**params), Mounted(Filesystem(type=fs), dev, mp), journal, None, "tcg", "virtiofs", {})


def test_device_path_needs_a_raw_stack_and_gives_a_device_or_a_guest_fs(tmp_path):
    with session(tmp_path, "raw").path("device", tmp_path / "t", Load(containers=2)) as h:
        assert (h.target_kind, h.target_path) == ("device", agent.DEVICE_IN_GUEST)
        assert h.per_instance == [{"disk": "/dev/loop9", "format": "raw"}] * 2
    with session(tmp_path / "x", "raw", guest_filesystem="ext4").path("device", tmp_path / "t", Load()) as h:
        assert (h.target_kind, h.target_path) == ("dir", agent.DATA_DIR)
    with pytest.raises(Unsupported, match="use filesystem raw"):
        with session(tmp_path / "y", "ext4").path("device", tmp_path / "t", Load()):
            pass
    with pytest.raises(Unsupported, match="cannot each make a xfs on one device"):
        with session(tmp_path / "z", "raw", guest_filesystem="xfs").path("device", tmp_path / "t", Load(containers=2)):
            pass


def test_a_memory_limit_below_what_a_guest_needs_is_unsupported(tmp_path):
    with pytest.raises(Unsupported, match="at least 128 MiB"):
        with session(tmp_path, "raw").path("device", tmp_path / "t", Load(limits=Limits(memory="64MiB"))):
            pass


def test_bind_makes_and_removes_a_dir_per_vm(tmp_path):
    s = session(tmp_path, "ext4")
    with s.path("bind", tmp_path / "trial-1", Load(containers=2)) as h:
        dirs = [Path(p["dir"]) for p in h.per_instance]
        assert all(d.is_dir() for d in dirs) and h.target_path == agent.DATA_DIR
    assert not any(d.exists() for d in dirs) and not (tmp_path / "mnt" / "strata-bind").exists()


def test_other_paths_unsupported(tmp_path):
    for name in ("layer", "volume", "tmpfs"):
        with pytest.raises(Unsupported, match="device, image, bind"):
            with session(tmp_path / name, "ext4").path(name, tmp_path / "t", Load()):
                pass
    with pytest.raises(Unsupported, match="needs a file system"):
        with session(tmp_path / "raw", "raw").path("image", tmp_path / "t", Load()):
            pass


# ---- the agent -------------------------------------------------------------------------


def agent_functions(out: Path, sync: Path) -> str:
    """The agent's function definitions, pointed at temp dirs (its main part needs a guest)."""
    defs = agent.agent_script().split(agent.MAIN_MARK)[0]
    return f"{defs}\nOUT={out} SYNC={sync} I=0\n"


def test_agent_script_is_complete_and_valid_sh(tmp_path):
    text = agent.agent_script()
    assert "@" not in "".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#")).replace("$@", "")
    assert text.startswith("#!/bin/sh\n") and agent.MAIN_MARK in text
    (tmp_path / "agent").write_text(text)
    subprocess.run(["sh", "-n", str(tmp_path / "agent")], check=True)
    for needle in (
        "echo o > /proc/sysrq-trigger",
        "ready-$I",
        "$SYNC/go",
        "$OUT/start",
        "$OUT/end",
        "$OUT/rc",
        "mount -t virtiofs",
        "trans=virtio,version=9p2000.L,cache=none",
        "/proc/diskstats",
    ):
        assert needle in text, needle


def test_instance_files_round_trip_through_sh(tmp_path):
    out = tmp_path / "out"
    argv = ["fio", "--name=strata", "--filename=/data/a file", "it's", "$HOME", "--opt=a;b"]
    (out).mkdir()
    (out / "rc").write_text("0")  # stale, from an earlier attempt
    agent.write_instance_files(out, argv, "device", "xfs", ["noatime", "inode64"])
    assert not (out / "rc").exists()
    shown = subprocess.run(
        [
            "sh",
            "-c",
            f'. {out / agent.ENV_FILE}; echo "$STRATA_PATH|$STRATA_GUEST_FS|$STRATA_MKFS|$STRATA_MOUNT_OPTIONS"',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown == "device|xfs|mkfs.xfs -f -q -K|noatime,inode64\n"
    printer = tmp_path / "bin"
    printer.mkdir()
    (printer / "fio").write_text('#!/bin/sh\nfor a in "$@"; do echo "[$a]"; done\n')
    (printer / "fio").chmod(0o755)
    got = subprocess.run(
        ["sh", str(out / agent.COMMAND_FILE)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PATH": f"{printer}:{os.environ['PATH']}"},
    ).stdout
    assert got.splitlines() == [f"[{a}]" for a in argv[1:]]


def test_agent_waits_for_go_then_times_the_command(tmp_path):
    out, sync = tmp_path / "out", tmp_path / "sync"
    out.mkdir()
    sync.mkdir()
    (out / agent.COMMAND_FILE).write_text('echo "to stderr" >&2; echo "in $(pwd)"; exit 3\n')
    p = subprocess.Popen(["sh", "-c", agent_functions(out, sync) + "run_command; echo $? > $OUT/rc"])
    time.sleep(0.3)
    assert p.poll() is None and not (out / "start").exists()  # held at the barrier
    go = time.time()
    (sync / "go").write_text(f"{go}\n")
    assert p.wait(timeout=10) == 0
    start, end = float((out / "start").read_text()), float((out / "end").read_text())
    assert go - 0.01 <= start <= end <= time.time()
    assert (out / "rc").read_text() == "3\n"
    assert (out / "stderr").read_text() == "to stderr\n" and (out / "stdout").read_text() == f"in {out}\n"


def test_clock_protocol_agent_and_host(tmp_path):
    """The agent's clock round against the host's answer (running.py): host time comes back."""
    out, sync = tmp_path / "out", tmp_path / "sync"
    out.mkdir()
    sync.mkdir()
    running = VmRunning.__new__(VmRunning)
    running.sync_dir = sync
    stop = threading.Event()

    def host():
        while not stop.is_set():
            running._answer_clock(0)
            time.sleep(0.002)

    t = threading.Thread(target=host)
    t.start()
    try:
        got = subprocess.run(
            ["sh", "-c", agent_functions(out, sync) + "clock_round"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.split()
    finally:
        stop.set()
        t.join()
    a, b, h = map(float, got)
    assert a <= h <= b  # same clock here: the host answered between request and reply
    assert not (sync / "clock-req-0").exists()


def test_go_carries_the_host_time(tmp_path):
    running = VmRunning.__new__(VmRunning)
    running.sync_dir, running.vms = tmp_path, []
    t = running.go()
    assert float((tmp_path / "go").read_text()) == pytest.approx(t, abs=1e-5)
    assert not (tmp_path / "go.tmp").exists()


def test_agent_sample_parses_as_guest_stats(tmp_path):
    """The agent's sampler (shell builtins only) on this machine's /proc, read by guest_stats."""
    text = subprocess.run(
        ["sh", "-c", agent_functions(tmp_path, tmp_path) + "sample; sleep 0.3; sample"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    samples = guest_stats.parse(text)
    assert len(samples) == 2 and samples[1]["uptime_s"] >= samples[0]["uptime_s"]
    assert samples[0]["cpu"][1] > 0 and samples[0]["disks"]
    assert not any(n.startswith("loop") for n in samples[0]["disks"])


GUEST_STATS = """== 10.00
 254       0 vda 100 0 800 5 0 0 0 0 0 1 5 0 0 0 0 0 0
 254      16 vdb 10 0 80 5 2 0 16 1 0 1 5 0 0 0 0 0 0
cpu  100 0 50 800 50 0 0 0 0 0
cpu0 100 0 50 800 50 0 0 0 0 0
== 11.00
 254       0 vda 100 0 800 5 0 0 0 0 0 1 5 0 0 0 0 0 0
 254      16 vdb 1010 0 8080 5 2 0 16 1 0 1 5 0 0 0 0 0 0
cpu  150 0 100 850 50 0 0 0 0 0
== 12.00
 254      16 vdb 2010 0 16080 5 102 0 1616 1 0 1 5 0 0 0 0 0 0
cpu  200 0 150 900 50 0 0 0 0 0
"""


def test_guest_stats_summary():
    samples = guest_stats.parse(GUEST_STATS)
    s = guest_stats.summarize(samples, guest_stats.wall_offset("uptime_at_wall=10.00 1000.5\n"), 1001.0, 1002.0)
    assert s["samples"] == 3 and s["window_s"] == 2.0
    assert s["disks"]["vdb"] == {
        "reads": 2000,
        "read_bytes": 16000 * 512,
        "writes": 100,
        "write_bytes": 1600 * 512,
        "discard_ios": 0,
        "discard_bytes": 0,
        "flush_ios": 0,
    }
    assert s["cpu_busy_percent"] == pytest.approx(100 * 200 / 300, abs=0.1)
    assert s["series"]["t"] == [1001.5, 1002.5]
    assert s["series"]["disks"]["vdb"]["read_bytes_per_s"] == [8000 * 512, 8000 * 512]
    assert s["series"]["cpu_busy_percent"] == [66.7, 66.7]  # 100 busy of 150 ticks each second


def test_guest_stats_flushes_and_discards_where_the_kernel_counts_them():
    """The guest's view of the flushes and discards it sent its disks (17 fields after the name, Linux 5.5
    on); a kernel of 11 fields (before 4.18) has neither, and none is read as zero."""
    text = (
        "== 1.00\n 254 16 vdb 10 0 80 5 2 0 16 1 0 1 5 3 0 64 1 7 2\n"
        "== 2.00\n 254 16 vdb 10 0 80 5 12 0 96 1 0 1 5 5 0 128 1 27 9\n"
    )
    s = guest_stats.summarize(guest_stats.parse(text), None, None, None)
    assert s["disks"]["vdb"]["flush_ios"] == 20
    assert s["disks"]["vdb"]["discard_ios"] == 2 and s["disks"]["vdb"]["discard_bytes"] == 64 * 512
    assert s["series"]["disks"]["vdb"]["flush_ios_per_s"] == [20.0]
    old = guest_stats.parse(
        "== 1.00\n 254 16 vdb 10 0 80 5 2 0 16 1 0 1 5\n== 2.00\n 254 16 vdb 10 0 80 5 4 0 32 1 0 1 5\n"
    )
    assert guest_stats.summarize(old, None, None, None)["disks"]["vdb"] == {
        "reads": 0,
        "read_bytes": 0,
        "writes": 2,
        "write_bytes": 16 * 512,
    }


# ---- cgroups -----------------------------------------------------------------------------


def test_a_throttling_cgroup_below_our_own_blkio_only():
    own = {
        "cpu": Path("/sys/fs/cgroup/cpu"),
        "blkio": Path("/sys/fs/cgroup/blkio/outer"),
        "memory": Path("/sys/fs/cgroup/memory/x"),
        "name=systemd": Path("/sys/fs/cgroup/systemd"),
        "": Path("/sys/fs/cgroup/unified"),
    }
    assert planned_dirs("strata-vm-1", own) == {"blkio": "/sys/fs/cgroup/blkio/outer/strata-vm-1"}
    assert planned_dirs("v", {"": Path("/sys/fs/cgroup")}) == {"unified": "/sys/fs/cgroup/v"}


def test_cgroup_final_text_reads_as_container_counters(tmp_path):
    from strata.collectors.cgroup import final_counters

    cg = VmCgroup.__new__(VmCgroup)
    cg.dirs = {"blkio": str(tmp_path)}
    (tmp_path / "blkio.throttle.io_service_bytes").write_text("7:0 Read 8192\n7:0 Write 512\nTotal 8704\n")
    got = final_counters("== cpuacct/cpuacct.usage\n123456\n" + cg.final_text())
    assert got["cpu_ns"] == 123456 and got["read_bytes"] == 8192 and got["write_bytes"] == 512


def test_process_cpu_exact_at_reap_and_sampled_meanwhile():
    from strata.stack.vm.procstat import CpuSampler, cpu_s, reap

    # spins until it has used 0.8 s of CPU, however busy the machine is
    p = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.8: pass"])
    sampler = CpuSampler({"busy": p.pid}, period_s=0.3)
    sampler.start()
    assert cpu_s(p.pid) is not None and reap(p) is None  # still running
    while (total := reap(p)) is None:
        time.sleep(0.05)
    sampler.stop()
    assert p.returncode == 0 and p.poll() == 0
    assert 0.75 < total < 5  # the busy loop's CPU seconds, from wait4's rusage
    series = sampler.series()
    assert len(series["t"]) == len(series["busy"]) >= 2
    assert max(x for x in series["busy"] if x is not None) > 5  # percent of one CPU while it spun (idle: 0)
    assert cpu_s(p.pid) is None


# ---- processes: journaled, killed only while the command line matches ----------------------


def test_spawned_process_is_journaled_and_undone_by_pid(tmp_path):
    journal = Journal("unit-proc", tmp_path / "state")
    marker = str(tmp_path / "vm0.pid")
    proc = qemu.spawn(
        "qemu", [sys.executable, "-c", "import time; time.sleep(60)", marker], marker, journal, tmp_path / "log"
    )
    entry = pending(journal.path)[0]
    assert entry["kind"] == "vm_process" and entry["data"]["pid"] == proc.popen.pid
    assert entry["data"]["marker"] == marker
    from strata.stack.vm.qemu import UNDO

    UNDO["vm_process"](entry["data"])
    assert proc.popen.wait(timeout=10) == -9
    qemu.stop_proc(proc, journal)
    assert pending(journal.path) == []


def test_undo_spares_a_reused_pid(tmp_path):
    from strata.stack.vm.qemu import UNDO

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        UNDO["vm_process"]({"pid": other.pid, "marker": "/run/strata-vm-run-gone/vm0.pid", "exe": "qemu-system-x86_64"})
        assert other.poll() is None  # its command line does not hold the marker: not ours
    finally:
        other.kill()
        other.wait()


def test_undo_without_pid_finds_the_process_by_marker(tmp_path):
    """Killed between spawn and the journal's pid update: found by marker and executable name."""
    from strata.stack.vm.qemu import UNDO

    marker = str(tmp_path / "vm1.pid")
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        time.sleep(0.2)
        exe = os.path.basename(os.readlink(f"/proc/{p.pid}/exe"))
        UNDO["vm_process"]({"marker": marker, "exe": exe})
        assert p.wait(timeout=10) == -9
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_wait_for_socket(tmp_path):
    from strata.stack.vm.rundir import wait_for_socket

    sock = tmp_path / "s.sock"
    p = subprocess.Popen(["sh", "-c", f"sleep 0.2; touch {sock}; sleep 5"])
    try:
        assert wait_for_socket(str(sock), p, 5)
    finally:
        p.kill()
        p.wait()
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not wait_for_socket(str(tmp_path / "never.sock"), dead, 5)


# ---- the guest image key -------------------------------------------------------------------


def test_the_guest_holds_what_the_workloads_image_declares(tmp_path):
    """Issue 33: the guest follows Workload.image() as a container image does: its files, trees and packages are
    in the key (and a package beyond the base's makes another base); the bare guest is the probe's."""
    from strata.core.instances import ImageSpec

    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"engine v1")
    b.write_bytes(b"engine v2")
    wml = ImageSpec("wml", files=(("strata-wml", str(a)),))
    k1, k2 = guest.guest_key(wml), guest.guest_key(ImageSpec("wml", files=(("strata-wml", str(b)),)))
    assert k1 != k2 and k1 == guest.guest_key(wml) and len(k1) == 12
    assert guest.guest_key(guest.BARE) != k1 and guest.guest_key() == guest.guest_key(guest.BARE)
    fio, pg = ImageSpec("fio", packages=("fio",)), ImageSpec("pg", packages=("postgresql-15",))
    assert guest.extra_packages(fio) == ("fio",) and guest.extra_packages(pg) == ("postgresql-15",)
    assert guest.extra_packages(wml) == () and "fio" not in guest.PACKAGES  # the base holds no workload's tool
    assert guest.base_key(guest.extra_packages(fio)) != guest.base_key() != guest.base_key(("postgresql-15",))
    with pytest.raises(Exception, match="plain file name"):
        guest.guest_key(ImageSpec("x", files=(("../x", str(a)),)))


def test_the_guest_tree_gets_the_images_files_and_trees(tmp_path):
    from strata.core.instances import ImageSpec

    tree, src = tmp_path / "tree", tmp_path / "lib"
    (tree / "usr/local/bin").mkdir(parents=True)
    (tree / "etc").mkdir()
    src.mkdir()
    (src / "x.jar").write_bytes(b"jar")
    tool = tmp_path / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    guest._install_agent(tree, ImageSpec("t", files=(("tool", str(tool)),), trees=(("/opt/app/lib", str(src)),)))
    assert (tree / "usr/local/bin/tool").read_bytes() == b"#!/bin/sh\n"
    assert (tree / "opt/app/lib/x.jar").read_bytes() == b"jar"


def test_kernel_is_the_elf_inside_the_bzimage_when_it_has_a_pvh_entry(tmp_path):
    import lzma

    boot = tmp_path / "boot"
    boot.mkdir()
    elf = b"\x7fELF" + bytes(range(256)) * 64
    (boot / "vmlinuz-6.1").write_bytes(b"MZ setup code" * 100 + lzma.compress(elf) + b"trailer")
    (boot / "config-6.1").write_text("CONFIG_X=y\nCONFIG_PVH=y\n")
    assert guest._kernel(tmp_path, "6.1", tmp_path / "vmlinux") == "elf-pvh"
    assert (tmp_path / "vmlinux").read_bytes() == elf
    (boot / "config-6.1").write_text("CONFIG_X=y\n# CONFIG_PVH is not set\n")
    assert guest._kernel(tmp_path, "6.1", tmp_path / "vmlinux") == "bzimage"
    assert (tmp_path / "vmlinux").read_bytes() == (boot / "vmlinuz-6.1").read_bytes()


def test_an_emulated_session_says_why():
    from strata.stack.vm.accel import Probe
    from strata.stack.vm.runtime import emulated_reason

    tcg = Probe("tcg", True, 11.0, None, True, True)
    kvm = Probe("kvm", False, None, "KVM_RUN failed: Bad address", False, False)
    assert emulated_reason(Probe("kvm", True, 2.0, None, True, True), None) == ""
    assert "TCG" in emulated_reason(tcg, None) and "KVM failed" not in emulated_reason(tcg, None)
    assert "KVM failed (KVM_RUN failed: Bad address)" in emulated_reason(tcg, kvm)


def test_ensure_guest_fails_clearly_when_a_build_leaves_no_manifest(tmp_path, monkeypatch):
    """A guest build that returns without its manifest is a StrataError naming the directory, not a None
    handed to the VM session (which failed later on `guest.kernel`)."""
    import contextlib

    from strata.core.errors import StrataError

    monkeypatch.setattr(guest, "images_dir", lambda: tmp_path)
    monkeypatch.setattr(guest, "build_lock", contextlib.nullcontext)
    monkeypatch.setattr(guest, "base_tarball", lambda journal, packages=(): tmp_path / "base.tar")
    monkeypatch.setattr(guest, "_build_guest", lambda journal, base, key, image: None)
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(StrataError, match="no readable manifest.json") as e:
        guest.ensure_guest()
    assert str(tmp_path) in str(e.value)


def test_a_virtiofs_share_without_virtiofsd_is_a_vm_start_failure(tmp_path, monkeypatch):
    """virtiofsd gone between available() and the trial: a TrialFailure that says so, not a None in QEMU's argv."""
    from strata.core.errors import TrialFailure
    from strata.core.instances import InstanceRequest
    from strata.stack.vm import running

    monkeypatch.setattr(running, "virtiofsd_binary", lambda: None)
    vms = VmRunning(session(tmp_path, "ext4"), None, Load(), tmp_path / "sync", None)
    vm = running.Vm(InstanceRequest(0, ["true"], tmp_path / "out"))
    with pytest.raises(TrialFailure, match="virtiofsd not found") as e:
        vms._shares(vm, {})
    assert e.value.category == "vm_start"


@pytest.mark.parametrize("signal_number", [9, 15])
def test_a_qemu_killed_mid_trial_is_vm_died_named_with_its_signal_and_console(tmp_path, signal_number):
    """QEMU's death is read from QEMU's own process (its exit status), whatever the guest was doing: the trial
    ends as `vm_died` with the signal and the console's tail, and every VM of the trial is stopped."""
    from types import SimpleNamespace

    from strata.core.errors import TrialFailure
    from strata.core.instances import InstanceRequest
    from strata.stack.vm.running import Vm

    session = SimpleNamespace(journal=None, running=[])
    running = VmRunning(session, None, Load(), tmp_path / "sync", None)
    session.running.append(running)
    out = tmp_path / "inst-0"
    out.mkdir()
    (out / "console.log").write_text("Linux version 6.1\nstrata-agent: running fio\n")
    popen = subprocess.Popen(["sleep", "60"])
    vm = Vm(InstanceRequest(0, ["fio"], out))
    vm.qemu = qemu.Proc("qemu", popen, 1, "m")
    running.vms.append(vm)
    running.check()  # alive: nothing to say
    os.kill(popen.pid, signal_number)
    popen.wait()
    with pytest.raises(TrialFailure) as e:
        running.wait(30)
    assert e.value.category == "vm_died" and f"killed by signal {signal_number}" in str(e.value)
    assert "strata-agent: running fio" in e.value.stderr  # the console's tail comes with it
    assert running.stopped and running not in session.running
