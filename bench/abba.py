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
from collections.abc import Iterator
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
    (work / f"s{n}.yaml").write_text(yaml.safe_dump(spec))
    out = work / f"r{n}"
    cp = subprocess.run(
        [sys.executable, "-m", "strata.cli.main", "run", str(work / f"s{n}.yaml"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if cp.returncode != 0:
        raise SystemExit(f"strata run failed ({cp.returncode}):\n{cp.stdout[-3000:]}\n{cp.stderr[-3000:]}")
    (p,) = (out / "trials").glob("*.json")
    r = json.loads(p.read_text())
    if r["status"] != "ok":
        raise SystemExit(f"strata's trial failed: {r['flags']['failed']}")
    tps: float = r["metrics"]["tps"]
    return tps
