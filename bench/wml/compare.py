#!/usr/bin/env python3
"""Runs strata-wml and the bare C loop alternately and prints the table of
bench/wml/run.sh. Called by run.sh with the tmpfs mount already in place.

Two figures per personality, medians over the repetitions:
* throughput ratio: engine ops/s / bare ops/s (the target figure);
* CPU ratio: engine ops per CPU-second / bare ops per CPU-second, which is
  far less sensitive to this VM's noisy CPU availability. The engine's CPU
  time excludes fileset creation (measured with `strata-wml create`).

Then one line for `hog`: CPU nanoseconds per iteration of the engine's hog
flowop (one thread, value 10,000,000; the engine's whole CPU time over the
iterations done) against Filebench's own loop in C (hog.c, gcc -O2, its
CPU time), medians of alternating repetitions.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
from typing import Any


def cpu_of(cmd: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu


def clean(mnt: str) -> None:
    for e in os.listdir(mnt):
        shutil.rmtree(os.path.join(mnt, e), ignore_errors=True)


def _end(stdout: str) -> dict[str, Any]:
    """The data of the engine's `end` envelope (its JSON Lines on stdout)."""
    end: dict[str, Any] = [json.loads(x)["data"] for x in stdout.splitlines() if json.loads(x)["type"] == "end"][0]
    return end


def engine_once(engine: str, f: str, mnt: str, secs: float) -> tuple[float, float]:
    out, cpu = cpu_of([engine, "run", f, "--json", "--runtime", str(secs), "--set", f"$dir={mnt}"])
    end = _end(out.stdout)
    clean(mnt)
    _, create_cpu = cpu_of([engine, "create", f, "--set", f"$dir={mnt}"])
    clean(mnt)
    ops, ops_s = end["summary"]["ops"], end["summary"]["ops_per_s"]
    return float(ops_s), ops / max(cpu - create_cpu, 1e-3)


def bare_once(
    engine: str, bare: str, f: str, name: str, threads: int, mnt: str, secs: float, work: str
) -> tuple[float, float]:
    listing = os.path.join(work, "listing.tsv")
    with open(listing, "w") as lf:
        subprocess.run([engine, "create", f, "--set", f"$dir={mnt}"], stdout=lf, stderr=subprocess.DEVNULL, check=True)
    out, cpu = cpu_of([bare, name, listing, str(threads), str(secs)])
    clean(mnt)
    ops_s, ops, _ = out.stdout.split()
    return float(ops_s), int(ops) / max(cpu, 1e-3)


HOG_VALUE = 10_000_000


def hog_engine_once(engine: str, work: str) -> float:
    f = os.path.join(work, "hog.f")
    with open(f, "w") as fh:
        fh.write(f"define process name=p {{ thread name=t,memsize=1m {{ flowop hog name=hg,value={HOG_VALUE} }} }}\n")
    out, cpu = cpu_of([engine, "run", f, "--json", "--runtime", "3"])
    end = _end(out.stdout)
    iterations: int = end["flowops"][0]["ops"] * HOG_VALUE
    return cpu * 1e9 / iterations


def hog_line(engine: str, hog: str, reps: int) -> None:
    eng: list[float] = []
    c: list[float] = []
    for _ in range(reps):  # alternating, as the machine's speed drifts
        eng.append(hog_engine_once(engine, os.path.dirname(hog)))
        c.append(float(subprocess.run([hog, str(HOG_VALUE), "300"], capture_output=True, text=True).stdout))
    e, b = statistics.median(eng), statistics.median(c)
    print(f"hog_ns_per_iteration engine {e:.3f} filebench_c {b:.3f} ratio {e / b:.3f}", flush=True)


def main() -> None:
    engine, bare, pers, mnt, work, secs_arg, reps_arg = sys.argv[1:8]
    secs, reps = float(secs_arg), int(reps_arg)
    print("personality engine_ops/s bare_ops/s ratio cpu_ratio")
    for name, threads in (("webserver", 100), ("varmail", 16), ("fileserver", 50)):
        f = os.path.join(pers, f"{name}.f")
        eng: list[tuple[float, float]] = []
        bar: list[tuple[float, float]] = []
        for _ in range(reps):
            eng.append(engine_once(engine, f, mnt, secs))
            bar.append(bare_once(engine, bare, f, name, threads, mnt, secs, work))
        e_tp = statistics.median(x[0] for x in eng)
        b_tp = statistics.median(x[0] for x in bar)
        e_cpu = statistics.median(x[1] for x in eng)
        b_cpu = statistics.median(x[1] for x in bar)
        runs = " ".join(f"{a[0]:.0f}/{b[0]:.0f}" for a, b in zip(eng, bar))
        print(
            f"{name} {e_tp:.0f} {b_tp:.0f} {e_tp / b_tp:.3f} {e_cpu / b_cpu:.3f}   (engine/bare runs: {runs})",
            flush=True,
        )
    hog_line(engine, os.path.join(work, "hog"), reps)


if __name__ == "__main__":
    main()
