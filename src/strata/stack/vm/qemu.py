"""QEMU and virtiofsd command lines, and their processes under the journal.

The command line is a pure function of a `VmSpec` (unit-tested without
root): direct kernel boot of the guest (guest.py) from its read-only root
disk, no display, the serial console to a file kept with the trial, no
network (`-nodefaults`, `-nic none`), the data disk as virtio-blk with the
runtime's cache/aio/iothread/queue parameters and QEMU's own block
throttling from the load's limits, and host directories through virtiofs
(a `virtiofsd` per share; the guest RAM must then be a shared memfd) or 9p.

Processes are journaled before they start (`vm_process`, with a marker: a
path unique to this VM that appears on the command line) and the undo kills a
pid only while /proc/<pid>/cmdline still holds the marker: pids are reused.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from strata.core.jsondoc import JsonObject, text, whole
from strata.core.params import Limits
from strata.stack.journal import Journal, Undos, need
from strata.stack.procfs import cmdline, is_running
from strata.stack.vm.agent import AGENT_PATH, DATA_SERIAL

QEMU = "qemu-system-x86_64"
VIRTIOFSD_PATHS = ("/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd", "/usr/lib/virtiofsd")
ROOT_SERIAL = "strata-root"
# The share options, stored in the facts: no guest cache of file data, so the host sees every
# access (and the guest sees `go` at once); O_DIRECT passed through to the host file.
VIRTIOFSD_OPTIONS = ("cache=none", "allow_direct_io")
NINEP_OPTIONS = "security_model=none,multidevs=remap"
THROTTLE_KEYS = {
    "read_bps": "throttling.bps-read",
    "write_bps": "throttling.bps-write",
    "read_iops": "throttling.iops-read",
    "write_iops": "throttling.iops-write",
}


@dataclass(frozen=True)
class Disk:
    """The data disk: the device under test, or an image file on the file system under test."""

    path: str
    format: str = "raw"  # raw | qcow2
    cache: str = "none"
    aio: str = "native"
    iothread: bool = False
    queues: int = 1
    throttle: dict[str, int] = field(default_factory=dict)  # QEMU throttling.* option -> value
    share_rw: bool = False  # several VMs on one device


@dataclass(frozen=True)
class Share:
    tag: str
    host_dir: str
    kind: str  # virtiofs | 9p
    socket: str | None = None  # virtiofsd's socket (virtiofs only)


@dataclass(frozen=True)
class VmSpec:
    accel: str  # kvm | tcg
    vcpus: int
    memory_bytes: int
    kernel: str
    initrd: str
    rootfs: str
    console_log: str
    pidfile: str  # in the VM's run dir: also the journal's marker
    append: str  # extra kernel arguments (strata.*)
    disk: Disk | None = None
    shares: tuple[Share, ...] = ()


def esc(value: str) -> str:
    """QEMU's option syntax doubles commas inside a value."""
    return str(value).replace(",", ",,")


def accel_args(accel: str) -> list[str]:
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    if accel == "tcg":
        return ["-accel", "tcg,thread=multi", "-cpu", "max"]
    raise ValueError(f"unknown accelerator {accel}")


def throttle_options(limits: Limits) -> dict[str, int]:
    """The load's per-instance bps/iops limits as QEMU block throttling of the data disk."""
    return {THROTTLE_KEYS[key]: value for key, value in limits.io().items()}


def kernel_cmdline(append: str) -> str:
    return f"console=ttyS0 root=/dev/vda ro rootfstype=ext4 init={AGENT_PATH} panic=-1 loglevel=6 {append}".strip()


def memory_args(spec: VmSpec) -> list[str]:
    mib = spec.memory_bytes >> 20
    if any(s.kind == "virtiofs" for s in spec.shares):  # vhost-user needs guest RAM it can map
        return [
            "-m",
            f"{mib}M",
            "-object",
            f"memory-backend-memfd,id=mem,size={mib}M,share=on",
            "-machine",
            "pc,memory-backend=mem",
        ]
    return ["-m", f"{mib}M", "-machine", "pc"]


def root_args(spec: VmSpec) -> list[str]:
    """The read-only root first on the PCI bus: it is /dev/vda."""
    return [
        "-drive",
        f"file={esc(spec.rootfs)},if=none,id=root,format=raw,readonly=on",
        "-device",
        f"virtio-blk-pci,drive=root,serial={ROOT_SERIAL}",
    ]


def disk_args(disk: Disk) -> list[str]:
    args = []
    drive = f"file={esc(disk.path)},if=none,id=data,format={disk.format},cache={disk.cache},aio={disk.aio}"
    drive += "".join(f",{k}={v}" for k, v in sorted(disk.throttle.items()))
    device = f"virtio-blk-pci,drive=data,serial={DATA_SERIAL},num-queues={disk.queues}"
    if disk.iothread:
        args += ["-object", "iothread,id=io0"]
        device += ",iothread=io0"
    if disk.share_rw:
        device += ",share-rw=on"
    return args + ["-drive", drive, "-device", device]


def share_args(share: Share) -> list[str]:
    if share.kind == "virtiofs":
        assert share.socket is not None, "a virtiofs share has virtiofsd's socket"
        return [
            "-chardev",
            f"socket,id=fs-{share.tag},path={esc(share.socket)}",
            "-device",
            f"vhost-user-fs-pci,chardev=fs-{share.tag},tag={share.tag}",
        ]
    if share.kind == "9p":
        return ["-virtfs", f"local,path={esc(share.host_dir)},mount_tag={share.tag},id=fs-{share.tag},{NINEP_OPTIONS}"]
    raise ValueError(f"unknown share kind {share.kind}")


def qemu_argv(spec: VmSpec) -> list[str]:
    argv = [
        QEMU,
        "-nodefaults",
        "-no-user-config",
        "-no-reboot",
        "-display",
        "none",
        "-nic",
        "none",
        *accel_args(spec.accel),
        "-smp",
        str(spec.vcpus),
        *memory_args(spec),
        "-chardev",
        f"file,id=console,path={esc(spec.console_log)}",
        "-serial",
        "chardev:console",
        "-pidfile",
        spec.pidfile,
        "-kernel",
        spec.kernel,
        "-initrd",
        spec.initrd,
        "-append",
        kernel_cmdline(spec.append),
        *root_args(spec),
    ]
    if spec.disk is not None:
        argv += disk_args(spec.disk)
    for share in spec.shares:
        argv += share_args(share)
    return argv


def virtiofsd_binary() -> str | None:
    for p in VIRTIOFSD_PATHS:
        if os.access(p, os.X_OK):
            return p
    return shutil.which("virtiofsd")


def virtiofsd_argv(binary: str, socket: str, source: str) -> list[str]:
    return [
        binary,
        f"--socket-path={socket}",
        "-o",
        f"source={source}",
        *[x for opt in VIRTIOFSD_OPTIONS for x in ("-o", opt)],
    ]


def qemu_version() -> str:
    try:
        out = subprocess.run([QEMU, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.splitlines()[0].removeprefix("QEMU emulator version ").strip() if out else ""


# ---- processes -----------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _child_setup(cgroup_procs: list[str]) -> Callable[[], None]:
    """In the child before exec: join the VM's cgroup (if it has one), and die with strata (no orphaned VM
    keeps a CPU busy after a kill -9; `strata cleanup` then removes the rest)."""

    def setup() -> None:
        for procs in cgroup_procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return setup


@dataclass
class Proc:
    what: str
    popen: subprocess.Popen[bytes]
    seq: int
    marker: str
    log: Path | None = None


def spawn(
    what: str, argv: list[str], marker: str, journal: Journal, log: Path | None, cgroup_procs: Sequence[str] = ()
) -> Proc:
    """Journal, then start; stdout/stderr to `log` (QEMU's own errors: kept for the failure message)."""
    assert marker in " ".join(argv), f"marker {marker} not on the command line"
    seq = journal.intent("vm_process", what=what, marker=marker, exe=os.path.basename(argv[0]))
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        # Its own process group (a Ctrl-C at the terminal is strata's to handle) but strata's session: a new
        # session is a new scheduler autogroup, and under TCG on a busy host that cost a VM up to half its
        # IOPS against a QEMU started by hand (bench/vm_overhead.py).
        p = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_child_setup(list(cgroup_procs)),
            process_group=0,
        )
    finally:
        if not isinstance(out, int):  # the log, not subprocess.DEVNULL
            out.close()
    journal.update(seq, pid=p.pid)
    return Proc(what, p, seq, marker, log)


def stop_proc(proc: Proc, journal: Journal, grace_s: float = 0.0) -> None:
    """SIGTERM (if a grace time is given), then SIGKILL; reap; release the journal entry."""
    p = proc.popen
    if p.poll() is None and grace_s > 0:
        p.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(grace_s)
    if p.poll() is None:
        p.kill()
        p.wait()
    journal.release(proc.seq)


def marked_pids(marker: str, exe: str) -> list[int]:
    """Processes named `exe` whose command line holds `marker` (never anything else)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and marker in cmdline(int(p.name)):
            with contextlib.suppress(OSError):
                if os.path.basename(os.readlink(p / "exe")) == exe:
                    found.append(int(p.name))
    return found


def _undo_vm_process(data: JsonObject) -> None:
    """Kill QEMU or virtiofsd by pid while its command line still holds the marker (pids are
    reused); without a pid (killed between spawn and update), find it by the marker."""
    marker, pid = need(data, "marker"), whole(data, "pid")
    pids = [pid] if pid else marked_pids(marker, text(data, "exe"))
    for pid in pids:
        if marker in cmdline(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(is_running(p) and marker in cmdline(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "vm_process": _undo_vm_process,
}
