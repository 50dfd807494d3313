"""The vm runtime for real (root, QEMU; TCG on this machine, KVM where it boots): the guest
image, fio and the engine in VMs on the device, image and bind paths, N VMs at one barrier,
boot timeouts, a killed QEMU, and `strata cleanup` after kill -9.

Sizes are small: under TCG a guest boots in ~15-40 s and its I/O is ~100x slower than native.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from strata.collectors import REGISTRY as COLLECTORS
from strata.collectors.base import CollectContext
from strata.collectors.sampler import Sampler
from strata.core.errors import TrialFailure
from strata.core.params import Limits, Load
from strata.results import validity
from strata.run.trial import _requests
from strata.stack.devices.loop import LOOP
from strata.stack.devices.loop import LoopParams as LoopDevice
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.journal import Journal, pending
from strata.stack.procfs import cmdline
from strata.stack.vm import accel
from strata.stack.vm.guest import ensure_guest
from strata.stack.vm.params import VmRuntime
from strata.stack.vm.qemu import virtiofsd_binary
from strata.stack.vm.runtime import provision_vm
from strata.workloads.filebench import Filebench
from strata.workloads.fio import Fio
from tests.coverage import covers

from . import ledger
from .helpers import leftovers, strata


@contextlib.contextmanager
def provision_loop(params, journal, workdir):
    with LOOP.provision(params, journal, workdir) as dev:
        ledger.built("device:loop")
        yield dev


@contextlib.contextmanager
def provision_fs(fs, dev, journal, workdir):
    with FILESYSTEMS[fs.type].provision(fs, dev, journal, workdir) as mounted:
        ledger.built(f"filesystem:{fs.type}")
        yield mounted


pytestmark = pytest.mark.integration

FIO = {"preset": "rr", "size": "32MiB", "runtime": 3, "ramp_time": 0}


@pytest.fixture(scope="module")
def guest():
    return ensure_guest()  # built once per machine (~3 min the first time), then found


def vm_leftovers(marker: str) -> list[str]:
    """QEMU or virtiofsd processes, run dirs and cgroups of ours still around."""
    left = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            cmd = cmdline(int(p.name))
            if marker in cmd and ("qemu" in cmd or "virtiofsd" in cmd):
                left.append(f"process {p.name}: {cmd[:150]}")
    for root in (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/blkio")):
        left += [f"cgroup {d}" for d in root.glob("strata-vm-*")]
    return left


class Stack:
    """A loop device, a file system and a vm session, all torn down and checked at the end."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.workdir = Path(f"/var/tmp/strata-it-vm-{uuid.uuid4().hex[:8]}")
        self.journal = Journal("it-vm", tmp_path / "state")
        self.es = contextlib.ExitStack()

    def open(self, fs: str = "raw", size_bytes: int = 256 << 20, **params):
        dev = self.es.enter_context(provision_loop(LoopDevice(name="vm", size=size_bytes), self.journal, self.workdir))
        mounted = self.es.enter_context(provision_fs(Filesystem(type=fs), dev, self.journal, self.workdir))
        session = self.es.enter_context(provision_vm(VmRuntime(**params), mounted, self.journal, self.workdir, {}))
        ledger.built("runtime:vm")
        return dev, session

    def close(self) -> None:
        self.es.close()
        assert pending(self.journal.path) == [], pending(self.journal.path)  # every VM resource released
        self.journal.close()
        assert leftovers(self.workdir) == [] and vm_leftovers(str(self.tmp)) == []
        if self.workdir.exists():
            self.workdir.rmdir()


@pytest.fixture
def stack(tmp_path, guest):
    s = Stack(tmp_path)
    yield s
    s.close()


def run(session, dev, path: str, wl, raw: dict, load: Load, art: Path):
    """One trial's instances under the real collectors (as strata.run.trial runs them)."""
    spec = wl.parse_params(raw, Path("."))
    art.mkdir(parents=True, exist_ok=True)
    with session.path(path, art, load) as handle:
        requests = _requests(wl, spec, load, session, handle, art)
        try:  # the VMs boot as they start
            running = session.start(requests, handle, load, art / "sync")
        except TrialFailure as e:
            ledger.failed(e.category, "vm")
            raise
        try:
            running.ready(600)
            _ran_on(session, path)
            ctx = CollectContext(dev.diskstats, running.cgroups)
            with Sampler([cls(ctx) for cls in COLLECTORS.values()]) as sampler:
                running.go()
                outputs = running.wait(2 * wl.estimate_s(spec) + 300)
        finally:
            running.stop()
    if all(o.returncode == 0 for o in outputs):
        ledger.built(f"workload:{wl.name}", f"workload:{wl.name}@vm")
    return spec, outputs, sampler


def _ran_on(session, path: str) -> None:
    """The VMs booted on `path`; on a bind share, the share asked for and the one the host chose."""
    ledger.built(f"path:vm/{path}")
    if path == "bind":
        ledger.built(f"runtime:vm:{session.params.share}", f"runtime:vm:{session.facts['share']}")


def host_disk_bytes(sampler, dev) -> dict:
    stats = sampler.summary().get("diskstats", {})
    return {name: stats[name] for name in dev.diskstats if name in stats}


# ---- fio on each path -----------------------------------------------------------------------


@covers("device:loop", "runtime:vm", "path:vm/device", "workload:fio", "workload:fio@vm")
def test_fio_on_the_device(stack, tmp_path):
    dev, session = stack.open("raw")
    facts = session.facts
    assert facts["accel"] in ("tcg", "kvm") and facts["emulated"] == (facts["accel"] == "tcg")
    assert facts["disk"]["cache"] == "none" and facts["share"] in ("virtiofs", "9p")
    spec, outputs, sampler = run(session, dev, "device", Fio(), FIO, Load(), tmp_path / "t1")
    o = outputs[0]
    assert o.returncode == 0, o.stderr
    assert o.end_time_s - o.start_time_s >= FIO["runtime"]
    parsed = Fio().parse(spec, outputs)
    assert parsed.metrics["read"]["iops"] > 10
    # the fio JSON came back through the share; the console and QEMU's command line are kept
    assert json.loads((o.out_dir / "fio.json").read_text())["jobs"][0]["job options"]["rw"] == "randread"
    console = (o.out_dir / "console.log").read_text()
    assert "strata-agent: ready" in console and "done rc=0" in console
    vm = json.loads((o.out_dir / "vm.json").read_text())
    assert any("cache=none,aio=native" in a for a in vm["argv"]) and vm["disk"]["path"] == dev.path
    assert 0 < vm["ready_after_s"] < 600  # boot, clock and data prepared, outside the measurement
    # the guest clock was set from the host's; the guest's own counters and QEMU's came back
    clock = dict(ln.split("=", 1) for ln in (o.out_dir / "clock.txt").read_text().splitlines())
    assert abs(float(clock["residual_s"])) < 0.5
    guest_stats = json.loads((o.out_dir / "guest-stats.json").read_text())
    moved = parsed.moved_bytes["read"]
    assert guest_stats["disks"][guest_stats["data_disk"]]["read_bytes"] >= 0.9 * moved
    assert {"flush_ios", "discard_ios"} <= set(guest_stats["disks"][guest_stats["data_disk"]])  # the guest's view
    # QEMU's and virtiofsd's host CPU, as a container's final counters and per second
    from strata.collectors.cgroup import final_counters

    assert final_counters((o.out_dir / "cgroup-final.txt").read_text())["cpu_ns"] > 1e9
    cpu = json.loads((o.out_dir / "vm-cpu.json").read_text())
    assert cpu["total_s"]["qemu"] > 1 and any(x for x in cpu["series_percent"]["qemu"] if x)
    # O_DIRECT through cache=none: the host's disks moved the bytes (no cache answered)
    flag = validity.cache(parsed.moved_bytes, host_disk_bytes(sampler, dev), True, "device").to_json()
    assert not flag["suspect"], flag


@covers("device:loop", "runtime:vm", "path:vm/image", "workload:fio", "workload:fio@vm")
def test_fio_on_a_qcow2_image_with_a_guest_file_system(stack, tmp_path):
    dev, session = stack.open("ext4", 512 << 20, image_format="qcow2", guest_filesystem="ext4")
    spec, outputs, sampler = run(session, dev, "image", Fio(), FIO, Load(), tmp_path / "t2")
    o = outputs[0]
    assert o.returncode == 0, o.stderr
    vm = json.loads((o.out_dir / "vm.json").read_text())
    image = Path(vm["disk"]["path"])
    assert vm["disk"]["format"] == "qcow2" and str(image).startswith(str(session.mounted.mountpoint))
    assert not image.exists() and not image.parent.exists()  # removed with the path
    assert " /data ext4 " in (o.out_dir / "guest-mounts.txt").read_text()
    assert Fio().parse(spec, outputs).metrics["read"]["iops"] > 10


@pytest.mark.parametrize(
    "share",
    [
        pytest.param("auto", marks=covers("runtime:vm:auto", "runtime:vm:virtiofs")),  # here
        pytest.param("9p", marks=covers("runtime:vm:9p")),
    ],
)
@covers("device:loop", "filesystem:ext4", "runtime:vm", "path:vm/bind", "workload:fio", "workload:fio@vm")
def test_fio_on_a_bind_share(stack, tmp_path, share):
    dev, session = stack.open("ext4", 256 << 20, share=share)
    # `auto` takes virtiofs where the host's probe boot mounted it (virtiofsd present and working), else 9p: the
    # host decides, so the test asks the host (the probe's verdict, cached for this boot), not this VM's kind
    kind = session.facts["share"]
    if share == "9p" or virtiofsd_binary() is None:
        assert kind == "9p", session.facts
    else:
        probes = json.loads(accel.cache_path().read_text()).values()
        verdicts = {p["virtiofs"] for p in probes if p["accel"] == session.facts["accel"] and p["boots"]}
        assert len(verdicts) == 1, probes  # one guest, one verdict
        assert kind == ("virtiofs" if verdicts.pop() else "9p"), (session.facts, probes)
    print(f"\nshare {share}: {kind}")
    spec, outputs, sampler = run(session, dev, "bind", Fio(), FIO, Load(), tmp_path / "t3")
    o = outputs[0]
    assert o.returncode == 0, o.stderr
    assert f" /data {kind} " in (o.out_dir / "guest-mounts.txt").read_text()
    parsed = Fio().parse(spec, outputs)
    assert parsed.metrics["read"]["iops"] > 10
    if kind == "virtiofs":  # allow_direct_io: the guest's O_DIRECT reaches the host file
        flag = validity.cache(parsed.moved_bytes, host_disk_bytes(sampler, dev), True, "bind").to_json()
        assert not flag["suspect"], flag


@covers("device:loop", "runtime:vm", "path:vm/image", "workload:filebench", "workload:filebench@vm")
def test_filebench_personality_with_the_engine(stack, tmp_path):
    dev, session = stack.open("ext4", 512 << 20, guest_filesystem="ext4")
    raw = {"personality": "randomfileaccess", "runtime": 3, "set": {"nfiles": 100, "nthreads": 2}}
    spec, outputs, _ = run(session, dev, "image", Filebench(), raw, Load(), tmp_path / "t4")
    assert outputs[0].returncode == 0, outputs[0].stderr
    parsed = Filebench().parse(spec, outputs)
    assert parsed.metrics["primary"]["ops_per_s"] > 0


@covers("device:loop", "runtime:vm", "path:vm/device", "workload:fio", "workload:fio@vm")
def test_two_vms_at_one_barrier(stack, tmp_path):
    dev, session = stack.open("raw")
    spec, outputs, sampler = run(session, dev, "device", Fio(), FIO, Load(containers=2), tmp_path / "t5")
    assert [o.returncode for o in outputs] == [0, 0], [o.stderr for o in outputs]
    go = float((tmp_path / "t5" / "sync" / "go").read_text())
    starts = [o.start_time_s for o in outputs]
    assert all(s >= go - 0.5 for s in starts), (go, starts)  # none started before the barrier (clock error < 0.5 s)
    assert max(starts) - min(starts) < 5.0
    vms = [json.loads((o.out_dir / "vm.json").read_text()) for o in outputs]
    assert all(any(a.endswith("share-rw=on") for a in vm["argv"]) for vm in vms)  # two writers of one device
    assert all((o.out_dir / "vm-cpu.json").exists() for o in outputs)


@covers("device:loop", "runtime:vm", "path:vm/bind", "workload:fio", "workload:fio@vm")
def test_limits_become_vcpus_memory_and_throttling(stack, tmp_path):
    """Device: QEMU's block throttling; bind: blkio rules for QEMU and virtiofsd; cpus and memory: the VM's size."""
    dev, session = stack.open("ext4", 256 << 20)
    limits = Limits(read_iops=50, cpus=1.5, memory="512MiB")
    spec, outputs, _ = run(session, dev, "bind", Fio(), FIO, Load(limits=limits), tmp_path / "tb")
    o = outputs[0]
    assert o.returncode == 0, o.stderr
    vm = json.loads((o.out_dir / "vm.json").read_text())
    assert vm["vcpus"] == 2 and vm["memory_bytes"] == 512 << 20
    assert any(k.endswith("read_iops_device") for k in vm["blkio_throttle"])
    assert "cpu1 " in (o.out_dir / "guest-stats.txt").read_text()  # the guest has two vCPUs
    assert Fio().parse(spec, outputs).metrics["read"]["iops"] < 50 * 1.3


@covers("device:loop", "runtime:vm", "path:vm/device", "workload:fio", "workload:fio@vm")
def test_qemu_block_throttling_on_the_device(stack, tmp_path):
    dev, session = stack.open("raw")
    spec, outputs, _ = run(session, dev, "device", Fio(), FIO, Load(limits=Limits(read_iops=50)), tmp_path / "tq")
    vm = json.loads((outputs[0].out_dir / "vm.json").read_text())
    assert vm["disk"]["throttle"] == {"throttling.iops-read": 50}
    assert Fio().parse(spec, outputs).metrics["read"]["iops"] < 50 * 1.3


# ---- failures ---------------------------------------------------------------------------


@covers("device:loop", "runtime:vm", "fault:boot_timeout")
def test_a_vm_that_does_not_boot_in_time_fails_with_its_console(stack, tmp_path):
    dev, session = stack.open("raw", boot_timeout_s=3)
    with pytest.raises(TrialFailure) as e:
        run(session, dev, "device", Fio(), FIO, Load(), tmp_path / "t6")
    assert e.value.category == "boot_timeout" and "not ready 3 s after QEMU started" in str(e.value)
    console = (tmp_path / "t6" / "inst-0" / "console.log").read_text()  # kept with the trial
    assert "Linux version" in console and console[-200:] in e.value.stderr  # the failure carries its tail


@covers("device:loop", "runtime:vm", "path:vm/bind", "workload:fio", "workload:fio@vm", "fault:vm_died")
def test_a_killed_qemu_fails_the_trial_and_leaves_nothing(stack, tmp_path):
    dev, session = stack.open("ext4", 256 << 20)
    spec = Fio().parse_params({**FIO, "runtime": 60}, Path("."))
    art = tmp_path / "t7"
    art.mkdir()
    load = Load()
    with session.path("bind", art, load) as handle:
        requests = _requests(Fio(), spec, load, session, handle, art)
        running = session.start(requests, handle, load, art / "sync")
        _ran_on(session, "bind")
        running.go()
        time.sleep(5)
        ledger.built("workload:fio", "workload:fio@vm")  # for 5 s, until its VM is killed
        pids = [p.popen.pid for vm in running.vms for p in vm.procs]
        os.kill(running.vms[0].qemu.popen.pid, signal.SIGKILL)
        with pytest.raises(TrialFailure) as e:
            running.wait(300)
        ledger.failed(e.value.category, "vm")
        running.stop()
    assert e.value.category == "vm_died" and "killed by signal 9" in str(e.value)
    assert "console.log" in e.value.stderr
    assert not any(Path(f"/proc/{p}").exists() and cmdline(p) for p in pids)
    assert vm_leftovers(str(tmp_path)) == []


KILLED_RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from strata.core.instances import InstanceRequest
    from strata.core.params import Limits, Load
    from strata.stack.devices.loop import LOOP, LoopParams as LoopDevice
    from strata.stack.filesystems.mkfs import EXT4
    from strata.stack.filesystems import FilesystemParams as Filesystem
    from strata.stack.journal import Journal
    from strata.stack.vm.params import VmRuntime
    from strata.stack.vm.runtime import provision_vm

    state, workdir, art = map(Path, sys.argv[1:4])
    j = Journal("killed", state)
    load = Load(limits=Limits(read_iops=1000))   # a throttled bind path: the VM gets a blkio cgroup
    with LOOP.provision(LoopDevice(name="vmk", size=256 << 20), j, workdir) as dev, \\
            EXT4.provision(Filesystem(type="ext4"), dev, j, workdir) as mounted, \\
            provision_vm(VmRuntime(), mounted, j, workdir, {}) as s, \\
            s.path("image", art / "images", load), s.path("bind", art, load) as h:
        running = s.start([InstanceRequest(0, ["sleep", "600"], art / "inst-0")], h, load, art / "sync")
        print("READY", flush=True)
        time.sleep(600)
""")


@covers("device:loop", "runtime:vm", "fault:kill9")
def test_kill_9_then_cleanup_removes_everything(tmp_path, guest):
    state, workdir, art = tmp_path / "state", Path(f"/var/tmp/strata-it-vm-{uuid.uuid4().hex[:8]}"), tmp_path / "t8"
    (tmp_path / "killed.py").write_text(KILLED_RUN)
    p = subprocess.Popen(
        [sys.executable, str(tmp_path / "killed.py"), str(state), str(workdir), str(art)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    image = run_dir = None
    try:
        line = p.stdout.readline()
        assert line.strip() == "READY", p.stderr.read() if p.poll() is not None else line
        entries = pending(next((state / "journal").glob("*.jsonl")))
        kinds = {e["kind"] for e in entries}
        image = next((e["data"]["path"] for e in entries if e["kind"] == "vm_image"), None)
        run_dir = next((e["data"]["path"] for e in entries if e["kind"] == "vm_rundir"), None)
        assert {"loop", "mount", "vm_image", "vm_rundir", "vm_cgroup", "vm_process"} <= kinds, kinds
        assert Path(image).exists() and Path(run_dir).is_dir()
        ledger.built("device:loop", "runtime:vm")  # the killed process's VM was up
    finally:
        p.kill()
        p.wait()
        # the CLI knows the vm kinds; it runs even when an assertion above failed (nothing is left behind)
        out = strata("cleanup", env={"STRATA_STATE_DIR": str(state)}).stdout
    undone = int(out.strip().splitlines()[-1].split()[1])
    ledger.kill9(p.returncode, undone)
    assert "could not undo" not in out and undone >= 6, out
    assert not list((state / "journal").glob("*.jsonl"))
    assert not Path(image).exists() and not Path(run_dir).exists()
    assert leftovers(workdir) == [] and vm_leftovers(str(tmp_path)) == [] and vm_leftovers(run_dir) == []
    if workdir.exists():
        workdir.rmdir()


@covers("device:loop", "filesystem:raw", "runtime:vm", "path:vm/device", "workload:fio", "workload:fio@vm")
def test_strata_run_on_a_vm_is_stored_as_emulated_and_leaves_nothing(tmp_path):
    """The vm runtime through `strata run`: the raw device passed into the guest, fio in it, the result stored
    with the guest's numbers, flagged `emulated` (TCG here, never compared), and nothing left behind."""
    from .helpers import results, write_spec

    workdir = Path(f"/var/tmp/strata-it-vm-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    spec = {
        "name": "vm-run",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "256MiB"}],
        "filesystems": ["raw"],
        "runtimes": ["vm"],
        "paths": ["device"],
        "workloads": [{"fio": FIO}],
        "loads": ["low"],
    }
    try:
        run = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=env, check=0)
        (r,) = results(tmp_path / "out")
        assert r["status"] == "ok", (r["flags"].get("failed"), run.stdout[-2000:])
        assert r["metrics"]["primary"]["value"] > 0 and r["metrics"]["read"]["iops"] > 0
        facts = r["stack_facts"]["runtime"]
        assert facts["emulated"] == (facts["accel"] == "tcg")
        assert bool(r["flags"].get("emulated")) == facts["emulated"]  # never compared as storage when emulated
    finally:
        strata("cleanup", "--force", env=env)
        assert leftovers(workdir) == [] and vm_leftovers(str(workdir)) == []
        if workdir.exists():
            workdir.rmdir()


@covers("device:loop", "filesystem:raw", "runtime:vm", "path:vm/device", "workload:fio", "workload:fio@vm")
def test_a_vm_disk_cache_that_drops_the_guests_flushes_is_flagged(tmp_path):
    """Issue 44: QEMU's cache=unsafe acknowledges the guest's flushes without passing them on, so the host's
    device under the VM sees none of the fsyncs fio asked for in the guest; cache=none passes each on."""
    from .helpers import results, write_spec

    workdir = Path(f"/var/tmp/strata-it-vm-{uuid.uuid4().hex[:8]}")
    env = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    fsync = {"name": "fsync", "rw": "randwrite", "bs": "4k", "size": "64MiB", "runtime": 8, "ramp_time": 1,
             "options": {"fsync": 1}}  # fmt: skip
    spec = {
        "name": "vm-flush",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "256MiB"}],
        "filesystems": ["raw"],
        "runtimes": [{"type": "vm", "disk_cache": "unsafe", "disk_aio": "threads"}, {"type": "vm"}],
        "paths": ["device"],
        "workloads": [{"fio": fsync}],
        "loads": ["low"],
    }
    try:
        strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", tmp_path / "out", env=env, check=0)
        by = {r["trial"]["runtime"]["disk_cache"]: r for r in results(tmp_path / "out")}
        for r in by.values():
            assert r["status"] == "ok", r["flags"].get("failed")
            assert r["writes"]["syncs"]["count"] >= 100, r["writes"]  # TCG: 50 to 400 fsyncs a second here
        unsafe, none = by["unsafe"]["flags"]["flush"], by["none"]["flags"]["flush"]
        assert unsafe["suspect"] and "disk_cache unsafe" in unsafe["reason"], unsafe
        assert not none["suspect"], none
    finally:
        strata("cleanup", "--force", env=env)
        assert leftovers(workdir) == [] and vm_leftovers(str(workdir)) == []
        if workdir.exists():
            workdir.rmdir()
