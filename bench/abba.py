"""What the overhead benches in ABBA pairs share (pgbench_overhead.py, sysbench_overhead.py; overhead.py takes
the loop device and strata's side): a command that must succeed, a cold page cache before each side, a cgroup of
its own for a side's server, strata's side (one trial natively on xfs through a bind mount, its transactions a
second), the geometric mean of the paired ratios with its 95% interval, the command line they share, the loop
device they run on, and the spread alone (`--hand-only`: the by-hand side only, at several client counts, what a
design's client count and number of pairs rest on)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import signal
import statistics
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
from strata.core.units import parse_size
from strata.stack.hostprocs import cgroup_parents

MIN_PAIRS = 10
MIN_SPREAD = 3  # fresh servers at each client count, the fewest whose spread `--hand-only` reports
MAX_PAIRS = 1000
MiB = 1 << 20
MAX_SECONDS = 86400
MAX_CLIENTS = 1000
MAX_COUNTS = 8  # client counts `--hand-only` alternates
MIN_DEVICE_MIB, MAX_DEVICE_MIB = 512, 64 * 1024  # --size: room for a server's data, and a bound on a typo
XFS = "xfs on a loop device with direct I/O"  # where every side runs, in the design's words


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
                    got[side] = on_fresh_xfs(dev, mnt, functools.partial(hand, script))
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


def on_fresh_xfs(dev: str, mnt: Path, run: Callable[[], float]) -> float:
    """`run()` on a fresh xfs on `dev` mounted at `mnt`, unmounted after (the caller drops the cache if it should)."""
    sh("mkfs.xfs", "-f", "-q", "-K", dev)
    sh("mount", dev, mnt)
    try:
        return run()
    finally:
        sh("umount", mnt)


def spread(
    rounds: int, scripts: list[str], counts: list[int], hand: Callable[[str, int], float]
) -> dict[tuple[str, int], list[float]]:
    """The by-hand side alone: `rounds` rounds of each script at each client count, the counts alternated within
    a round (the VM's drift over minutes falls on each); each run's `hand(script, clients)` printed as it ends."""
    runs: dict[tuple[str, int], list[float]] = {(s, c): [] for s in scripts for c in counts}
    for i in range(rounds):
        for script in scripts:
            for c in counts:
                tps = hand(script, c)
                runs[(script, c)].append(tps)
                print(f"round {i + 1} {script} at {c} clients: by hand {tps:,.0f} tx/s", flush=True)
    return runs


def spread_report(runs: dict[tuple[str, int], list[float]]) -> None:
    """Per script and client count: the geometric mean of the transactions a second and the sd of their logs
    (a pair's log ratio spreads about sqrt(2) times as much when both sides spread so)."""
    for (script, clients), tps in runs.items():
        logs = [math.log(t) for t in tps]
        sd = f"{statistics.stdev(logs):.3f}" if len(logs) > 1 else "none (one run)"
        print(
            f"{script} at {clients} clients by hand: {math.exp(statistics.mean(logs)):,.0f} tx/s, geometric mean "
            f"of {len(tps)} fresh servers; sd of log tps {sd}"
        )


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
    ap.add_argument(
        "--pairs",
        type=bounded(1, MAX_PAIRS),
        default=MIN_PAIRS,
        help=f"ABBA pairs of each script, {MIN_PAIRS} to {MAX_PAIRS} (with --hand-only: fresh servers at each count, "
        f"at least {MIN_SPREAD})",
    )
    ap.add_argument("--runtime", type=bounded(1, MAX_SECONDS), default=30, help=f"1 to {MAX_SECONDS} seconds")
    ap.add_argument("--warmup", type=bounded(0, MAX_SECONDS), default=warmup, help=f"0 to {MAX_SECONDS} seconds")
    ap.add_argument("--clients", type=bounded(1, MAX_CLIENTS), default=8, help=f"1 to {MAX_CLIENTS}")
    ap.add_argument(
        "--hand-only",
        type=client_counts,
        default=None,
        metavar="C1,C2",
        help="the spread alone: only the side by hand, --pairs fresh servers at each of these client counts, "
        "alternated; prints the sd of log tps of each",
    )
    ap.add_argument("--scripts", default=scripts)
    ap.add_argument(
        "--size", type=device_size, default="3G", help="the loop device's backing file, 512M to 64G (G or M)"
    )
    tiny.add(ap)
    return ap


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` (argparse names the option and the value when not)."""

    def whole(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number: give {low} to {high}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{n} is out of range: give {low} to {high}")
        return n

    return whole


def device_size(text: str) -> str:
    """`--size`: a whole number of MiB, 512M to 64G (the backing file is written whole before the pairs)."""
    try:
        size = parse_size(text.strip())
    except ValueError:
        size = 0
    if size % MiB or not MIN_DEVICE_MIB <= size // MiB <= MAX_DEVICE_MIB:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give 512M to 64G, a whole number of G or M (3G)")
    return text.strip()


def client_counts(text: str) -> list[int]:
    """`--hand-only`'s value: distinct client counts, comma-separated, 1 to MAX_CLIENTS each, at most MAX_COUNTS."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not 1 <= len(words) <= MAX_COUNTS:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_COUNTS} client counts, comma-separated: 8,2")
    counts = [bounded(1, MAX_CLIENTS)(w) for w in words]
    if len(set(counts)) < len(counts):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} names a client count twice: give each once")
    return counts


def scripts_of(args: argparse.Namespace, **small: object) -> list[str]:
    """The scripts to run, once the tiny mode's `small` values are applied and the pairs checked."""
    least, what = (MIN_PAIRS, "pairs give the interval")
    if args.hand_only:
        least, what = (MIN_SPREAD, "fresh servers give the spread")
    if not tiny.apply(args, **small) and args.pairs < least:
        raise SystemExit(f"--pairs {args.pairs}: at least {least} {what} this bench reports")
    return [s.strip() for s in args.scripts.split(",") if s.strip()]


@contextlib.contextmanager
def loop_device(bench: str, size: str) -> Iterator[tuple[Path, str, Path]]:
    """A work directory under /var/tmp that a server's user can walk through, a loop device with direct I/O over a
    file of `size` (G or M) in it, and a mount point: (work, device, mount point), all removed after."""
    size_mib = parse_size(size) // MiB
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
    design: Callable[[str], str],
) -> int:
    """The bench: its pairs on a loop device of its own (`hand(mount point, script)` by hand, strata's trial of
    `workload(script)` natively), each script's interval against `target`, then the design in words (`design`
    says the workload's at a number of clients); with --hand-only, the spread of the side by hand alone at each
    client count instead."""
    if args.hand_only:
        with loop_device(bench, args.size) as (_, dev, mnt):

            def at(script: str, clients: int) -> float:
                args.clients = clients
                cold()
                return on_fresh_xfs(dev, mnt, lambda: hand(mnt, script))

            runs = spread(args.pairs, scripts, args.hand_only, at)
        spread_report(runs)
        clients = " or ".join(map(str, args.hand_only))
        print(f"{design(clients)}, by hand only: {args.pairs} fresh servers at each client count, alternated, {XFS}")
        return 0
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
    print(f"{design(str(args.clients))}, {args.pairs} ABBA pairs per script, {XFS}")
    return 0
