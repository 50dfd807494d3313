#!/usr/bin/env python3
"""Overhead of strata's vm runtime (issue 10, quality bar). Run as root; not a timed test.

The same 4 KiB random-read job (libaio, O_DIRECT, QD1) on the same loop device:

A. strata's VM path: `provision_vm`, the `device` path, the agent at the barrier,
   virtiofs shares, the per-VM cgroup and the trial's collectors sampling, fio with
   strata's options (JSON+, percentiles, per-second logs);
B. QEMU started by hand with the same options under the same accelerator: the same
   kernel, initramfs and read-only root, the same vCPUs, memory and data-disk options,
   `init=/bin/sh` on the serial console, the fio command typed at its prompt.

Target: IOPS ratio A/B >= 0.98. Runs alternate A B / B A (this machine drifts by tens
of percent over minutes, more so under TCG): the headline is the median of the
per-round paired ratios. Prints the figures; exits 0 either way.

Usage: sudo .venv/bin/python bench/vm_overhead.py [--rounds 5] [--runtime 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from strata.spec.model import Filesystem, Load, LoopDevice
from strata.stack.device import provision_loop
from strata.stack.filesystem import provision as provision_fs
from strata.stack.journal import Journal
from strata.stack.vm.params import VmRuntime
from strata.stack.vm.qemu import accel_args
from strata.stack.vm.runtime import provision_vm
from strata.trial import _requests, _run_collected
from strata.workloads.fio import Fio

SIZE = "256MiB"
RAMP_S = 2


def by_strata(session, dev, runtime: int, art: Path) -> float:
    wl, load = Fio(), Load()
    spec = wl.parse_spec({"rw": "randread", "bs": "4k", "size": SIZE, "runtime": runtime, "ramp_time": RAMP_S}, Path("."))
    art.mkdir(parents=True)
    with session.path("device", art, load) as handle:
        requests = _requests(wl, spec, load, session, handle, art)
        outputs, _ = _run_collected(wl, spec, load, session, handle, requests, dev, art)
    return wl.parse(spec, outputs).metrics["read"]["iops"]


def hand_argv(session, device: str, share: Path) -> list[str]:
    """What a person would type: the same guest, accelerator, CPUs, memory and disk options."""
    g, p = session.guest, session.params
    mib = p.memory >> 20
    return ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none", "-nic", "none",
            *accel_args(session.accel), "-smp", str(p.vcpus), "-m", f"{mib}M",
            "-object", f"memory-backend-memfd,id=mem,size={mib}M,share=on", "-machine", "pc,memory-backend=mem",
            "-chardev", "stdio,id=con", "-serial", "chardev:con",
            "-kernel", str(g.kernel), "-initrd", str(g.initrd),
            "-append", "console=ttyS0 root=/dev/vda ro rootfstype=ext4 init=/bin/sh panic=-1 quiet",
            "-drive", f"file={g.rootfs},if=none,id=root,format=raw,readonly=on", "-device", "virtio-blk-pci,drive=root",
            "-drive", f"file={device},if=none,id=data,format=raw,cache={p.disk_cache},aio={p.disk_aio}",
            "-device", f"virtio-blk-pci,drive=data,num-queues={p.queues}",
            "-virtfs", f"local,path={share},mount_tag=hand,security_model=none,id=hand"]


def by_hand(session, device: str, runtime: int, share: Path) -> float:
    share.mkdir(parents=True)
    fio = (f"fio --name=byhand --filename=/dev/vdb --rw=randread --bs=4k --ioengine=libaio --iodepth=1 --direct=1 "
           f"--size={SIZE} --runtime={runtime} --time_based --ramp_time={RAMP_S} --randrepeat=0 "
           f"--output-format=json --output=/mnt/fio.json")
    script = (f"mount -t proc proc /proc; modprobe 9pnet_virtio; modprobe 9p; "
              f"mount -t 9p -o trans=virtio,version=9p2000.L hand /mnt; {fio}; umount /mnt; "
              f"echo o > /proc/sysrq-trigger\n")
    p = subprocess.Popen(hand_argv(session, device, share), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    seen = b""
    try:
        while b"# " not in seen:   # the shell's prompt on the console: the guest has booted
            chunk = p.stdout.read1(4096)
            if not chunk:
                raise RuntimeError(f"QEMU ended before the prompt: {seen[-2000:]!r}")
            seen += chunk
        p.stdin.write(script.encode())
        p.stdin.flush()
        seen += p.communicate(timeout=runtime + 600)[0]
    finally:
        (share / "console.log").write_bytes(seen)
        if p.poll() is None:
            p.kill()
            p.wait()
    return json.loads((share / "fio.json").read_text())["jobs"][0]["read"]["iops"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=20)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="strata-bench-vm-", dir="/var/tmp"))
    journal = Journal("bench-vm", work / "state")
    rows = []
    with provision_loop(LoopDevice(name="benchvm", size=512 << 20), journal, work) as dev, \
            provision_fs(Filesystem(type="raw"), dev, journal, work) as mounted, \
            provision_vm(VmRuntime(), mounted, journal, work, {}) as session:
        print(f"accelerator {session.accel} (emulated: {session.facts['emulated']}), share {session.share}, "
              f"guest {session.guest.key}, device {dev.path}")
        for r in range(a.rounds):
            order = ("strata", "hand") if r % 2 == 0 else ("hand", "strata")
            got = {}
            for who in order:
                t0 = time.monotonic()
                if who == "strata":
                    got[who] = by_strata(session, dev, a.runtime, work / f"strata-{r}")
                else:
                    got[who] = by_hand(session, dev.path, a.runtime, work / f"hand-{r}")
                print(f"round {r}: {who:6s} {got[who]:8.1f} IOPS ({time.monotonic() - t0:.0f} s with boot)", flush=True)
            rows.append(got)
    journal.close()
    ratios = [row["strata"] / row["hand"] for row in rows]
    strata_iops = [row["strata"] for row in rows]
    hand_iops = [row["hand"] for row in rows]
    print(f"strata VM path: median {statistics.median(strata_iops):.1f} IOPS  {[round(x) for x in strata_iops]}")
    print(f"by hand:        median {statistics.median(hand_iops):.1f} IOPS  {[round(x) for x in hand_iops]}")
    print(f"paired ratios strata/hand: {[round(x, 3) for x in ratios]}")
    print(f"median paired ratio {statistics.median(ratios):.3f} (target >= 0.98); "
          f"ratio of medians {statistics.median(strata_iops) / statistics.median(hand_iops):.3f}")
    with contextlib.suppress(OSError):
        subprocess.run(["rm", "-rf", "--one-file-system", str(work)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
