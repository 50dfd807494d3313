#!/usr/bin/env python3
"""Overhead of strata itself (issue: core, "Overhead" quality bar). Run as root.

1. The same fio job run by strata natively and by hand on the same loop device and
   file system: IOPS ratio strata/by-hand, target >= 0.98.
2. The same job in a container on a Docker volume (overlay2 daemon, same device)
   against strata native: ratio container/native, target >= 0.95.

Runs are interleaved A B A B ... (this VM drifts by tens of percent over minutes):
each round's runs are minutes apart at most, so the headline is the median of the
per-round (paired) ratios; the ratio of the medians is printed beside it.
Prints the ratios; exits 0 either way.
Usage: sudo .venv/bin/python bench/overhead.py [--rounds 5] [--runtime 10] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import tiny
from abba import MAX_PAIRS, MAX_SECONDS, bounded, device_size, loop_device, on_fresh_xfs, strata_run

JOB = {"rw": "randread", "bs": "4k", "numjobs": 2, "iodepth": 16, "size": "512MiB"}


def sh(*argv: str) -> str:
    out: str = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return out.strip()


def by_hand(mountpoint: Path, runtime: int) -> float:
    d = mountpoint / "by-hand"
    d.mkdir(exist_ok=True)
    out = sh(
        "fio",
        "--name=byhand",
        f"--filename={d}/data",
        f"--rw={JOB['rw']}",
        f"--bs={JOB['bs']}",
        "--ioengine=libaio",
        "--direct=1",
        f"--iodepth={JOB['iodepth']}",
        f"--numjobs={JOB['numjobs']}",
        f"--size={JOB['size']}",
        f"--runtime={runtime}",
        "--time_based",
        "--ramp_time=2",
        "--group_reporting",
        "--output-format=json",
    )
    iops: float = json.loads(out)["jobs"][0]["read"]["iops"]
    return iops


def by_strata(dev: str, runtime: int, runtimes: list[str], paths: list[str], work: Path, n: int) -> dict[str, float]:
    spec = {
        "name": f"overhead-{n}",
        "workdir": str(work / "wd"),
        "devices": [{"type": "block", "path": dev, "destroy": True}],
        "filesystems": ["xfs"],
        "runtimes": runtimes,
        "paths": paths,
        "workloads": [
            {"fio": {"rw": JOB["rw"], "bs": JOB["bs"], "size": JOB["size"], "runtime": runtime, "ramp_time": 2}}
        ],
        "loads": [{"numjobs": JOB["numjobs"], "iodepth": JOB["iodepth"]}],
        "exclude": [{"runtime": "native", "path": "volume"}, {"runtime": "docker:*", "path": "bind"}],
    }
    res = {}
    for p in strata_run(spec, work, n).glob("*.json"):
        r = json.loads(p.read_text())
        assert r["status"] == "ok", r["flags"]["failed"]
        res[r["labels"]["runtime"]] = r["metrics"]["read"]["iops"]
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=bounded(1, MAX_PAIRS), default=5, help=f"1 to {MAX_PAIRS}")
    ap.add_argument("--runtime", type=bounded(1, MAX_SECONDS), default=10, help=f"1 to {MAX_SECONDS} seconds")
    ap.add_argument("--size", type=device_size, default="2G", help="the loop device's backing file, 512M to 64G")
    tiny.add(ap)
    args = ap.parse_args()
    if tiny.apply(args, rounds=1, runtime=2, size="1G"):  # the image in docker's data root needs ~300 MB
        JOB["size"] = "64MiB"
    hand, native, container = [], [], []
    with loop_device("fio", args.size) as (work, dev, mnt):
        for i in range(args.rounds):
            hand.append(on_fresh_xfs(dev, mnt, lambda: by_hand(mnt, args.runtime)))
            r = by_strata(dev, args.runtime, ["native", "docker:overlay2"], ["bind", "volume"], work, i)
            native.append(r["native"])
            container.append(r["docker:overlay2"])
            print(
                f"round {i + 1}: by hand {hand[-1]:.0f}  strata native {native[-1]:.0f}  "
                f"container volume {container[-1]:.0f} IOPS",
                flush=True,
            )
    m = statistics.median
    p1 = m([a / b for a, b in zip(native, hand)])
    p2 = m([a / b for a, b in zip(container, native)])
    print(
        f"strata native / by hand:   {p1:.3f} median of paired ratios (target >= 0.98); "
        f"ratio of medians {m(native) / m(hand):.3f} ({m(native):.0f} / {m(hand):.0f} IOPS)"
    )
    print(
        f"container volume / native: {p2:.3f} median of paired ratios (target >= 0.95); "
        f"ratio of medians {m(container) / m(native):.3f} ({m(container):.0f} / {m(native):.0f} IOPS)"
    )
    print(
        f"job: {JOB}, {args.runtime} s + 2 s ramp, {args.rounds} interleaved rounds, loop device with direct I/O, xfs"
    )
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench/overhead.py: run as root")
    sys.exit(main())
