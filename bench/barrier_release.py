"""The start barrier's cost and precision: N waiters in sh held at a `go` file, as the container wrapper and
fio's hold wait. Before: a poll every 5 ms, the start when each saw the file. Now (core/release.py): a poll
every POLL_S, then a sleep until the start the file names. Prints, for each, the host's busy share while the
waiters are held (what slows the instances still preparing) and the spread of their starts after the
release, then the ratios now / before. The baseline is the loop strata shipped before, unchanged."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tiny

from strata.core import release

OLD = "while [ ! -e {go} ]; do sleep 0.005; done\n"
MAX_WAITERS = 256
MIN_SECONDS, MAX_SECONDS = 0.5, 60.0


def _busy_share(seconds: float) -> float:
    def sample() -> tuple[int, int]:
        f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return sum(f) - f[3] - f[4], sum(f)  # all but idle and iowait

    a = sample()
    time.sleep(seconds)
    b = sample()
    return (b[0] - a[0]) / max(1, b[1] - a[1])


def measure(wait: str, waiters: int, seconds: float, new: bool) -> tuple[float, float]:
    """(busy share while held, spread of the starts in s) for `waiters` sh loops running `wait`."""
    with tempfile.TemporaryDirectory(prefix="strata-barrier-") as d:
        go = Path(d) / "go"
        script = wait.format(go=go) + "date +%s.%N\n"
        procs = [subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(waiters)]
        try:
            time.sleep(0.5)  # all polling
            busy = _busy_share(seconds)
            if new:
                release.release(Path(d))
            else:
                go.touch()
            starts = [float(p.communicate(timeout=120)[0]) for p in procs]
        finally:
            for p in procs:
                p.kill()
    return busy, max(starts) - min(starts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--waiters", type=int, default=32, help=f"sh loops held at once (1..{MAX_WAITERS}; default 32)")
    ap.add_argument("--seconds", type=float, default=5.0, help="how long the busy share is sampled (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each (1..20; default 3)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, waiters=4, seconds=0.5, rounds=1)
    if (
        not 1 <= args.waiters <= MAX_WAITERS
        or not MIN_SECONDS <= args.seconds <= MAX_SECONDS
        or not 1 <= args.rounds <= 20
    ):
        sys.exit(f"--waiters 1..{MAX_WAITERS}, --seconds {MIN_SECONDS}..{MAX_SECONDS}, --rounds 1..20")
    idle = _busy_share(1.0)
    old: list[tuple[float, float]] = []
    new: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        old.append(measure(OLD, args.waiters, args.seconds, new=False))
        new.append(measure(release.wait_sh("{go}"), args.waiters, args.seconds, new=True))
    print(f"{args.waiters} waiters, {args.rounds} round(s); host busy share before any: {idle:.2f}")
    for name, runs in (
        ("before: poll 5 ms", old),
        (f"now: poll {release.POLL_S * 1000:.0f} ms, lead {release.LEAD_S * 1000:.0f} ms", new),
    ):
        busy = sum(b for b, _ in runs) / len(runs)
        spread = max(s for _, s in runs)
        print(f"{name}: host busy {busy:.2f} while held, starts spread {spread * 1000:.1f} ms (worst round)")
    ob, nb = (sum(b for b, _ in r) / len(r) for r in (old, new))
    os_, ns = (max(s for _, s in r) for r in (old, new))
    busy_ratio = nb / ob if ob else float("nan")
    spread_ratio = ns / os_ if os_ else float("nan")
    print(f"busy now / before: {busy_ratio:.2f}; spread now / before: {spread_ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
