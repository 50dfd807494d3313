"""A remote device whose storage host is another node, against the same device served from a namespace.

Test hosts are made here (strata.hosts.testbed: network namespaces on a bridge, a dockerd each, one
Swarm); strata deploys its agents as on a real Swarm. The same trial, fio 4 KiB random reads (1 job x
QD1, `--runtime` s, O_DIRECT) on xfs over an nbd remote device (nbdfuse + loop), natively, three ways,
interleaved over `--rounds` rounds:

- local: no `hosts:`; the storage host is a namespace strata makes on this machine (issue 9's path);
- ns-on-a: on test host a through its agent, the storage host a namespace the agent makes there;
- host-b: on test host a, the store served by test host b's agent over the bridge (`remote.host: b`).

Printed: each run's IOPS and mean latency, and the medians of the paired ratios against local. On
this machine every path is a veth pair on one kernel: the ratios show what the agents and the
cross-host serving cost, not a real network's.

    python3 bench/remote_hosts.py [--rounds 3] [--runtime 10] [--root DIR] [--tiny]
(root; about 10 minutes on a 2-core VM; --tiny: one round of 2 s trials on a small file and device, to check
that it runs)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchbed import bench_bed, fresh, strata_run  # noqa: E402
from swarm_overhead import ok  # noqa: E402

from strata.core.metrics import dig  # noqa: E402
from strata.hosts.testbed import Bed  # noqa: E402

WAYS = ("local", "ns-on-a", "host-b")


def specs(bed: Bed, root: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    fio = {"rw": "randread", "bs": "4k", "size": args.size, "runtime": args.runtime, "ramp_time": 1, "direct": True}
    remote = {"type": "remote", "client": "fuse", "size": args.device_size}
    base = {"filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"], "workloads": [{"fio": fio}]}
    hosts = {
        "hosts": {h.name: h.spec() for h in bed.hosts},
        "placement": ["a"],
        "swarm": {"manager": f"unix://{bed.manager.sock}"},
        "workdir": str(root / "unused"),
    }
    return {
        "local": {**base, "name": "local", "devices": [remote], "workdir": str(root / "local-work")},
        "ns-on-a": {**base, **hosts, "name": "ns-on-a", "devices": [remote]},
        "host-b": {**base, **hosts, "name": "host-b", "devices": [{**remote, "host": "b"}]},
    }


def run(bed: Bed, root: Path, args: argparse.Namespace) -> None:
    docs = specs(bed, root, args)
    iops: dict[str, list[float]] = {w: [] for w in WAYS}
    for i in range(args.rounds):
        for way in WAYS:
            out = root / f"{way}-{i}"
            s = strata_run(docs[way], out)
            rs = ok(out)
            value = (rs[0].primary.value or 0.0) if rs else float("nan")
            lat_ns = dig(rs[0], ("metrics", "read", "lat_ns", "mean")) if rs else None
            lat = lat_ns / 1000 if lat_ns else None
            iops[way].append(value)
            print(f"round {i} {way:>8}: {value:8.0f} IOPS, mean latency {lat or float('nan'):.0f} us ({s:.0f} s)")
    for way in WAYS[1:]:
        ratios = [x / lo for lo, x in zip(iops["local"], iops[way]) if lo == lo and x == x]
        med = statistics.median(ratios) if ratios else float("nan")
        print(
            f"{way} / local: median of {len(ratios)} paired ratios {med:.3f} "
            f"(ratios {[round(r, 3) for r in ratios]}); medians {statistics.median(iops[way]):.0f} against "
            f"{statistics.median(iops['local']):.0f} IOPS"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--size", default="256MiB", help="fio's file")
    ap.add_argument("--device-size", default="1GiB", help="the remote device")
    ap.add_argument("--root", help="the test bed's folder (default: a new one under /var/tmp)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=2, size="16MiB", device_size="512MiB")
    if not 1 <= args.rounds <= 50 or not 2 <= args.runtime <= 600:
        raise SystemExit("--rounds is 1 to 50 and --runtime 2 to 600 seconds")
    with bench_bed(fresh(args.root, "strata-bench-remote-hosts"), ["a", "b"], "bench-remote-hosts") as (bed, results):
        run(bed, results, args)


if __name__ == "__main__":
    main()
