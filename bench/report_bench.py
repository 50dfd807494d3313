"""Benchmark: `strata report` on 10,000 stored trials must take under 10 s.

Generates synthetic results once (bench/synth_results.py), then times the
whole report the way the CLI makes it: load every result file, analyse, draw
the figures (SVG and PNG), write HTML, CSV and the summary. Not a timed test:
run it by hand and read the printed time.

    python3 bench/report_bench.py [--trials 10000] [--dir /var/tmp/strata-bench-10k] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tiny  # noqa: E402
from synth_results import generate  # noqa: E402

BUDGET_S = 10.0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=10000)
    p.add_argument("--dir", default="/var/tmp/strata-bench-10k")
    p.add_argument("--repeat", type=int, default=3)
    tiny.add(p)
    a = p.parse_args()
    tiny.apply(a, trials=200, repeat=1)
    root = Path(a.dir)
    if not (root / "trials").is_dir() or len(list((root / "trials").glob("*.json"))) != a.trials:
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        generate(root, a.trials)
        print(f"generated {a.trials} trials in {time.perf_counter() - t:.1f} s")
    from strata.analysis.load import load as load_results
    from strata.report import build_report, write
    from strata.report import generate as generate_files

    times = []
    for i in range(a.repeat):
        out = root.parent / f"{root.name}-report"
        shutil.rmtree(out, ignore_errors=True)
        c0 = os.times()
        t0 = time.perf_counter()
        results = load_results(root)
        t1 = time.perf_counter()
        report = build_report(results, "bench")
        t2 = time.perf_counter()
        files = generate_files(report)
        write(files, out)
        t3 = time.perf_counter()
        c1 = os.times()
        cpu = sum(c1[:4]) - sum(c0[:4])
        times.append(t3 - t0)
        drawn = sum(1 for k in files if k.endswith(".png"))
        print(
            f"run {i + 1}: {len(results)} trials, {len(report.analysis.cells)} configurations, {drawn} figures: "
            f"load {t1 - t0:.2f} s, analyse {t2 - t1:.2f} s, render+write {t3 - t2:.2f} s, total {t3 - t0:.2f} s "
            f"(CPU {cpu:.2f} s incl. figure processes; load average {os.getloadavg()[0]:.1f})"
        )
    best = min(times)
    print(
        f"report on {a.trials} trials: best {best:.2f} s of {a.repeat} (budget {BUDGET_S:.0f} s): "
        + ("OK" if best < BUDGET_S else "TOO SLOW")
    )
    return 0 if best < BUDGET_S or a.tiny else 1  # a tiny run's figures mean nothing: no verdict on them


if __name__ == "__main__":
    sys.exit(main())
