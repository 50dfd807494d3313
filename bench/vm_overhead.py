#!/usr/bin/env python3
"""Overhead of strata's vm runtime (issue 10, quality bar). Run as root; not a timed test.

The same 4 KiB random-read job (libaio, O_DIRECT, QD1) on the same loop device:

A. strata's VM path: `provision_vm`, the `device` path, the agent at the barrier,
   virtiofs shares, the per-VM cgroup and the trial's collectors sampling, fio with
   strata's options (JSON+, percentiles, per-second logs);
B. QEMU started by hand with the same options under the same accelerator: the same
   kernel, initramfs and read-only root, the same vCPUs, memory and data-disk options,
   `init=/bin/sh` on the serial console, the fio command typed at its prompt.

Target: IOPS ratio A/B >= 0.98, as the median of per-round paired ratios, in two designs:
- concurrent: A and B boot, then start fio together and run side by side on the same
  device, so both see whatever else the host does (other helpers' tests here make one
  TCG run vary by 3x from minute to minute, which no alternation survives);
- sequential: A B / B A alternating, each VM alone.
Prints the figures; exits 0 either way.

Usage: sudo .venv/bin/python bench/vm_overhead.py [--rounds 6] [--runtime 20] [--mode both] [--tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

import tiny

from strata.collectors.base import CollectContext
from strata.collectors.cgroup import CgroupCollector
from strata.collectors.diskstats import DiskstatsCollector
from strata.collectors.host import HostCollector
from strata.collectors.sampler import Sampler
from strata.core.jsondoc import obj
from strata.core.params import Load
from strata.run.trial import _requests
from strata.stack.devices.loop import LOOP
from strata.stack.devices.loop import LoopParams as LoopDevice
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.journal import Journal
from strata.stack.vm.guest import ensure_guest
from strata.stack.vm.params import VmRuntime
from strata.stack.vm.qemu import accel_args
from strata.stack.vm.runtime import provision_vm
from strata.workloads.fio import Fio, FioParams

if TYPE_CHECKING:
    from strata.stack.blockdev import DeviceHandle
    from strata.stack.filesystems.base import Mounted
    from strata.stack.vm.session import VmSession

provision_loop = LOOP.provision


def provision_fs(fs: Filesystem, dev: DeviceHandle, journal: Journal, workdir: Path) -> ContextManager[Mounted]:
    return FILESYSTEMS[fs.type].provision(fs, dev, journal, workdir)


SIZE = "256MiB"
RAMP_S = 2


def fio_spec(runtime: int) -> FioParams:
    return Fio().parse_params(
        {"rw": "randread", "bs": "4k", "size": SIZE, "runtime": runtime, "ramp_time": RAMP_S}, Path(".")
    )


def strata_run(
    session: VmSession, dev: DeviceHandle, runtime: int, art: Path, hand: "HandVm | None" = None
) -> dict[str, Any]:
    """strata's trial path (path, instances at the barrier, the trial's collectors, go, wait), with
    the QEMU process's CPU time from `go` to the agent's `end` file; `hand`, when given, types its fio
    at the moment of `go`."""
    wl, load, spec = Fio(), Load(), fio_spec(runtime)
    art.mkdir(parents=True)
    with session.path("device", art, load) as handle:
        requests = _requests(wl, spec, load, session, handle, art)
        running = session.start(requests, handle, load, art / "sync")
        cpu: dict[str, float] = {}
        try:
            if hand:
                hand.boot()
            qemu_pid = running.vms[0].popen.pid
            ctx = CollectContext(dev.diskstats, running.cgroups)
            with Sampler([HostCollector(ctx), DiskstatsCollector(ctx), CgroupCollector(ctx)]):
                watch = threading.Thread(target=_cpu_until, args=(qemu_pid, requests[0].out_dir / "end", cpu))
                cpu["go"] = _cpu_s(qemu_pid)
                running.go()
                watch.start()
                typed = threading.Thread(target=hand.fio, args=(runtime,)) if hand else None
                if typed:
                    typed.start()
                outputs = running.wait(runtime + 600)
                watch.join()
                if typed:
                    typed.join()
        finally:
            running.stop()
    return {"iops": obj(wl.parse(spec, outputs).metrics, "read")["iops"], "cpu_s": cpu.get("end", 0) - cpu["go"]}


def _cpu_until(pid: int, end_file: Path, cpu: dict[str, float]) -> None:
    """QEMU's CPU time when the agent writes `end` (the command is over; the guest's shutdown is not counted)."""
    while not end_file.exists():
        cpu["end"] = _cpu_s(pid)
        time.sleep(0.01)


def by_strata(session: VmSession, dev: DeviceHandle, runtime: int, art: Path) -> dict[str, Any]:
    return strata_run(session, dev, runtime, art)


def hand_argv(session: VmSession, device: str, share: Path, locking: bool = True) -> list[str]:
    """What a person would type: the same guest (fio's, as strata's run boots), accelerator, CPUs, memory and
    disk options."""
    g, p = ensure_guest(Fio().image(fio_spec(1))), session.params
    mib = p.memory >> 20
    lock = "" if locking else ",file.locking=off"  # beside strata's VM on the same device (no I/O effect)
    return [
        "qemu-system-x86_64",
        "-nodefaults",
        "-no-user-config",
        "-no-reboot",
        "-display",
        "none",
        "-nic",
        "none",
        *accel_args(session.accel),
        "-smp",
        str(p.vcpus),
        "-m",
        f"{mib}M",
        "-object",
        f"memory-backend-memfd,id=mem,size={mib}M,share=on",
        "-machine",
        "pc,memory-backend=mem",
        "-chardev",
        "stdio,id=con",
        "-serial",
        "chardev:con",
        "-kernel",
        str(g.kernel),
        "-initrd",
        str(g.initrd),
        "-append",
        "console=ttyS0 root=/dev/vda ro rootfstype=ext4 init=/bin/sh panic=-1 quiet",
        "-drive",
        f"file={g.rootfs},if=none,id=root,format=raw,readonly=on",
        "-device",
        "virtio-blk-pci,drive=root",
        "-drive",
        f"file={device},if=none,id=data,format=raw,cache={p.disk_cache},aio={p.disk_aio}{lock}",
        "-device",
        f"virtio-blk-pci,drive=data,num-queues={p.queues}",
        "-virtfs",
        f"local,path={share},mount_tag=hand,security_model=none,id=hand",
    ]


class HandVm:
    """QEMU on a console: boot to the shell's prompt, prepare, then type fio when told."""

    def __init__(self, session: VmSession, device: str, share: Path, locking: bool = True) -> None:
        share.mkdir(parents=True)
        self.share = share
        self.p = subprocess.Popen(
            hand_argv(session, device, share, locking),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        # its pipes: a writer, and a buffered reader (read1: what is there, without waiting for more)
        assert self.p.stdin is not None and isinstance(self.p.stdout, io.BufferedReader)
        self.stdin, self.stdout = self.p.stdin, self.p.stdout
        self.seen = b""

    def _type(self, line: str) -> None:
        """Type a command at the prompt and wait for the next prompt."""
        self.stdin.write(line.encode() + b"\n")
        self.stdin.flush()
        self._prompt()

    def _prompt(self) -> None:
        mark = len(self.seen)
        while b"# " not in self.seen[mark:]:
            chunk = self.stdout.read1(4096)
            if not chunk:
                raise RuntimeError(f"QEMU ended before the prompt: {self.seen[-2000:]!r}")
            self.seen += chunk

    def boot(self) -> None:
        self._prompt()
        self._type(
            "mount -t proc proc /proc; modprobe 9pnet_virtio; modprobe 9p; "
            "mount -t 9p -o trans=virtio,version=9p2000.L hand /mnt"
        )

    def fio(self, runtime: int) -> None:
        self.cpu_at_go_s = _cpu_s(self.p.pid)
        self._type(
            f"fio --name=byhand --filename=/dev/vdb --rw=randread --bs=4k --ioengine=libaio --iodepth=1 "
            f"--direct=1 --size={SIZE} --runtime={runtime} --time_based --ramp_time={RAMP_S} --randrepeat=0 "
            f"--output-format=json --output=/mnt/fio.json"
        )
        self.cpu_s = _cpu_s(self.p.pid) - self.cpu_at_go_s

    def finish(self) -> float:
        with contextlib.suppress(Exception):
            self.stdin.write(b"umount /mnt; echo o > /proc/sysrq-trigger\n")
            self.stdin.flush()
            self.seen += self.p.communicate(timeout=120)[0]
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        (self.share / "console.log").write_bytes(self.seen)
        iops: float = json.loads((self.share / "fio.json").read_text())["jobs"][0]["read"]["iops"]
        return iops


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def by_hand(session: VmSession, device: str, runtime: int, share: Path) -> dict[str, Any]:
    vm = HandVm(session, device, share)
    try:
        vm.boot()
        vm.fio(runtime)
    finally:
        iops = vm.finish()
    return {"iops": iops, "cpu_s": vm.cpu_s}


def concurrent(session: VmSession, dev: DeviceHandle, runtime: int, art: Path) -> dict[str, Any]:
    """Both at once, started together: they share whatever else the host is doing."""
    hand = HandVm(session, dev.path, art / "hand", locking=False)
    try:
        got = strata_run(session, dev, runtime, art / "strata", hand)
    finally:
        hand_iops = hand.finish()
    return {"strata": got["iops"], "hand": hand_iops, "strata_cpu_s": got["cpu_s"], "hand_cpu_s": hand.cpu_s}


def sequential_round(session: VmSession, dev: DeviceHandle, runtime: int, work: Path, r: int) -> dict[str, Any]:
    got: dict[str, Any] = {}
    for who in ("strata", "hand") if r % 2 == 0 else ("hand", "strata"):
        run = (
            by_strata(session, dev, runtime, work / f"seq-strata-{r}")
            if who == "strata"
            else by_hand(session, dev.path, runtime, work / f"seq-hand-{r}")
        )
        got[who], got[f"{who}_cpu_s"] = run["iops"], run["cpu_s"]
    return got


def summary(mode: str, rows: list[dict[str, Any]], runtime: int) -> None:
    ratios = [row["strata"] / row["hand"] for row in rows]
    s, h = [row["strata"] for row in rows], [row["hand"] for row in rows]
    print(f"== {mode}: {len(rows)} rounds")
    print(f"strata VM path: median {statistics.median(s):.1f} IOPS  {[round(x) for x in s]}")
    print(f"by hand:        median {statistics.median(h):.1f} IOPS  {[round(x) for x in h]}")
    print(f"paired ratios strata/hand: {[round(x, 3) for x in ratios]}")
    print(
        f"median paired ratio {statistics.median(ratios):.3f} (target >= 0.98); "
        f"ratio of medians {statistics.median(s) / statistics.median(h):.3f}"
    )
    if rows and "strata_cpu_s" in rows[0]:

        def per_io(cpu: float, iops: float) -> float:
            return 1e6 * cpu / (iops * (runtime + RAMP_S))

        cpu_ratios = [per_io(r["hand_cpu_s"], r["hand"]) / per_io(r["strata_cpu_s"], r["strata"]) for r in rows]
        print(
            "QEMU's host CPU per I/O while fio ran (us): strata "
            f"{statistics.median(per_io(r['strata_cpu_s'], r['strata']) for r in rows):.0f}, hand "
            f"{statistics.median(per_io(r['hand_cpu_s'], r['hand']) for r in rows):.0f}; paired hand/strata "
            f"{[round(x, 3) for x in cpu_ratios]}, median {statistics.median(cpu_ratios):.3f} "
            f"(under TCG a VM's I/O is CPU-bound: this is the overhead that does not depend on what else runs)"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument(
        "--mode",
        choices=("concurrent", "sequential", "both"),
        default="both",
        help="concurrent: both VMs at once, started together (the paired design that survives a "
        "busy host); sequential: alternating runs",
    )
    tiny.add(ap)
    a = ap.parse_args()
    tiny.apply(a, rounds=1, runtime=2, mode="concurrent")
    work = Path(tempfile.mkdtemp(prefix="strata-bench-vm-", dir="/var/tmp"))
    journal = Journal("bench-vm", work / "state")
    results: dict[str, list[dict[str, Any]]] = {"concurrent": [], "sequential": []}
    modes = ("concurrent", "sequential") if a.mode == "both" else (a.mode,)
    try:
        with (
            provision_loop(LoopDevice(name="benchvm", size=512 << 20), journal, work) as dev,
            provision_fs(Filesystem(type="raw"), dev, journal, work) as mounted,
            provision_vm(VmRuntime(), mounted, journal, work, {}) as session,
        ):
            print(
                f"accelerator {session.accel} (emulated: {session.facts['emulated']}), share {session.share}, "
                f"guest {ensure_guest(Fio().image(fio_spec(1))).key}, device {dev.path}, fio 4k randread QD1 "
                f"{a.runtime} s",
                flush=True,
            )
            for mode in modes:
                for r in range(a.rounds):
                    t0 = time.monotonic()
                    row = (
                        concurrent(session, dev, a.runtime, work / f"con-{r}")
                        if mode == "concurrent"
                        else sequential_round(session, dev, a.runtime, work, r)
                    )
                    results[mode].append(row)
                    print(
                        f"{mode} round {r}: strata {row['strata']:7.1f}  hand {row['hand']:7.1f} IOPS  "
                        f"ratio {row['strata'] / row['hand']:.3f}  ({time.monotonic() - t0:.0f} s)",
                        flush=True,
                    )
    finally:
        journal.close()
        subprocess.run(["rm", "-rf", "--one-file-system", str(work)], check=False)
    for mode in modes:
        summary(mode, results[mode], a.runtime)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
