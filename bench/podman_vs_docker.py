"""Podman against Docker on the same stack: the same fio trial through strata on `docker:overlay2` and
`podman:overlay`, a named volume on xfs on one loop device, interleaved over several rounds (the
repetitions of one run are interleaved rounds). Prints each round and the median of paired ratios.

    python3 bench/podman_vs_docker.py [--rounds 5] [--runtime 10] [--tiny]     (root)
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
    ap.add_argument("--workdir", help="the spec's workdir (default: a new folder under /var/tmp)")
    ap.add_argument("--size", default="512MiB", help="fio's file per job")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=2, size="64MiB")
    spec = {
        "name": "podman-vs-docker",
        "repetitions": args.rounds,
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["docker:overlay2", "podman:overlay"],
        "paths": ["volume"],
        "workloads": [{"fio": {"preset": "rr", "size": args.size, "runtime": args.runtime, "ramp_time": 2}}],
        "loads": [{"name": "j2xqd16", "numjobs": 2, "iodepth": 16}],
    }
    with tempfile.TemporaryDirectory() as d, workdir(args.workdir, "strata-bench-podman") as wd:
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
        by: dict[int, dict[str, float]] = {}
        for r in load_results(f"{d}/out"):
            by.setdefault(r.labels["repetition"], {})[r.labels["runtime"]] = r.primary.value or 0.0
    ratios = []
    for rep in sorted(by):
        dk, pm = by[rep].get("docker:overlay2"), by[rep].get("podman:overlay")
        if dk and pm:
            ratios.append(pm / dk)
            print(f"round {rep + 1}: docker {dk:,.0f} IOPS, podman {pm:,.0f} IOPS, podman/docker {pm / dk:.3f}")
    print(f"podman / docker, median of paired ratios: {statistics.median(ratios):.3f} over {len(ratios)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
