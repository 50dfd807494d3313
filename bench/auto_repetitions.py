"""Time to a matrix answer: `repetitions: auto` with `until: steady` against a long run of fixed repetitions.

The same matrix (raw device and xfs, 4 KiB random reads and writes, low and high load, on one loop
device) is run twice through strata: once with many fixed repetitions of fixed-length trials (the
reference), once with `repetitions: auto` (precision 5%) and fio's `until: steady`. The benchmark prints
the machine time of each, their ratio (target: auto at least 3x faster), and how far each configuration's
mean under auto lies from the reference (target: within 5%).

    python3 bench/auto_repetitions.py [--reps 8] [--runtime 30] [--workdir /var/tmp/strata-bench-auto]
(root; about an hour at the defaults on a 2-core VM)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchbed import strata_run  # noqa: E402

from strata.analysis.cells import build_cells  # noqa: E402
from strata.store import load_results  # noqa: E402


def spec(name: str, workdir: str, runtime: int, reps, until: str) -> dict:
    doc = {
        "name": name,
        "workdir": workdir,
        "devices": [{"type": "loop", "size": "1GiB"}],
        "filesystems": ["raw", "xfs"],
        "runtimes": ["native"],
        "paths": ["device", "bind"],
        "workloads": [
            {"fio": {"preset": ["rr", "rw"], "size": "256MiB", "runtime": runtime, "ramp_time": 2, "until": until}}
        ],
        "loads": ["low", {"name": "mid", "numjobs": 4, "iodepth": 16}],
        "repetitions": reps,
    }
    if reps == "auto":
        doc.update(precision="5%", min_repetitions=3, max_repetitions=8)
    return doc


def means(out: Path) -> dict:
    return {
        (c.labels["filesystem"], c.labels["workload"], c.labels["load"]): (c.summary.mean, c.reps)
        for c in build_cells(load_results(out))
        if c.values
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=8, help="fixed repetitions of the reference run")
    ap.add_argument("--runtime", type=int, default=30, help="seconds per trial (the maximum under until: steady)")
    ap.add_argument("--workdir", default="/var/tmp/strata-bench-auto")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t_fixed = strata_run(spec("fixed", args.workdir, args.runtime, args.reps, "time"), tmp / "fixed")
        t_auto = strata_run(spec("auto", args.workdir, args.runtime, "auto", "steady"), tmp / "auto")
        ref, auto = means(tmp / "fixed"), means(tmp / "auto")
        runs = [json.loads(p.read_text()) for p in (tmp / "auto" / "runs").glob("*.json")]
        stops = {k: v["stopped"] for r in runs for k, v in (r.get("repetitions") or {}).items()}
        shutil.rmtree(tmp / "fixed", ignore_errors=True)
    print(f"fixed: {args.reps} repetitions x {args.runtime} s: {t_fixed / 60:.1f} min")
    print(f"auto:  precision 5%, until steady (max {args.runtime} s): {t_auto / 60:.1f} min")
    print(f"time ratio fixed/auto: {t_fixed / t_auto:.2f} (target >= 3)")
    worst = 0.0
    for key in sorted(ref):
        if key in auto:
            dev = auto[key][0] / ref[key][0] - 1
            worst = max(worst, abs(dev))
            print(
                f"  {'/'.join(key)}: auto {auto[key][0]:,.0f} (n={auto[key][1]}) vs reference {ref[key][0]:,.0f} "
                f"(n={ref[key][1]}): {dev:+.1%}"
            )
    print(f"largest deviation from the reference: {worst:.1%} (target <= 5%)")
    print("why each configuration stopped:", json.dumps(stops, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
