"""The supported margin of each advice group against an oracle's, on a run's own trials.

For every advice group of a stored run (the stacks compared for one workload, load and device), this
prints the margin strata's advice supports ("equivalent within +-X%") beside the one an oracle would
support from the same trials at the same simultaneous level: an oracle who knows each stack's variance
(taken to be its sample variance) and so uses the normal quantile, without pooling, pretests or degrees
of freedom. Their ratio is the price of not knowing the variances; the oracle's own margin is what the
machine's noise forces at that number of repetitions. Last, the repetitions per stack at which the
oracle's margin would reach --target (the gaps and spreads held at today's estimates, at the level of
a fixed design: the error divided among the group's comparisons with the best), which says whether a
target is out of reach of any procedure at this noise or only of this one.

    python3 bench/oracle_margin.py RESULTS [--target 20%]
    python3 bench/oracle_margin.py --tiny   (on a few synthetic trials: checks that it runs)
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
from pathlib import Path
from statistics import NormalDist

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from strata.analysis.analyse import describe  # noqa: E402
from strata.analysis.decide import ALPHA  # noqa: E402
from strata.analysis.groups import Runs, compare  # noqa: E402
from strata.analysis.query import by_context  # noqa: E402
from strata.analysis.stats import summarize  # noqa: E402
from strata.results.store import load_results  # noqa: E402

MAX_PROJECTED = 1000  # repetitions per stack; beyond this the projection says "over 1000"


def oracle_margin(runs: dict[str, Runs], leader: str, level: float, n: int | None = None) -> float:
    """The largest far end, over the stacks, of the leader's interval against each with known variances
    (the sample ones) at two-sided `level`: the margin it supports. `n`: as if each had n repetitions."""
    z = NormalDist().inv_cdf(1 - level / 2)
    lead = runs[leader]
    far = 0.0
    for k, r in runs.items():
        if k == leader:
            continue
        n_l, n_k = (n, n) if n else (lead.n, r.n)
        se = math.sqrt(_cv2(lead) / n_l + _cv2(r) / n_k)
        log_ratio = math.log(r.mean / lead.mean)
        far = max(far, math.exp(-(log_ratio - z * se)) - 1, math.exp(log_ratio + z * se) - 1)
    return far


def _cv2(r: Runs) -> float:
    cv = summarize(list(r.values)).cv
    return (cv or 0.0) ** 2


def needed(runs: dict[str, Runs], leader: str, level: float, target: float) -> int | None:
    """The fewest repetitions per stack at which the oracle's margin reaches `target` (None: no number
    does, a gap at least as large as the target)."""
    for n in range(2, MAX_PROJECTED + 1):
        if oracle_margin(runs, leader, level, n) <= target:
            return n
    return None


def _percent(text: str) -> float | None:
    """'20%' or '0.2' -> 0.2; None unless a positive margin of at most 1000%."""
    try:
        v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return None
    return v if 0 < v <= 10 else None


def synthetic(out: Path, repetitions: int = 3) -> None:
    """A small run: four stacks of one advice group, `repetitions` interleaved rounds, 10% noise."""
    from synth_results import _write, make_result

    rnd = random.Random(1)
    stacks = [
        ("xfs", "native", None, "bind"),
        ("ext4", "native", None, "bind"),
        ("xfs", "docker", "overlay2", "volume"),
    ]
    for rep in range(repetitions):
        for (fs, rt, drv, path), mean in zip(stacks, (1000.0, 950.0, 900.0)):
            r = make_result(fs, rt, drv, path, rep=rep, value=mean * rnd.lognormvariate(0, 0.1))
            _write(out, r, rnd)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, nargs="?", help="a results directory of `strata run`")
    p.add_argument("--target", default="20%", help="the margin a line should reach (default 20%%)")
    tiny.add(p)
    args = p.parse_args()
    if tiny.apply(args, repetitions=3):
        with tempfile.TemporaryDirectory(prefix="strata-oracle-") as d:
            synthetic(Path(d))
            args.results = Path(d)
            return report(args)
    if args.results is None:
        print("error: give a results directory of `strata run` (or --tiny)")
        return 2
    return report(args)


def report(args: argparse.Namespace) -> int:
    target = _percent(args.target)
    if target is None:
        print(f"error: --target {args.target!r} is not a margin: give a percentage above 0%, e.g. 20%")
        return 2
    try:
        results = load_results(args.results)
    except ValueError as e:  # a stored result this strata cannot read
        print(f"error: {e}")
        return 2
    if not results:
        print(f"error: no stored trials under {args.results}: give a results directory of `strata run`")
        return 2
    cells = describe(results, judge_steady=False).cells
    groups = by_context([c for c in cells if c.values and not c.is_raw and not c.emulated]).values()
    print(
        f"{'group':<28} {'n':>3} {'method':<16} {'level':>7} {'strata':>8} {'oracle':>8} {'ratio':>6}"
        f"  oracle n for {target:.0%}"
    )
    for group in groups:
        runs = {c.key: c.runs for c in group if c.runs.n >= 2}
        if len(runs) < 2:
            continue
        top = group[0]
        cmp = compare(runs, top.margin, top.design)
        assert cmp.leader is not None  # two or more stacks with two or more trials
        sup = max((a.supported for a in cmp.answers.values() if a.supported is not None), default=math.nan)
        orc = oracle_margin(runs, cmp.leader, cmp.level)
        need = needed(runs, cmp.leader, ALPHA / cmp.pairs, target)
        name = f"{top.labels['workload']} {top.labels['load']} on {top.labels['device']}"
        n = max(r.n for r in runs.values())
        print(
            f"{name:<28} {n:>3} {cmp.method:<16} {cmp.level:>7.4f} {sup:>8.0%} {orc:>8.0%} {sup / orc:>6.2f}  "
            + (f"{need}" if need else f"over {MAX_PROJECTED} (a gap near or beyond the target)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
