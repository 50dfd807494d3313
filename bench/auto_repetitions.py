"""Time to a decided answer: `repetitions: auto` (racing, analysis/decisions/racing.py) against fixed repetitions.

The same matrix (xfs, ext4 and btrfs natively through a bind mount, 4 KiB random reads and writes at
one load, on one loop device: two advice groups of three stacks) runs through strata with a fixed
number of repetitions and with `repetitions: auto`. The runs alternate in ABBA order (fixed, auto, auto,
fixed, ...), never all of one then all of the other, so that the machine's drift falls on both. Printed:
the machine time of each, their ratio, and whether the advice of the two designs agrees (the same
leader where both decide one, and no decision of one contradicted by the other: equivalent against
decidedly apart by more than the margin).

    python3 bench/auto_repetitions.py [--reps 6] [--runtime 5] [--pairs 2] [--filesystems xfs ext4 btrfs]
        [--presets rr rw] [--tiny]
(root; about 40 minutes at the defaults on a 2-core VM; --tiny: one pair of 1 s trials on small files, xfs
and ext4, random reads only, 2 repetitions fixed and 2..3 auto, to check that it runs)
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

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.decisions.answer import EQUIVALENT  # noqa: E402
from strata.results.store import load_results  # noqa: E402


def spec(name: str, workdir: str, runtime: int, reps: int | str, args: argparse.Namespace) -> dict[str, Any]:
    doc = {
        "name": name,
        "workdir": workdir,
        "devices": [{"type": "loop", "size": "1GiB"}],
        "filesystems": args.filesystems,
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"fio": {"preset": args.presets, "size": args.size, "runtime": runtime, "ramp_time": 1}}],
        "loads": [{"name": "mid", "numjobs": 2, "iodepth": 16}],
        "repetitions": reps,
        "margin": "5%",
    }
    if reps == "auto":
        doc.update(min_repetitions=args.min_reps, max_repetitions=args.max_reps)
    return doc


def advice(out: Path) -> dict[str, Any]:
    """Per group (workload): the leader, and each other stack's outcome against it."""
    return {
        b.workload: {"leader": b.best.stack, "status": b.status, **{k: a.outcome for k, a in b.answers.items()}}
        for b in analyse(load_results(out), judge_steady=False).best
    }


def contradicts(x: dict[str, Any], y: dict[str, Any]) -> list[str]:
    """Decisions of one design that the other contradicts."""
    out = []
    for group in sorted(set(x) & set(y)):
        a, b = x[group], y[group]
        if a["status"] != "undecided" and b["status"] != "undecided" and a["leader"] != b["leader"]:
            out.append(f"{group}: leader {a['leader']} against {b['leader']}")
        for stack in sorted((set(a) & set(b)) - {"leader", "status"}):
            if {a[stack], b[stack]} == {EQUIVALENT, "worse"} and a["leader"] == b["leader"]:
                out.append(f"{group}: {stack} {a[stack]} against {b[stack]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=6, help="repetitions of the fixed design")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per trial")
    ap.add_argument("--pairs", type=int, default=2, help="ABBA pairs of runs")
    ap.add_argument("--min-reps", type=int, default=3, help="repetitions: auto: at least")
    ap.add_argument("--max-reps", type=int, default=8, help="repetitions: auto: at most")
    ap.add_argument("--size", default="128MiB", help="fio's file per job")
    ap.add_argument("--filesystems", nargs="+", default=["xfs", "ext4", "btrfs"], help="the stacks compared")
    ap.add_argument("--presets", nargs="+", default=["rr", "rw"], help="fio presets (one group each)")
    ap.add_argument("--workdir", help="the spec's workdir (default: a new folder under /var/tmp)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(
        args,
        reps=2,
        runtime=1,
        pairs=1,
        min_reps=2,
        max_reps=3,
        size="16MiB",
        filesystems=["xfs", "ext4"],
        presets=["rr"],
    )
    times = {"fixed": 0.0, "auto": 0.0}
    decided: dict[str, list[dict[str, Any]]] = {"fixed": [], "auto": []}
    trials = {"fixed": 0, "auto": 0}
    with tempfile.TemporaryDirectory() as d, workdir(args.workdir, "strata-bench-auto") as wd:
        order = [("fixed", "auto") if i % 2 == 0 else ("auto", "fixed") for i in range(args.pairs)]
        for i, kinds in enumerate(order):
            for kind in kinds:
                out = Path(d) / f"{kind}-{i}"
                reps = args.reps if kind == "fixed" else "auto"
                times[kind] += strata_run(spec(f"{kind}{i}", str(wd), args.runtime, reps, args), out)
                trials[kind] += sum(1 for r in load_results(out) if r.status == "ok")
                decided[kind].append(advice(out))
                if kind == "auto":
                    run = json.loads(next((out / "runs").glob("*.json")).read_text())
                    stops = {k: v["stopped"] for k, v in (run.get("repetitions") or {}).items()}
                    print(f"auto run {i}: why each configuration stopped: {json.dumps(stops)}")
    print(f"fixed: {args.reps} repetitions x {args.runtime} s, {args.pairs} run(s): {times['fixed'] / 60:.1f} min, "
          f"{trials['fixed']} trials")  # fmt: skip
    print(
        f"auto: margin 5%, {args.min_reps}..{args.max_reps} repetitions, {args.pairs} run(s): "
        f"{times['auto'] / 60:.1f} min, {trials['auto']} trials"
    )
    print(f"machine time auto / fixed: {times['auto'] / times['fixed']:.2f}")
    for i in range(args.pairs):
        f, a = decided["fixed"][i], decided["auto"][i]
        for group in sorted(set(f) | set(a)):
            print(f"  pair {i} {group}: fixed {f.get(group, {}).get('status')}, auto {a.get(group, {}).get('status')}")
        bad = contradicts(f, a)
        print(f"pair {i}: decisions agree: {'yes' if not bad else 'no: ' + '; '.join(bad)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
