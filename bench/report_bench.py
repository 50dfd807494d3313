"""Benchmark: `strata report` on 10,000 stored trials must take under 10 s.

Generates synthetic results once (bench/synth_results.py), then times the
whole report the way the CLI makes it: load every result file, analyse, draw
the figures (SVG; PNG too with --png), render HTML, CSV and the summary, write
them. Each run is a fresh process, as each `strata report` is; the modules are
imported before the clock starts (their time is printed apart). Prints every
run's phases and the best total of --repeat runs. Not a timed test: run it by
hand and read the printed time.

The phases: `load` the result files; `describe` the cells, sweeps and the
figures' data; `conclude` the warnings, findings and advice while worker
processes draw the figures; `figures`, the wait for the drawing left once
the tables are written; `pages`, the HTML; `write` the files. (A version
from before report_files() has `analyse` and `render` instead.)

`--baseline SRC` also times another version of strata (the `src/` of another
checkout, e.g. `git worktree add /tmp/old COMMIT`), alternating its runs with
this checkout's so that both see the same machine, and prints the ratio
this / baseline of the best totals, and the median of the paired ratios. A
version without `--png` draws SVG and PNG whatever the flag says.

    python3 bench/report_bench.py [--trials 10000] [--dir /var/tmp/strata-bench-10k] [--repeat 3]
                                  [--png] [--baseline SRC] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tiny  # noqa: E402

BUDGET_S = 10.0
SRC = Path(__file__).resolve().parents[1] / "src"


def run_once(results_dir: Path, out: Path, png: bool) -> dict[str, Any]:
    """One report, timed by phase, the way `strata report` makes it; imports first, apart from the phases."""
    t = time.perf_counter()
    import inspect

    import strata.analysis.analyse  # noqa: F401  (imported lazily by the report)
    import strata.report
    import strata.report.model  # noqa: F401
    from strata.analysis.cells.load import load as load_results

    imports_s = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    c0 = os.times()
    t0 = time.perf_counter()
    results = load_results(results_dir)
    phases = {"load": time.perf_counter() - t0}
    if hasattr(strata.report, "report_files"):
        report, files = strata.report.report_files(results, "bench", png=png, phases=phases)
    else:  # a version from before report_files: analyse, then draw (SVG and PNG, whatever --png says)
        t1 = time.perf_counter()
        report = strata.report.build_report(results, "bench")
        t2 = time.perf_counter()
        kw = {"png": True} if png and "png" in inspect.signature(strata.report.generate).parameters else {}
        files = strata.report.generate(report, **kw)
        phases |= {"analyse": t2 - t1, "render": time.perf_counter() - t2}
    t3 = time.perf_counter()
    strata.report.write(files, out)
    phases["write"] = time.perf_counter() - t3
    c1 = os.times()
    return {
        "trials": len(results),
        "configurations": len(report.analysis.cells),
        "svg": sum(1 for k in files if k.endswith(".svg")),
        "png": sum(1 for k in files if k.endswith(".png")),
        "imports": imports_s,
        "phases": phases,
        "total": time.perf_counter() - t0,
        "cpu": sum(c1[:4]) - sum(c0[:4]),  # with the figure workers' (reaped) time
    }


def measure(src: Path, results_dir: Path, out: Path, png: bool) -> dict[str, Any]:
    """run_once in a fresh interpreter that imports strata from `src`."""
    argv = [sys.executable, __file__, "--run-once", "--dir", str(results_dir), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    cp = subprocess.run([*argv, *(["--png"] if png else [])], capture_output=True, text=True, env=env)
    if cp.returncode != 0:
        raise SystemExit(f"report run with {src} failed:\n{cp.stdout}{cp.stderr}")
    doc: dict[str, Any] = json.loads(cp.stdout.strip().splitlines()[-1])
    return doc


def phases(r: dict[str, Any]) -> str:
    return ", ".join(f"{p} {s:.2f} s" for p, s in r["phases"].items())


def line(name: str, i: int, r: dict[str, Any]) -> str:
    return (
        f"{name} run {i + 1}: {r['trials']} trials, {r['configurations']} configurations, {r['svg']} figures "
        f"({r['png']} PNG): {phases(r)}, total {r['total']:.2f} s (CPU {r['cpu']:.2f} s incl. figure processes; "
        f"imports {r['imports']:.2f} s apart; load average {os.getloadavg()[0]:.1f})"
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=10000)
    p.add_argument("--dir", default="/var/tmp/strata-bench-10k")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--png", action="store_true", help="also write the figures as PNG (strata report --png)")
    p.add_argument("--baseline", metavar="SRC", help="the src/ of another strata version, timed alternately")
    p.add_argument("--run-once", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    tiny.add(p)
    a = p.parse_args()
    root = Path(a.dir)
    if a.run_once:
        print(json.dumps(run_once(root, Path(a.out), a.png)))
        return 0
    tiny.apply(a, trials=200, repeat=1)
    if not (root / "trials").is_dir() or len(list((root / "trials").glob("*.json"))) != a.trials:
        from synth_results import generate

        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        generate(root, a.trials)
        print(f"generated {a.trials} trials in {time.perf_counter() - t:.1f} s")
    out = root.parent / f"{root.name}-report"
    versions = [("this", SRC)] + ([("baseline", Path(a.baseline))] if a.baseline else [])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in versions}
    for i in range(a.repeat):
        for name, src in versions[:: 1 if i % 2 == 0 else -1]:  # who goes first alternates too
            r = measure(src, root, out, a.png)
            runs[name].append(r)
            print(line(name, i, r), flush=True)
    best = min(runs["this"], key=lambda r: r["total"])
    print(
        f"report on {a.trials} trials: best {best['total']:.2f} s of {a.repeat} ({phases(best)}; "
        f"budget {BUDGET_S:.0f} s): " + ("OK" if best["total"] < BUDGET_S else "TOO SLOW")
    )
    if a.baseline:
        base = min(runs["baseline"], key=lambda r: r["total"])
        paired = [x["total"] / y["total"] for x, y in zip(runs["this"], runs["baseline"])]
        cpu = [x["cpu"] / y["cpu"] for x, y in zip(runs["this"], runs["baseline"])]
        print(
            f"baseline ({a.baseline}): best {base['total']:.2f} s of {a.repeat} "
            f"({phases(base)}); this / baseline: "
            f"{best['total'] / base['total']:.2f} of the best totals, median of paired ratios "
            f"{statistics.median(paired):.2f}; CPU time, median of paired ratios {statistics.median(cpu):.2f}"
        )
    return 0 if best["total"] < BUDGET_S or a.tiny else 1  # a tiny run's figures mean nothing: no verdict on them


if __name__ == "__main__":
    sys.exit(main())
