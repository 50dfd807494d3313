"""What the overhead benches in ABBA pairs share (pgbench_overhead.py, sysbench_overhead.py): a command that
must succeed, a cold page cache before each side, a cgroup of its own for a side's server, strata's side (one
trial natively on xfs through a bind mount, its transactions a second), and the geometric mean of the paired
ratios with its 95% interval."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from strata.analysis.decisions.stats import summarize
from strata.stack.hostprocs import cgroup_parents


def sh(*argv: str | Path) -> str:
    """Run a command; its output, or exit with what it said."""
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if cp.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} exited {cp.returncode}:\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}")
    return cp.stdout.strip()


def cold() -> None:
    """`sync` and a drop of the page cache: each side starts from the same cold cache."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


@contextlib.contextmanager
def own_cgroup(bench: str, tag: str) -> Iterator[list[Path]]:
    """A cgroup of its own at the root of every hierarchy, as strata's native runtime makes for an instance."""
    name = f"strata-bench-{bench}-{os.getpid()}-{tag}"
    dirs = sorted({parent / name for parent in cgroup_parents().values()})
    for d in dirs:
        d.mkdir(exist_ok=True)
    try:
        yield dirs
    finally:
        for d in dirs:
            for pid in (d / "cgroup.procs").read_text().split() if d.exists() else []:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            for _ in range(50):
                with contextlib.suppress(OSError):
                    d.rmdir()
                if not d.exists():
                    break
                time.sleep(0.1)


def paired(ratios: list[float]) -> tuple[float, float | None, float | None]:
    """The geometric mean of paired ratios and its 95% interval (Student's t on their logs; None with one pair)."""
    s = summarize([math.log(r) for r in ratios])
    low = math.exp(s.ci_low) if s.ci_low is not None else None
    high = math.exp(s.ci_high) if s.ci_high is not None else None
    return math.exp(s.mean), low, high


def strata_run(spec: dict[str, Any], work: Path, n: int) -> Path:
    """`strata run` of `spec` (written to work/s{n}.yaml, results in work/r{n}); its trials' directory, or exit
    with what strata said."""
    (work / f"s{n}.yaml").write_text(yaml.safe_dump(spec))
    out = work / f"r{n}"
    cp = subprocess.run(
        [sys.executable, "-m", "strata.cli.main", "run", str(work / f"s{n}.yaml"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if cp.returncode != 0:
        raise SystemExit(f"strata run failed ({cp.returncode}):\n{cp.stdout[-3000:]}\n{cp.stderr[-3000:]}")
    return out / "trials"


def by_strata(dev: str, workload: str, params: dict[str, Any], work: Path, n: int) -> float:
    """strata's side: one trial of `workload` natively on a fresh xfs on `dev` through a bind mount; its tx/s."""
    spec = {
        "name": f"{workload}-overhead-{n}",
        "workdir": str(work / "wd"),
        "devices": [{"type": "block", "path": dev, "destroy": True}],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{workload: params}],
    }
    (p,) = strata_run(spec, work, n).glob("*.json")
    r = json.loads(p.read_text())
    if r["status"] != "ok":
        raise SystemExit(f"strata's trial failed: {r['flags']['failed']}")
    tps: float = r["metrics"]["tps"]
    return tps


def run_pairs(
    pairs: int,
    scripts: list[str],
    dev: str,
    mnt: Path,
    hand: Callable[[str], float],
    strata: Callable[[str, int], float],
) -> dict[str, list[tuple[float, float]]]:
    """Each script's (by hand, strata) pairs in ABBA order (by hand first in even pairs): a cold cache before each
    side, a fresh xfs on `dev` mounted at `mnt` for the side by hand (`hand(script)`), strata's trial n otherwise
    (`strata(script, n)`); each pair printed as it ends."""
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in scripts}
    n = 0
    for i in range(pairs):
        for script in scripts:
            got: dict[str, float] = {}
            for side in ("hand", "strata") if i % 2 == 0 else ("strata", "hand"):
                cold()
                if side == "hand":
                    sh("mkfs.xfs", "-f", "-q", "-K", dev)
                    sh("mount", dev, mnt)
                    try:
                        got[side] = hand(script)
                    finally:
                        sh("umount", mnt)
                else:
                    n += 1
                    got[side] = strata(script, n)
            results[script].append((got["hand"], got["strata"]))
            print(
                f"pair {i + 1} {script} ({'by hand' if i % 2 == 0 else 'strata'} first): by hand "
                f"{got['hand']:,.0f} tx/s, strata native {got['strata']:,.0f} tx/s, "
                f"ratio {got['strata'] / got['hand']:.3f}",
                flush=True,
            )
    return results


def report(results: dict[str, list[tuple[float, float]]], target: float) -> None:
    """Per script: the geometric mean of strata / by hand with its 95% interval, against the target."""
    for script, pairs in results.items():
        mean, low, high = paired([s / h for h, s in pairs])
        interval = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "[no interval: one pair]"
        verdict = "above" if low is not None and low > target else "not above"
        print(
            f"{script}: strata / by hand {mean:.3f} {interval}, geometric mean of {len(pairs)} paired ratios with its "
            f"95% interval ({verdict} the target {target})"
        )
