"""Simulate `repetitions: auto` deciding which stack to use, and check its intervals.

Each simulated experiment is one advice group: a leader and configurations whose true means are lower
by 0%, 2%, 5% and 15%. A trial's headline is drawn with the noise structure measured here: a
trial-to-trial (between) component, log-normal, and the mean of T per-second samples with a
second-to-second (within) component (analysis/variance.py; defaults from a quick run on the 2-core VM:
between 9.8%, within 2.2% per second; `--fit RESULTS` fits them from stored results instead). The very
rule strata runs (analysis/racing.py over analysis/decide.py) decides after every round.

Printed:
- coverage: the share of the final reported intervals (every configuration against its group's leader)
  that hold the true ratio (target >= 0.95), under the optional stopping of the racing;
- wrong decisions: the share of decisions (better, worse, equivalent, eliminated) the truth contradicts
  (target <= 5%);
- machine time of auto against the fixed design that reaches the same decisions (target <= 1/3). A fixed
  design gives every configuration the same number of repetitions n, chosen before it sees any data; for
  each experiment, the smallest n whose plain 95% intervals over the same draws reach every decision
  auto reached is that experiment's oracle n. The fixed design that reaches auto's decisions in 90% of
  the experiments needs the 90th percentile of the oracle n: that is the comparison. The oracle itself
  (a fixed design told the answer in advance) is printed beside it.

Usage: python bench/decisions_sim.py [--experiments 1000] [--fit RESULTS] [--tiny]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import tiny  # noqa: E402

from strata.analysis.decide import EQUIVALENT, UNDECIDED, Design, answer  # noqa: E402
from strata.analysis.racing import ELIMINATED, race  # noqa: E402
from strata.analysis.stats import summarize  # noqa: E402

DIFFS = (0.0, 0.0, 0.02, 0.05, 0.15)  # the leader, then each configuration's true shortfall
FIXED_CAP = 400  # repetitions beyond which the fixed design counts as never reaching the decisions


def trial(mu: float, between: float, within: float, seconds: float, rng: random.Random) -> float:
    level = mu * math.exp(rng.gauss(0, between) - between**2 / 2)
    return level * (1 + rng.gauss(0, within / math.sqrt(seconds)))


def experiment(args, rng: random.Random) -> dict:
    mus = [1.0 - d for d in DIFFS]
    keys = [f"c{i}" for i in range(len(mus))]
    streams = {
        k: [trial(mu, args.between, args.within, args.seconds, rng) for _ in range(FIXED_CAP)]
        for k, mu in zip(keys, mus)
    }
    design = Design(args.min, args.max)
    n = {k: args.min for k in keys}
    stopped: dict[str, str] = {}
    while True:
        group = {k: summarize(streams[k][: n[k]], design.alpha()) for k in keys}
        for k, why in race(group, args.margin, design, stopped).items():
            stopped.setdefault(k, why)
        going = [k for k in keys if k not in stopped and n[k] < args.max]
        if not going:
            break
        for k in going:
            n[k] += 1
    final = {k: summarize(streams[k][: n[k]], design.alpha()) for k in keys}
    leader = max(keys, key=lambda k: final[k].mean)
    truth = dict(zip(keys, mus))
    out = {"covered": 0, "intervals": 0, "decisions": 0, "wrong": 0, "trials": sum(n.values())}
    decided = {}
    for k in keys:
        if k == leader:
            continue
        a = answer(final[leader], final[k], args.margin)
        true_ratio = truth[k] / truth[leader]
        out["intervals"] += 1
        out["covered"] += a.low <= true_ratio <= a.high
        if a.outcome != UNDECIDED:
            decided[k] = a.outcome
            out["decisions"] += 1
            out["wrong"] += wrong(a.outcome, stopped.get(k) == ELIMINATED, true_ratio, args.margin)
    out["fixed_n"] = fixed_n(streams, keys, decided, args.margin, args.min)
    out["precision_rule"] = sum(precision_n(streams[k], args) for k in keys)
    return out


def precision_n(stream: list, args) -> int:
    """Repetitions under strata's previous `auto` rule: each configuration on its own, until the 95%
    interval of its mean is within 5% of it, or max_repetitions."""
    for n in range(args.min, args.max):
        s = summarize(stream[:n])
        if s.half_width / s.mean <= 0.05:
            return n
    return args.max


def wrong(outcome: str, eliminated: bool, true_ratio: float, margin: float) -> bool:
    edge = math.log(1 + margin)
    if outcome == EQUIVALENT:
        return abs(math.log(true_ratio)) > edge
    if eliminated and true_ratio >= 1 / (1 + margin):
        return True
    return (outcome == "worse") != (true_ratio < 1)


def fixed_n(streams: dict, keys: list, decided: dict, margin: float, first: int) -> int:
    """The smallest common n whose one-look intervals reach every decision auto reached."""
    if not decided:
        return first
    for n in range(2, FIXED_CAP + 1):
        group = {k: summarize(streams[k][:n]) for k in keys}
        leader = max(keys, key=lambda k: group[k].mean)
        if all(k != leader and answer(group[leader], group[k], margin).outcome == o for k, o in decided.items()):
            return n
    return FIXED_CAP


def fit(results_dir: str) -> tuple[float, float, float]:
    """(between, within, seconds): the medians over the stored configurations' variance components."""
    from strata.analysis.cells import build_cells
    from strata.analysis.variance import of_cells
    from strata.results.store import load_results

    comps = list(of_cells(build_cells(load_results(results_dir), judge_steady=False)).values())
    if not comps:
        raise SystemExit(f"--fit {results_dir}: no configuration with 2 or more trials and per-second series")

    def median(xs):
        return sorted(xs)[len(xs) // 2]

    return (
        median([c.between_cv for c in comps]),
        median([c.within_cv for c in comps]),
        median([c.seconds for c in comps]),
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiments", type=int, default=1000)
    p.add_argument("--between", type=float, default=0.098, help="trial-to-trial CV")
    p.add_argument("--within", type=float, default=0.022, help="second-to-second CV within a trial")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per trial")
    p.add_argument("--margin", type=float, default=0.05)
    p.add_argument("--min", type=int, default=3)
    p.add_argument("--max", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fit", metavar="RESULTS", help="fit the noise to these stored results")
    tiny.add(p)
    args = p.parse_args()
    tiny.apply(args, experiments=20)
    if args.fit:
        args.between, args.within, args.seconds = fit(args.fit)
    rng = random.Random(args.seed)
    t0 = time.time()
    tot = {"covered": 0, "intervals": 0, "decisions": 0, "wrong": 0, "trials": 0, "fixed": 0, "precision_rule": 0}
    oracle = []
    for _ in range(args.experiments):
        e = experiment(args, rng)
        for k in ("covered", "intervals", "decisions", "wrong", "trials", "precision_rule"):
            tot[k] += e[k]
        tot["fixed"] += e["fixed_n"] * len(DIFFS)
        oracle.append(e["fixed_n"])
    cov = tot["covered"] / tot["intervals"]
    wrong_share = tot["wrong"] / tot["decisions"] if tot["decisions"] else 0.0
    n90 = sorted(oracle)[min(len(oracle) - 1, math.ceil(0.9 * len(oracle)) - 1)]
    ratio = tot["trials"] / (n90 * len(DIFFS) * args.experiments)
    ratio_oracle = tot["trials"] / tot["fixed"]
    print(
        f"decisions_sim: {args.experiments} experiments, true shortfalls {DIFFS}, between {args.between:.1%}, "
        f"within {args.within:.1%}/s, {args.seconds:g} s trials, margin {args.margin:.0%}, "
        f"repetitions {args.min}..{args.max} ({time.time() - t0:.1f} s)"
    )
    print(f"coverage of the reported intervals: {cov:.3f} (target >= 0.95)")
    print(f"decisions: {tot['decisions']} of {tot['intervals']}; wrong: {wrong_share:.2%} (target <= 5%)")
    print(
        f"machine time auto / fixed design reaching the same decisions in 90% of experiments (n={n90}): "
        f"{ratio:.2f} (target <= 0.33); / the oracle fixed design: {ratio_oracle:.2f}; auto's mean repetitions "
        f"per configuration: {tot['trials'] / args.experiments / len(DIFFS):.1f}"
    )
    print(
        f"machine time auto / the previous auto rule (precision 5% per configuration): "
        f"{tot['trials'] / tot['precision_rule']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
