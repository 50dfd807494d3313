"""What the overhead benches in ABBA pairs share (pgbench_overhead.py, sysbench_overhead.py; overhead.py takes
the loop device and strata's side): a command that must succeed, a cold page cache before each side, a cgroup of
its own for a side's server, strata's side (one trial natively on xfs through a bind mount, its transactions a
second), the geometric mean of the paired ratios with its 95% interval, the command line they share, and the
loop device they run on."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tiny
import yaml

from strata.analysis.decisions.stats import summarize
from strata.stack.hostprocs import cgroup_parents

MIN_PAIRS = 10


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


def arguments(warmup: int, scripts: str) -> argparse.ArgumentParser:
    """The command line every overhead bench takes (each adds its tool's own sizes)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=MIN_PAIRS, help=f"ABBA pairs of each script, at least {MIN_PAIRS}")
    ap.add_argument("--runtime", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--scripts", default=scripts)
    ap.add_argument("--size", default="3G", help="the loop device's backing file (G or M)")
    tiny.add(ap)
    return ap


def scripts_of(args: argparse.Namespace, **small: object) -> list[str]:
    """The scripts to run, once the tiny mode's `small` values are applied and the pairs checked."""
    if not tiny.apply(args, **small) and args.pairs < MIN_PAIRS:
        raise SystemExit(f"--pairs {args.pairs}: at least {MIN_PAIRS} pairs give the interval this bench reports")
    return [s.strip() for s in args.scripts.split(",") if s.strip()]


@contextlib.contextmanager
def loop_device(bench: str, size: str) -> Iterator[tuple[Path, str, Path]]:
    """A work directory under /var/tmp that a server's user can walk through, a loop device with direct I/O over a
    file of `size` (G or M) in it, and a mount point: (work, device, mount point), all removed after."""
    size_mib = int(size[:-1]) * (1024 if size.endswith("G") else 1)
    work = Path(tempfile.mkdtemp(prefix=f"strata-{bench}-overhead-", dir="/var/tmp"))
    work.chmod(0o755)  # the server's user walks through it to its data directory
    img = work / "dev.img"
    sh("dd", "if=/dev/zero", f"of={img}", "bs=1M", f"count={size_mib}", "oflag=direct", "status=none")
    dev = sh("losetup", "--find", "--show", "--direct-io=on", str(img))
    mnt = work / "mnt"
    mnt.mkdir()
    try:
        yield work, dev, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["losetup", "-d", dev])
        subprocess.run(["rm", "-rf", str(work)])


def compare(
    bench: str,
    args: argparse.Namespace,
    scripts: list[str],
    hand: Callable[[Path, str], float],
    workload: Callable[[str], dict[str, Any]],
    target: float,
    design: str,
) -> int:
    """The bench: its pairs on a loop device of its own (`hand(mount point, script)` by hand, strata's trial of
    `workload(script)` natively), each script's interval against `target`, then the `design` in words."""
    with loop_device(bench, args.size) as (work, dev, mnt):
        results = run_pairs(
            args.pairs,
            scripts,
            dev,
            mnt,
            lambda script: hand(mnt, script),
            lambda script, n: by_strata(dev, bench, workload(script), work, n),
        )
    report(results, target)
    print(design)
    return 0
