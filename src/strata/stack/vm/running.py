"""N VMs of one trial: launched, booted to the barrier, released, waited for, torn down.

`launch` returns once every guest's agent has said `ready-<i>` in the sync
dir: booted, clock set, data disk or share prepared, collector running, and
waiting for `go`. The boot is thus outside the measurement, as a container's
creation is. Meanwhile the host answers each agent's clock requests (its
own time, written into the sync dir). A VM that is not ready in time is a
`boot_timeout`, one whose QEMU ends first a `vm_start` failure; either
carries the tail of the VM's console.

`wait` then waits for every QEMU to exit (the agent powers off after the
command); a QEMU that ends without the agent's `rc` (killed, crashed) fails
the trial as `vm_died` and every VM of the trial is stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from strata.core.errors import StrataError, TrialFailure
from strata.core.instances import InstanceOutput, InstanceRequest, Watch
from strata.core.params import Load
from strata.core.proc import CommandError
from strata.stack.filesystems.base import Mounted
from strata.stack.journal import Journal
from strata.stack.paths import PathHandle, PerInstance
from strata.stack.vm.agent import TAGS, write_instance_files
from strata.stack.vm.cgroup import VmCgroup
from strata.stack.vm.guest import Guest
from strata.stack.vm.guest_stats import summarize_dir
from strata.stack.vm.params import VmRuntime, memory_for, vcpus_for
from strata.stack.vm.procstat import CpuSampler, reap
from strata.stack.vm.qemu import (
    Disk,
    Proc,
    Share,
    VmSpec,
    qemu_argv,
    spawn,
    stop_proc,
    throttle_options,
    virtiofsd_argv,
    virtiofsd_binary,
)
from strata.stack.vm.rundir import RunDir, wait_for_socket

BOOT_TIMEOUT_S = {"kvm": 60.0, "tcg": 240.0}
TAIL_CHARS = 3000
HOST_FILES = ("console.log", "qemu.log", "virtiofsd.log", "vm.json", "cgroup-final.txt", "vm-cpu.json")


class VmHost(Protocol):
    """What the VMs of a trial need of their session (session.py): the runtime's parameters, the stack's
    mounted file system (its device), the accelerator and share kind chosen, the journal, the trials it runs."""

    params: VmRuntime
    mounted: Mounted
    journal: Journal
    accel: str
    share: str
    running: list[VmRunning]


def default_boot_timeout_s(accel: str, vms: int, vcpus: int) -> float:
    """Booting N VMs at once on fewer host CPUs takes proportionally longer (TCG is CPU-bound)."""
    return BOOT_TIMEOUT_S[accel] * max(1.0, vms * vcpus / (os.cpu_count() or 1))


def tail(path: Path, chars: int = TAIL_CHARS) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def read_time(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _add_to_vm_json(out: Path, **facts: object) -> None:
    path = out / "vm.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **facts}, indent=1))


@dataclass
class Vm:
    request: InstanceRequest
    cgroup: VmCgroup | None = None  # only for a throttled bind path (cgroup.py)
    procs: list[Proc] = field(default_factory=list)
    qemu: Proc | None = None
    sampler: CpuSampler | None = None
    cpu_total_s: dict[str, float] = field(default_factory=dict)

    @property
    def cgroup_procs(self) -> list[str]:
        return self.cgroup.procs_files if self.cgroup else []

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        """QEMU's process (started by _launch_one right after the Vm is made; only stop() sees a Vm without)."""
        assert self.qemu is not None, f"VM {self.index}: QEMU was never started"
        return self.qemu.popen

    def ended(self) -> bool:
        """Whether QEMU exited (reaped here, with its exact CPU time)."""
        total = reap(self.popen)
        if total is not None:
            self.cpu_total_s["qemu"] = total
        return self.popen.returncode is not None

    @property
    def index(self) -> int:
        return self.request.index

    @property
    def out(self) -> Path:
        return self.request.out_dir

    def tails(self) -> str:
        return (
            f"--- qemu.log\n{tail(self.out / 'qemu.log', 1000)}\n"
            f"--- console.log (tail)\n{tail(self.out / 'console.log')}"
        )


class VmRunning:
    def __init__(self, session: VmHost, handle: PathHandle, load: Load, sync_dir: Path, guest: Guest) -> None:
        self.session, self.handle, self.load, self.sync_dir = session, handle, load, sync_dir
        self.guest = guest  # what the workload's image asks for (guest.py), one for every VM of the trial
        self.journal = session.journal
        self.vms: list[Vm] = []
        self.cgroups: list[dict[str, str]] = []
        self.run: RunDir | None = None
        self.boot_s: float | None = None
        self.stopped = False

    # ---- launch ------------------------------------------------------------------

    def launch(self, requests: list[InstanceRequest]) -> None:
        try:
            self._prepare_sync()
            self.run = RunDir(self.journal, "run").__enter__()
            for r in requests:
                self._launch_one(r)
            self.cgroups = [vm.cgroup.dirs if vm.cgroup else {} for vm in self.vms]
            self._wait_ready()
        except TrialFailure:
            self.stop()
            raise
        except (OSError, CommandError) as e:
            self.stop()
            raise TrialFailure("vm_start", f"could not start the VMs: {e}")
        except BaseException:
            self.stop()
            raise

    @property
    def _run_path(self) -> Path:
        assert self.run is not None, "launch() makes the run directory before any VM"
        return self.run.path

    def _prepare_sync(self) -> None:
        self.sync_dir.mkdir(parents=True, exist_ok=True)
        for f in self.sync_dir.iterdir():
            if f.name == "go" or f.name.startswith(("go.", "ready-", "clock-")):
                f.unlink(missing_ok=True)

    def _launch_one(self, r: InstanceRequest) -> None:
        s, params = self.session, self.session.params
        write_instance_files(r.out_dir, r.argv, self.handle.name, params.guest_filesystem, params.guest_mount_options)
        for f in HOST_FILES:
            (r.out_dir / f).unlink(missing_ok=True)
        vm = Vm(r)
        self.vms.append(vm)  # before anything starts: stop() finds whatever exists
        per = self.handle.per_instance[r.index]
        blkio = {}
        if self.handle.name == "bind" and throttle_options(self.load.limits):
            # no virtual disk to throttle: the host's blkio rules on the device, for QEMU and virtiofsd
            vm.cgroup = VmCgroup(f"strata-vm-{self._run_path.name.rsplit('-', 1)[-1]}-{r.index}", self.journal)
            blkio = vm.cgroup.throttle(s.mounted.device.path, self.load.limits)
        shares = self._shares(vm, per)
        disk = None
        if "disk" in per:
            disk = Disk(
                per["disk"],
                per["format"],
                params.disk_cache,
                params.disk_aio,
                params.iothread,
                params.queues,
                throttle_options(self.load.limits),
                share_rw=len(self.handle.per_instance) > 1 and self.handle.name == "device",
            )
        spec = VmSpec(
            s.accel,
            vcpus_for(params, self.load.limits),
            memory_for(params, self.load.limits),
            str(self.guest.kernel),
            str(self.guest.initrd),
            str(self.guest.rootfs),
            str(r.out_dir / "console.log"),
            str(self._run_path / f"vm{r.index}.pid"),
            f"strata.share={s.share} strata.index={r.index}",
            disk,
            shares,
        )
        argv = qemu_argv(spec)
        (r.out_dir / "vm.json").write_text(
            json.dumps(
                {
                    "index": r.index,
                    "accel": s.accel,
                    "share": s.share,
                    "vcpus": spec.vcpus,
                    "memory_bytes": spec.memory_bytes,
                    "disk": asdict(disk) if disk else None,
                    "blkio_throttle": blkio,
                    "path": per,
                    "argv": argv,
                },
                indent=1,
            )
        )
        vm.qemu = spawn("qemu", argv, spec.pidfile, self.journal, r.out_dir / "qemu.log", vm.cgroup_procs)
        vm.procs.append(vm.qemu)

    def _shares(self, vm: Vm, per: PerInstance) -> tuple[Share, ...]:
        dirs = [("out", vm.out), ("sync", self.sync_dir)] + ([("data", Path(per["dir"]))] if "dir" in per else [])
        if self.session.share == "9p":
            return tuple(Share(TAGS[k], str(d), "9p") for k, d in dirs)
        binary = virtiofsd_binary()
        if binary is None:  # available() found it; it went since (a package removed while strata ran)
            raise TrialFailure(
                "vm_start",
                "virtiofsd not found (it comes with qemu-system-x86 on Debian 12, later in package virtiofsd)",
            )
        shares = []
        for key, d in dirs:
            if "," in str(d):
                raise StrataError(f"{d}: virtiofsd cannot take a path with a comma", "choose another directory")
            sock = str(self._run_path / f"vm{vm.index}-{key}.sock")
            p = spawn(
                "virtiofsd",
                virtiofsd_argv(binary, sock, str(d)),
                sock,
                self.journal,
                vm.out / "virtiofsd.log",
                vm.cgroup_procs,
            )
            vm.procs.append(p)
            if not wait_for_socket(sock, p.popen, 10):
                raise TrialFailure("vm_start", f"virtiofsd for {d} did not start", tail(vm.out / "virtiofsd.log"))
            shares.append(Share(TAGS[key], str(d), "virtiofs", sock))
        return tuple(shares)

    def _wait_ready(self) -> None:
        params = self.session.params
        timeout_s = params.boot_timeout_s or default_boot_timeout_s(
            self.session.accel, len(self.vms), vcpus_for(params, self.load.limits)
        )
        t0 = time.monotonic()
        pending = {vm.index: vm for vm in self.vms}
        while pending:
            for i, vm in list(pending.items()):
                self._answer_clock(i)
                if (self.sync_dir / f"ready-{i}").exists():
                    del pending[i]
                    _add_to_vm_json(vm.out, ready_after_s=round(time.monotonic() - t0, 2))
                elif vm.ended():
                    why = tail(vm.out / "agent-error", 500).strip()
                    raise TrialFailure(
                        "vm_start",
                        f"VM {i} ended (QEMU exit code {vm.popen.returncode}) "
                        f"before it was ready" + (f": {why}" if why else ""),
                        vm.tails(),
                    )
            if pending and time.monotonic() - t0 > timeout_s:
                first = next(iter(pending.values()))
                raise TrialFailure(
                    "boot_timeout",
                    f"VM(s) {sorted(pending)} not ready {timeout_s:.0f} s after QEMU started ({self.session.accel})",
                    first.tails(),
                )
            time.sleep(0.002)
        self.boot_s = time.monotonic() - t0

    def _answer_clock(self, index: int) -> None:
        """The agent's clock request: answer with the host's time (its NTP-style round, agent.py)."""
        req = self.sync_dir / f"clock-req-{index}"
        if req.exists():
            req.unlink(missing_ok=True)
            tmp = self.sync_dir / f"clock-{index}.tmp"
            tmp.write_text(f"{time.time():.6f}\n")
            tmp.rename(self.sync_dir / f"clock-{index}")

    # ---- the barrier and the end -------------------------------------------------

    def go(self) -> float:
        for vm in self.vms:
            vm.sampler = CpuSampler(
                {p.what if p is vm.qemu else f"{p.what}-{i}": p.popen.pid for i, p in enumerate(vm.procs)}
            )
            vm.sampler.start()
        t = time.time()
        tmp = self.sync_dir / "go.tmp"
        tmp.write_text(f"{t:.6f}\n")
        tmp.rename(self.sync_dir / "go")
        return t

    def ready(self, timeout_s: float) -> None:
        """Nothing left to wait for: `launch` returned once every guest was booted and ready."""

    def wait(self, timeout_s: float, watch: Watch | None = None) -> list[InstanceOutput]:
        deadline = time.monotonic() + timeout_s
        while True:
            failure = watch() if watch else None
            if failure:
                self.stop()
                raise TrialFailure(*failure)
            ended = [vm for vm in self.vms if vm.ended()]
            died = [vm for vm in ended if not (vm.out / "rc").exists()]
            if died:
                death = self._died(died[0])
                self.stop()
                raise death
            if len(ended) == len(self.vms):
                break
            if time.monotonic() > deadline:
                self.stop()
                raise TrialFailure(
                    "timeout",
                    f"{len(self.vms) - len(ended)} VM(s) still ran {timeout_s:.0f} s after their expected end",
                )
            time.sleep(0.1)
        return [self._output(vm) for vm in self.vms]

    def check(self, watch: Watch | None = None) -> None:
        """instances.Running.check: a VM that ended, or a dead layer."""
        failure = watch() if watch else None
        if failure:
            raise TrialFailure(*failure)
        for vm in self.vms:
            if vm.ended():
                raise self._died(vm)

    def _died(self, vm: Vm) -> TrialFailure:
        code = vm.popen.returncode
        assert code is not None, "_died follows ended()"
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        why = tail(vm.out / "agent-error", 500).strip()
        return TrialFailure(
            "vm_died",
            f"VM {vm.index} ended before its command finished (QEMU {how})" + (f": {why}" if why else ""),
            vm.tails(),
        )

    def _output(self, vm: Vm) -> InstanceOutput:
        out = vm.out
        start, end = read_time(out / "start"), read_time(out / "end")
        self._cpu_files(vm)
        summarize_dir(out, start, end)
        try:
            rc = int((out / "rc").read_text().strip())
        except ValueError:
            rc = -1
        return InstanceOutput(vm.index, out, rc, tail(out / "stderr"), start, end)

    def _cpu_files(self, vm: Vm) -> None:
        """vm-cpu.json (per-second series and totals of QEMU and virtiofsd) and the totals as
        cgroup-final.txt counters, as a container leaves them."""
        deadline = time.monotonic() + 3
        for i, p in enumerate(vm.procs):  # virtiofsd exits once QEMU is gone
            if p is vm.qemu:
                continue
            while p.popen.returncode is None and time.monotonic() < deadline:
                total = reap(p.popen)
                if total is not None:
                    vm.cpu_total_s[f"{p.what}-{i}"] = total
                else:
                    time.sleep(0.02)
        if vm.sampler:
            vm.sampler.stop()
        series = vm.sampler.series() if vm.sampler else {}
        total_s = sum(vm.cpu_total_s.values())
        (vm.out / "vm-cpu.json").write_text(json.dumps({"total_s": vm.cpu_total_s, "series_percent": series}))
        text = f"== cpuacct/cpuacct.usage\n{int(total_s * 1e9)}\n" + (vm.cgroup.final_text() if vm.cgroup else "")
        (vm.out / "cgroup-final.txt").write_text(text)

    def stop(self) -> None:
        """Kill every QEMU and virtiofsd of this trial by pid, remove their cgroups and run dir (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        for vm in self.vms:
            if vm.sampler:
                vm.sampler.stop()
            for p in reversed(vm.procs):  # QEMU first, then its virtiofsd
                stop_proc(p, self.journal)
            vm.procs.clear()
            if vm.cgroup:
                vm.cgroup.remove()
        if self.run is not None:
            self.run.close()
        if self in self.session.running:
            self.session.running.remove(self)
