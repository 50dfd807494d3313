#!/usr/bin/env python3
"""Overhead of the remote device against the local loop device (issue 9, quality bar). Root.

Both devices sit on the same disk: a loop device (--direct-io=on) over a file in
the workdir, and the remote device (nbdkit in its own network namespace, served
from a file in the same workdir, attached by this host's client path) with no
added latency. 4 KiB random reads, O_DIRECT, on the raw devices, at QD1 (1 job)
and at high load (4 jobs x QD32). Runs are interleaved local, remote, local,
remote ... (this VM drifts by tens of percent over minutes); the headline is the
median of the per-round ratios remote/local, for IOPS and for mean latency,
with the CPU time the target (nbdkit) and the FUSE client (nbdfuse) spend per I/O.

Usage: sudo .venv/bin/python bench/remote_overhead.py [--rounds 3] [--runtime 10] [--size 1GiB] [--tiny]
Prints the figures; exits 0 either way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import tiny

if TYPE_CHECKING:
    from strata.collectors.process import ProcessCollector

LOADS = {"QD1 (1 job x QD1)": (1, 1), "high (4 jobs x QD32)": (4, 32)}


def fio(dev: str, numjobs: int, iodepth: int, runtime_s: int) -> tuple[float, float]:
    """(IOPS, mean completion latency in us) of 4k random reads on `dev`."""
    out = subprocess.run(
        [
            "fio",
            "--name=rr",
            f"--filename={dev}",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=libaio",
            f"--iodepth={iodepth}",
            f"--numjobs={numjobs}",
            f"--runtime={runtime_s}",
            "--time_based",
            "--ramp_time=2",
            "--group_reporting",
            "--output-format=json",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=runtime_s + 120,
    ).stdout
    read = json.loads(out)["jobs"][0]["read"]
    iops: float = read["iops"]
    return iops, read["lat_ns"]["mean"] / 1000


def cpu_us_per_io(procs: ProcessCollector, iops: float, seconds: float) -> float:
    """Target + FUSE client CPU per I/O over the last run (the ramp's I/Os estimated at the same rate)."""
    from strata.core.jsondoc import as_obj, num

    cpu_s = sum(num(as_obj(v), "cpu_s") or 0.0 for v in procs.summary().values())
    procs.samples, procs.times = [], []
    return 1e6 * cpu_s / max(1.0, iops * seconds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10, help="seconds per fio run (after 2 s of ramp)")
    ap.add_argument("--size", default="1GiB", help="each backing file")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=2, size="256MiB")
    work = Path(tempfile.mkdtemp(prefix="strata-remote-bench-", dir="/var/tmp"))
    os.environ.setdefault("STRATA_STATE_DIR", str(work / "state"))

    from strata.stack.devices.loop import LOOP
    from strata.stack.devices.loop import LoopParams as LoopDevice

    provision_loop = LOOP.provision
    from strata.collectors.process import ProcessCollector  # at run time: the isinstance below needs it
    from strata.core.jsondoc import obj
    from strata.stack.journal import Journal
    from strata.stack.remote import RemoteDevice, provision_remote

    journal = Journal(f"bench-remote-{os.getpid()}")
    rows: dict[str, list[tuple[float, ...]]] = {k: [] for k in LOADS}
    try:
        with (
            provision_loop(LoopDevice(name="local", size=args.size), journal, work / "wd") as local,
            provision_remote(RemoteDevice(name="remote", size=args.size), journal, work / "wd") as remote,
        ):
            print(
                f"local {local.path} (loop over {local.facts['backing_file']}); remote {remote.path} "
                f"({remote.facts['client_path']}, {remote.facts['target_version']}, "
                f"target {obj(remote.facts, 'network')['ns_addr']} in {obj(remote.facts, 'network')['netns']})"
            )
            for r in range(args.rounds):
                for name, (jobs, qd) in LOADS.items():
                    li, ll = fio(local.path, jobs, qd, args.runtime)
                    procs = remote.collectors[0]
                    assert isinstance(procs, ProcessCollector), "the remote device's first collector: its processes"
                    procs.sample()
                    ri, rl = fio(remote.path, jobs, qd, args.runtime)
                    procs.sample()
                    cpu = cpu_us_per_io(procs, ri, args.runtime + 2)
                    lost = remote.watch() if remote.watch else None
                    if lost:
                        raise SystemExit(f"remote lost during the bench: {lost[1]}")
                    rows[name].append((li, ll, ri, rl, cpu))
                    print(
                        f"round {r + 1} {name:22} local {li:8.0f} IOPS {ll:7.0f} us   remote {ri:8.0f} IOPS "
                        f"{rl:7.0f} us   IOPS ratio {ri / li:.2f}  latency ratio {rl / ll:.2f}  "
                        f"remote CPU {cpu:.0f} us/IO",
                        flush=True,
                    )
    finally:
        journal.close()
        for d in (work / "wd", work / "state" / "journal", work / "state", work):
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: a kept journal says what to clean up
    print(f"\nremote / local, median of {args.rounds} paired rounds ({args.runtime} s each, 4 KiB random reads):")
    print(
        f"{'load':22} {'local IOPS':>10} {'remote IOPS':>11} {'IOPS ratio':>10} {'local lat':>9} "
        f"{'remote lat':>10} {'lat ratio':>9} {'CPU/IO':>7}"
    )
    med = statistics.median
    for name, rs in rows.items():
        print(
            f"{name:22} {med(r[0] for r in rs):10.0f} {med(r[2] for r in rs):11.0f} "
            f"{med(r[2] / r[0] for r in rs):10.2f} {med(r[1] for r in rs):7.0f}us {med(r[3] for r in rs):8.0f}us "
            f"{med(r[3] / r[1] for r in rs):9.2f} {med(r[4] for r in rs):5.0f}us"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
