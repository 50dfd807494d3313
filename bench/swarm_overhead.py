"""What the Swarm path costs: the same trial on one host through its agent against the local path, and
the start skew across hosts for 2, 3 and 8 instances per host.

Test hosts are made here (strata.hosts.testbed: network namespaces on a bridge, a dockerd each, one
Swarm); the agents are deployed by `strata run` as on a real Swarm.

1. Overhead: fio 4 KiB random reads (1 job x QD1, `--runtime` s) on loop/xfs/native, here (no
   `hosts:`) and on test host a through its agent (`placement: [a]`), interleaved over `--rounds`
   rounds. Printed: each run's IOPS and the median of the paired ratios swarm / local (1.0 = no
   overhead).
2. Skew: fio on loop/xfs/docker:overlay2 through volumes, `placement: [spread]` over two hosts, with
   loads of 4, 6 and 16 containers (2, 3 and 8 per host). Printed per load: the skew of the hosts' first
   I/O (`flags.sync.host_skew_s`, in the manager's clock after each host's measured offset) and the
   skew of every instance's first I/O (`flags.sync.skew_s`), with each host's clock offset.

    python3 bench/swarm_overhead.py [--rounds 5] [--runtime 10] [--root DIR] [--tiny]
(root; about 10 minutes on a 2-core VM; --tiny: both parts, each minimal: one round of 1 s trials, one skew
load of 1 container per host, small files and devices, to check that it runs)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchbed import bench_bed, fresh, strata_run  # noqa: E402

from strata.hosts.testbed import Bed  # noqa: E402
from strata.results.flags.comparisons import SyncExtra  # noqa: E402
from strata.results.result import Result  # noqa: E402
from strata.results.store import load_results  # noqa: E402


def ok(out: Path) -> list[Result]:
    rs = [r for r in load_results(out) if r.status == "ok"]
    failed = [r for r in load_results(out) if r.status != "ok"]
    for r in failed:
        print(f"  (failed: {r.stack} {r.flags.failed})")
    return rs


def overhead(bed: Bed, root: Path, args: argparse.Namespace) -> None:
    """Local and swarm runs interleaved, one repetition each per round: the machine's drift (other work
    on it) falls on both; the median of the rounds' ratios is the figure."""
    fio = {"rw": "randread", "bs": "4k", "size": args.size, "runtime": args.runtime, "ramp_time": 1, "direct": True}
    base: dict[str, Any] = {
        "devices": [{"type": "loop", "name": "loop", "size": args.device_size}],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"fio": fio}],
    }
    local: dict[str, Any] = {**base, "name": "local", "workdir": str(root / "local-work")}
    swarm: dict[str, Any] = {
        **base,
        "name": "swarm",
        "workdir": str(root / "unused"),
        "hosts": {"a": bed.hosts[0].spec()},
        "placement": ["a"],
        "swarm": {"manager": f"unix://{bed.manager.sock}"},
    }
    iops: dict[str, list[float]] = {"local": [], "swarm": []}
    for i in range(args.rounds):
        for doc in (local, swarm):
            out = root / f"{doc['name']}-{i}"
            s = strata_run(doc, out)
            values = [r.primary.value or 0.0 for r in ok(out)]
            iops[doc["name"]] += values
            print(
                f"round {i} {doc['name']:>6}: {values[0] if values else float('nan'):8.0f} IOPS ({s:.0f} s)", flush=True
            )
    ratios = [s / lo for lo, s in zip(iops["local"], iops["swarm"])]
    print(
        f"local: median {statistics.median(iops['local']):.0f} IOPS; "
        f"swarm: median {statistics.median(iops['swarm']):.0f} IOPS"
    )
    print(
        f"overhead: swarm / local, median of {len(ratios)} paired ratios = {statistics.median(ratios):.3f} "
        f"(ratios {[round(r, 3) for r in ratios]}); ratio of medians = "
        f"{statistics.median(iops['swarm']) / statistics.median(iops['local']):.3f}"
    )


def skew(bed: Bed, root: Path, args: argparse.Namespace) -> None:
    fio = {"rw": "randread", "bs": "4k", "size": args.skew_size, "runtime": args.skew_runtime, "direct": True}
    doc = {
        "name": "skew",
        "workdir": str(root / "unused"),
        "devices": [{"type": "loop", "name": "loop", "size": args.skew_device_size}],
        "filesystems": ["xfs"],
        "runtimes": ["docker:overlay2"],
        "paths": ["volume"],
        "workloads": [{"fio": fio}],
        "loads": [{"name": f"{n}-per-host", "containers": 2 * n} for n in args.per_host],
        "placement": ["spread"],
        "hosts": {h.name: h.spec() for h in bed.hosts},
        "swarm": {"manager": f"unix://{bed.manager.sock}"},
    }
    s = strata_run(doc, root / "skew")
    print(f"skew run: {s:.0f} s")
    for r in sorted(ok(root / "skew"), key=lambda r: r.layers.containers):
        sync = r.flags.sync
        said: SyncExtra = sync.extra if sync else {}
        offsets = ", ".join(
            f"{h} {float(str(v['offset_s'])) * 1e3:+.2f} ms (+/- {float(str(v['uncertainty_s'])) * 1e3:.2f})"
            for h, v in said.get("hosts", {}).items()
        )
        host_skew, skew_all = said.get("host_skew_s"), said.get("skew_s")
        release = said.get("release_skew_s")
        print(
            f"{r.layers.containers // 2} per host: barrier release skew across hosts "
            f"{release * 1e3 if release is not None else float('nan'):.1f} ms; hosts' first I/O skew "
            f"{host_skew * 1e3 if host_skew is not None else float('nan'):.1f} ms, every instance's "
            f"{skew_all * 1e3 if skew_all is not None else float('nan'):.1f} ms (basis {said.get('basis')}, "
            f"sync {'suspect' if sync and sync.suspect else 'ok'}: {sync.reason if sync else ''}); "
            f"clock offsets {offsets}; {r.primary.value or 0.0:.0f} IOPS",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--size", default="256MiB", help="fio's file in the overhead part")
    ap.add_argument("--skew-runtime", type=int, default=3, help="seconds per trial of the skew part")
    ap.add_argument("--skew-size", default="32MiB", help="fio's file per container in the skew part")
    ap.add_argument(
        "--per-host",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[2, 3, 8],
        help="the skew part's loads: containers per host (2,3,8)",
    )
    ap.add_argument("--device-size", default="1GiB", help="the loop device of the overhead part")
    ap.add_argument("--skew-device-size", default="2GiB", help="the loop device of the skew part (with the images)")
    ap.add_argument("--root", help="the test bed's folder (default: a new one under /var/tmp)")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-skew", action="store_true")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(
        args,
        rounds=1,
        runtime=1,
        size="16MiB",
        device_size="512MiB",
        skew_runtime=1,
        skew_size="8MiB",
        skew_device_size="1GiB",
        per_host=[1],
    )
    with bench_bed(fresh(args.root, "strata-bench-swarm"), ["a", "b"], "bench-swarm") as (bed, results):
        if not args.skip_overhead:
            overhead(bed, results, args)
        if not args.skip_skew:
            skew(bed, results, args)


if __name__ == "__main__":
    main()
