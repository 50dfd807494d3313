"""What the random order within each round costs in machine time: `order: random` against `order: spec`.

strata runs each round's stacks in a random order, each stack's trials together (experiment/expand.py
`round_order`), so a stack is built once per round, as in the spec's order it had before issue 41 (raw
first, then the spec's file systems, runtimes and paths). What may differ is where the expensive builds
fall (a dockerd and its image load on a file system made anew each round) and whether a round's last stack
happens to be the next round's first (then it is not built again). The same matrix (the raw device, xfs
and ext4 natively, xfs in Docker through a volume; 4 KiB random reads at one load, on one loop device)
runs with both orders, alternated ABBA (spec, random, random, spec, ...) so that the machine's drift falls
on both. Printed: each run's machine time and its set-up time (the results' `setup_s`: building stacks,
loading images), their ratios random / spec, and the stacks built per round.

    python3 bench/order_cost.py [--pairs 2] [--reps 3] [--runtime 3] [--tiny]
(root; about 10 minutes at the defaults on a 2-core VM; --tiny: one pair of 1 s trials, 2 rounds)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchbed import strata_run, workdir  # noqa: E402

from strata.results.store import load_results  # noqa: E402


def spec(name: str, wd: str, order: str, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "name": name,
        "workdir": wd,
        "devices": [{"type": "loop", "size": "1GiB"}],
        "filesystems": ["raw", "xfs", "ext4"],
        "runtimes": ["native", "docker:overlay2"],
        "paths": ["device", "volume", "bind"],
        "exclude": [{"filesystem": "raw", "runtime": "docker:*"}, {"filesystem": "ext4", "runtime": "docker:*"}],
        "workloads": [{"fio": {"preset": "rr", "size": args.size, "runtime": args.runtime, "ramp_time": 1}}],
        "loads": ["low"],
        "repetitions": args.reps,
        "order": order,
    }


def builds(out: Path) -> tuple[float, int, int]:
    """(the run's set-up seconds, the stacks built, the rounds) from its run document and results."""
    run = json.loads(next((out / "runs").glob("*.json")).read_text())
    setup = sum(float(r.setup_s or 0.0) for r in load_results(out))
    rounds = run.get("order", {}).get("rounds") or []
    seq = [label.split(" ")[0].rsplit("/", 1)[0] for r in rounds for label in r]
    changes = sum(1 for a, b in zip([None, *seq], seq) if a != b)
    return setup, changes, len(rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2, help="ABBA pairs of runs")
    ap.add_argument("--reps", type=int, default=3, help="rounds per run")
    ap.add_argument("--runtime", type=int, default=3, help="seconds per trial")
    ap.add_argument("--size", default="128MiB", help="fio's file")
    ap.add_argument("--workdir", help="the spec's workdir (default: a new folder under /var/tmp)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, pairs=1, reps=2, runtime=1, size="16MiB")
    time = {"spec": 0.0, "random": 0.0}
    setup = {"spec": 0.0, "random": 0.0}
    stacks = {"spec": 0, "random": 0}
    rounds = {"spec": 0, "random": 0}
    with tempfile.TemporaryDirectory() as d, workdir(args.workdir, "strata-bench-order") as wd:
        for i in range(args.pairs):
            for kind in ("spec", "random") if i % 2 == 0 else ("random", "spec"):
                out = Path(d) / f"{kind}-{i}"
                t = strata_run(spec(f"order-{kind}{i}", str(wd), kind, args), out)
                s, n, r = builds(out)
                time[kind] += t
                setup[kind] += s
                stacks[kind] += n
                rounds[kind] += r
                print(f"run {i} {kind}: {t:.0f} s, set-up {s:.0f} s, {n} stacks built in {r} rounds")
    for kind in ("spec", "random"):
        print(
            f"{kind}: {time[kind] / 60:.1f} min, set-up {setup[kind]:.0f} s, "
            f"{stacks[kind] / max(rounds[kind], 1):.2f} stacks built per round"
        )
    print(f"machine time random / spec: {time['random'] / time['spec']:.2f}")
    print(f"set-up time random / spec: {setup['random'] / max(setup['spec'], 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
