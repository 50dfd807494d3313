"""Study 001's layout measured: one Cassandra cluster on one host against the same cluster over two.

Test hosts are made here (strata.hosts.testbed: three network namespaces on a bridge, a dockerd
each, one Swarm); `strata run` deploys the agents as on a real Swarm. One spec, `--repetitions`
interleaved rounds of three trials, natively (ext4 on a loop device of each host), YCSB workload A
on a two-node cluster at RF 2 and QUORUM (both nodes answer every operation):

- `one-host`: both nodes on host a (127.0.1.1 and 127.0.1.2), the clients on a;
- `span`: node 0 on a, node 1 on b (each at its host's address), the clients on a;
- `span-clients-apart`: the same nodes, the clients on host c, which runs no node.

Printed: each trial's ops/s, read p99 and node ready times, and the medians' ratios against
`one-host`. All three "hosts" share this machine's cores, page cache and disk, so this measures
what the path across hosts costs (addresses on veths instead of loopback, the barrier, the agents),
not what more machines gain.

    python3 bench/ycsb_cluster_span.py [--repetitions 2] [--runtime 15] [--root DIR]
        [--tiny]
(root; about 2 minutes per trial on a 2-core VM; --tiny: `one-host` and `span-clients-apart` once (`span`
takes the same paths as the one or the other), 8 s runs after a 2 s warm-up, 1 thread, 200 records, a small
device, to check that it runs)
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

from strata.core.metrics import dig  # noqa: E402
from strata.hosts.testbed import Bed  # noqa: E402
from strata.results.store import load_results  # noqa: E402

SETUPS: dict[str, dict[str, Any]] = {
    "one-host": {"cluster": {"nodes": 2, "replication_factor": 2}},
    "span": {"cluster": {"nodes": 2, "replication_factor": 2, "hosts": ["a", "b"]}, "clients_on": "a"},
    "span-clients-apart": {"cluster": {"nodes": 2, "replication_factor": 2, "hosts": ["a", "b"]}, "clients_on": "c"},
}


def spec(bed: Bed, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    base = {
        "workload": "a",
        "records": args.records,
        "runtime": args.runtime,
        "warmup": args.warmup,
        "threads": args.threads,
    }
    return {
        "name": "ycsb-cluster-span",
        "workdir": str(root / "unused"),
        "devices": [{"type": "loop", "name": "loop", "size": args.device_size}],
        "filesystems": ["ext4"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"ycsb": {**base, "name": name, **SETUPS[name]}} for name in args.setups],
        "loads": [{"containers": 1}],
        "placement": ["a"],  # the one-host cluster's; a spanning cluster places itself
        "repetitions": args.repetitions,
        "hosts": {h.name: h.spec() for h in bed.hosts},
        "swarm": {"manager": f"unix://{bed.manager.sock}", "lost_after_s": 30},
    }


def show(out: Path) -> None:
    rs = sorted(load_results(out), key=lambda r: (r.repetition, r.labels["workload"]))
    ops: dict[str, list[float]] = {}
    p99: dict[str, list[float]] = {}
    for r in rs:
        name = r.labels["workload"]
        if r.status != "ok":
            print(f"  {name} rep {r.repetition}: {r.status} {r.flags.failed}", flush=True)
            continue
        value = r.primary.value or 0.0
        ops.setdefault(name, []).append(value)
        p99.setdefault(name, []).append(dig(r, ("metrics", "latency", "READ", "p99_us")) / 1e3)
        sync = r.flags.sync
        print(
            f"  {name:>18} rep {r.repetition}: {value:7.0f} ops/s; "
            f"read p99 {p99[name][-1]:.1f} ms; nodes ready {r.metrics.get('node_ready_s')} s; "
            f"sync {'suspect' if sync and sync.suspect else 'ok'}",
            flush=True,
        )
    base = statistics.median(ops["one-host"]) if ops.get("one-host") else None
    for name in SETUPS:
        if name in ops:
            med = statistics.median(ops[name])
            ratio = f"{med / base:.2f}" if base else "-"
            print(
                f"{name}: median {med:.0f} ops/s, ratio to one-host {ratio}; median read p99 "
                f"{statistics.median(p99[name]):.1f} ms",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--runtime", type=int, default=15)
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=5, help="seconds of unmeasured operations before each run")
    ap.add_argument("--threads", type=int, default=4, help="client threads")
    ap.add_argument("--device-size", default="3GiB", help="each host's loop device")
    ap.add_argument("--root", help="the test bed's folder (default: a new one under /var/tmp)")
    ap.add_argument("--setups", nargs="+", choices=list(SETUPS), default=list(SETUPS), help="which setups to run")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(
        args, repetitions=1, runtime=8, warmup=2, records=200, threads=1, device_size="1GiB",
        setups=["one-host", "span-clients-apart"],
    )  # fmt: skip
    root = fresh(args.root, "strata-bench-ycsb-span")
    with bench_bed(root, ["a", "b", "c"], "bench-ycsb-span") as (bed, results):
        print(f"run: {strata_run(spec(bed, root, args), results / 'span'):.0f} s", flush=True)
        show(results / "span")


if __name__ == "__main__":
    main()
