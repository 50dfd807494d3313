"""A pod on a `local` PersistentVolume against native fio on the same file system.

The same fio trial through strata natively (bind: the mount point) and as a pod of strata's Kubernetes test
bed through a `local` PersistentVolume on the same xfs on one loop device, interleaved over several rounds
(the repetitions of one run are interleaved rounds, so a slow minute of the machine falls on both).
Prints each round and the median of the paired ratios pod / native (target >= 0.95).

    python3 bench/kubernetes_overhead.py [--rounds 5] [--runtime 10] [--tiny]     (root)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import tiny
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from benchbed import workdir  # noqa: E402

from strata.results.store import load_results  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--size", default="512MiB", help="fio's file")
    ap.add_argument("--workdir", help="the spec's workdir (default: a new folder under /var/tmp)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=2, size="32MiB")
    spec = {
        "name": "kubernetes-overhead",
        "repetitions": args.rounds,
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["native", "kubernetes"],
        "paths": ["bind", "local"],
        "workloads": [{"fio": {"preset": "rr", "size": args.size, "runtime": args.runtime, "ramp_time": 2}}],
        "loads": ["low", {"name": "j2xqd16", "numjobs": 2, "iodepth": 16}],
    }
    with tempfile.TemporaryDirectory() as d, workdir(args.workdir, "strata-bench-kubernetes") as wd:
        spec["workdir"] = str(wd)
        path = Path(d) / "s.yaml"
        path.write_text(yaml.safe_dump(spec))
        cp = subprocess.run(
            [sys.executable, "-m", "strata.cli.main", "run", str(path), "-o", f"{d}/out"],
            capture_output=True,
            text=True,
        )
        if cp.returncode != 0:
            print(cp.stdout[-3000:], cp.stderr[-3000:])
            return 1
        by: dict[tuple[str, int], dict[str, float]] = {}
        for r in load_results(f"{d}/out"):
            key = (r.labels["load"], r.labels["repetition"])
            by.setdefault(key, {})[r.labels["runtime"]] = r.primary.value or 0.0
    for load in sorted({k[0] for k in by}):
        ratios = []
        for (ld, rep), v in sorted(by.items()):
            n, k = v.get("native"), v.get("kubernetes")
            if ld == load and n and k:
                ratios.append(k / n)
                print(f"{load} round {rep + 1}: native {n:,.0f} IOPS, pod on a local PV {k:,.0f}, ratio {k / n:.3f}")
        print(
            f"{load}: pod / native, median of paired ratios: {statistics.median(ratios):.3f} over {len(ratios)} rounds "
            "(target >= 0.95)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
