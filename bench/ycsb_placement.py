"""Study 003 section 6.3 measured: Cassandra databases on one host against the same databases over two.

Test hosts are made here (strata.hosts.testbed: network namespaces on a bridge, a dockerd each, one
Swarm); the agents are deployed by `strata run` as on a real Swarm. One spec: YCSB workload A on
`--databases` Cassandra databases in containers (docker:overlay2, volumes, ext4 on a loop device of each
host), placed all on host a and spread over a and b, `--repetitions` interleaved rounds; then, with
`--native`, one database per host natively (the native runtime runs one instance per host). Printed:
each trial's aggregate ops/s, read p99 and each host's share, and the report's placement advice (measured,
with 95% intervals over the repetitions).

    python3 bench/ycsb_placement.py [--repetitions 3] [--runtime 15] [--root DIR]
        [--tiny]
(root; about 3 minutes per trial on a 2-core VM, where both "hosts" share the same two cores: this
measures the mechanics, not what a second machine gains; --tiny: both placements once, 8 s runs after a 2 s
warm-up, 1 thread, 200 records, a small device, each database at its smallest memory limit, to check that it
runs)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchbed import bench_bed, fresh, strata_run  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.core.metrics import dig  # noqa: E402
from strata.hosts.testbed import Bed  # noqa: E402
from strata.results.store import load_results  # noqa: E402


def spec(
    bed: Bed, root: Path, args: argparse.Namespace, runtime: str, path: str, placement: list[str | dict[str, int]]
) -> dict[str, Any]:
    ycsb = {
        "workload": "a",
        "records": args.records,
        "runtime": args.runtime,
        "warmup": args.warmup,
        "threads": args.threads,
    }
    load = {"name": f"{args.databases}db", "containers": args.databases}
    if args.memory and runtime != "native":  # the native runtime takes no limits
        load["limits"] = {"memory": f"{args.memory}MiB"}
    return {
        "name": "ycsb-placement",
        "workdir": str(root / "unused"),
        "devices": [{"type": "loop", "name": "loop", "size": args.device_size}],
        "filesystems": ["ext4"],
        "runtimes": [runtime],
        "paths": [path],
        "workloads": [{"ycsb": ycsb}],
        "loads": [load],
        "placement": placement,
        "repetitions": args.repetitions,
        "hosts": {h.name: h.spec() for h in bed.hosts},
        "swarm": {"manager": f"unix://{bed.manager.sock}", "lost_after_s": 30},
    }


def show(out: Path) -> None:
    rs = load_results(out)
    for r in sorted(rs, key=lambda r: (r.repetition, r.layers.placement.name)):
        pl = r.layers.placement.name
        if r.status != "ok":
            print(f"  {pl} rep {r.repetition}: {r.status} {r.flags.failed}", flush=True)
            continue
        per_host = dig(r, ("metrics", "hosts")) or {}
        hosts = ", ".join(f"{h} {v['primary']['value']:.0f}" for h, v in per_host.items())
        sync = r.flags.sync
        said = sync.extra if sync else {}
        read = dig(r, ("metrics", "latency", "READ"))  # none when no read completed (a starved machine)
        p99 = f"{read['p99_us'] / 1e3:.1f} ms" if read else "none (no read completed)"
        print(
            f"  {pl:>7} rep {r.repetition}: {r.primary.value or 0.0:7.0f} ops/s (hosts: {hosts}); "
            f"read p99 {p99}; client CPU share "
            f"{dig(r, ('metrics', 'clients', 'run', 'client_cpu_share'))}; "
            f"sync {'suspect' if sync and sync.suspect else 'ok'} "
            f"(overlap {said.get('overlap')}, host skew {said.get('host_skew_s')})",
            flush=True,
        )
    for p in analyse(rs).placements:
        print("advice: " + p.text(), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--databases", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=15)
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=5, help="seconds of unmeasured operations before each run")
    ap.add_argument("--threads", type=int, default=4, help="client threads per database")
    ap.add_argument("--device-size", default="3GiB", help="each host's loop device")
    ap.add_argument("--memory", type=int, default=None, help="MiB: each container's memory limit (default: none)")
    ap.add_argument("--native", action="store_true", help="also one database per host natively")
    ap.add_argument("--root", help="the test bed's folder (default: a new one under /var/tmp)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, repetitions=1, runtime=8, warmup=2, records=200, threads=1, device_size="1GiB", memory=1024)
    root = fresh(args.root, "strata-bench-ycsb-placement")
    with bench_bed(root, ["a", "b"], "bench-ycsb-placement") as (bed, results):
        one = {"a": args.databases}
        doc = spec(bed, root, args, "docker:overlay2", "volume", [one, "spread"])
        print(f"containers: {strata_run(doc, results / 'containers'):.0f} s", flush=True)
        show(results / "containers")
        if args.native:
            doc = spec(bed, root, args, "native", "bind", ["spread"])
            doc["loads"] = [{"name": "1db-per-host", "containers": 2}]
            print(f"native: {strata_run(doc, results / 'native'):.0f} s", flush=True)
            show(results / "native")


if __name__ == "__main__":
    main()
