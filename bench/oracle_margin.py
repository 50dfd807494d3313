"""The margin each advice line supports, by the rule strata runs, the rule before issue 41 and a blocked oracle,
on a run's own stored trials.

For every advice group of one or more stored runs (the stacks compared for one workload, load and device),
this prints the margin the line supports: every stack not decided worse, the leader included, lies within it
of the best ("the best is one of A, B, each within +-X% of it"), by

- `new`: the rule strata runs (analysis/decisions/groups.py: the rounds as blocks, one-sided comparisons with the best);
- `old`: the rule before issue 41 (bench/old_rule.py: two-sided intervals at alpha / (G - 1), a pretest on
  the rounds), its "equivalent within +-X%";
- `pooled`: the rule strata runs with one residual variance for every stack, whatever Cochran's test says
  (valid only where the stacks' spreads agree: with one stack of 16 times the variance it errs in 7-9% of
  the groups, bench/decisions_sim.py; so not a bound on what a valid rule can give, only a reference);
- `oracle`: a blocked oracle on the same fit and the same trials: each stack's residual variance after the
  round effects taken as known (its own residual sum of squares over its share of the degrees of freedom: a
  plug-in, so a yardstick, not a lower bound), the normal's critical values at the same one-sided level,
  read the same way (the stacks that may be the best, each stack's bound).

Every rule is priced at one look, the whole 5% spent on the trials stored (the old rule as a fixed design,
not as one look of its 3..6 plan, which spent only part of it there), so that new / old measures the rule
and not the look plan. Then new / old, pooled / old and new / oracle per group, each batch's median over its
groups with a bootstrap 95% interval (the groups resampled: a median of 28 groups moves by 0.06-0.09 from
batch to batch, so a single figure is no verdict), oracle / old's, and the repetitions per stack at which the
oracle's line would reach --target (the estimates and spreads held at today's, the stacks it then decides
worse left out, at the level of a fixed design).

    python3 bench/oracle_margin.py RESULTS [RESULTS ...] [--target 20%]
    python3 bench/oracle_margin.py --tiny   (on a few synthetic trials: checks that it runs)
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
from pathlib import Path

import tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import old_rule  # noqa: E402

from strata.analysis.analyse import describe  # noqa: E402
from strata.analysis.cells.query import by_context  # noqa: E402
from strata.analysis.decisions.answer import ALPHA, FIXED, WORSE  # noqa: E402
from strata.analysis.decisions.groups import Comparisons, Runs, compare  # noqa: E402
from strata.analysis.decisions.stats import dunnett_one_sided  # noqa: E402
from strata.results.store import load_results  # noqa: E402

MAX_PROJECTED = 1000  # repetitions per stack; beyond this the projection says "over 1000"


def line_margin(cmp: Comparisons) -> float:
    """The margin a line of the rule strata runs supports: every stack not decided worse, and the leader,
    within it of the best."""
    answers = [a for a in cmp.answers.values() if a.outcome != WORSE] + ([cmp.own] if cmp.own else [])
    return max((1 / a.low - 1 for a in answers if a.low), default=math.nan)


def old_margin(cmp: old_rule.Comparisons) -> float:
    """The old rule's line: the largest supported margin of the stacks not decided worse."""
    vals = [a.supported for a in cmp.answers.values() if a.outcome != old_rule.WORSE and a.supported is not None]
    return max(vals, default=0.0)


def oracle_line(effects: dict[str, float], var: dict[str, float], n: dict[str, float], alpha: float) -> float:
    """The blocked oracle's line margin: constrained multiple comparisons with the best (as decisions/groups.py)
    with each stack's per-trial variance known, the normal's one-sided critical values at `alpha`, each stack
    at n[k] repetitions."""
    keys = list(effects)
    if len(keys) < 2:
        return math.nan

    def se(a: str, b: str) -> float:
        return math.sqrt(var[a] / n[a] + var[b] / n[b])

    crit = {}
    for i in keys:
        lam = tuple(math.sqrt((var[i] / n[i]) / (se(i, j) ** 2)) if se(i, j) > 0 else 0.0 for j in keys if j != i)
        crit[i] = dunnett_one_sided(lam, 0, alpha)
    upper = {k: min(effects[k] - effects[j] + crit[k] * se(k, j) for j in keys if j != k) for k in keys}
    best = [k for k in keys if upper[k] > 0]
    far = 0.0
    for k in keys:
        if k not in best and len(best) >= 1:
            continue  # decided worse: not in the line's margin
        against = [effects[k] - effects[j] - crit[j] * se(k, j) for j in best if j != k]
        low = min(0.0, min(against)) if against else 0.0
        far = max(far, math.exp(-low) - 1)
    return far


def oracle_of(runs: dict[str, Runs], cmp: Comparisons) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """The fit's estimates, each stack's plug-in residual variance, its repetitions."""
    fit = cmp.fit
    assert fit is not None  # two or more stacks with two or more trials
    share = fit.share
    ss = fit.sigma2 * share if not fit.alike else None
    var = {}
    for i, k in enumerate(fit.keys):
        if ss is not None:
            var[k] = float(fit.sigma2[i])
        else:  # pooled: each stack's own residual spread
            var[k] = float(fit.stack_ss[i] / max(share[i], 1e-9))
    return dict(fit.effect), var, {k: float(runs[k].n) for k in fit.keys}


def needed(effects: dict[str, float], var: dict[str, float], target: float) -> int | None:
    """The fewest repetitions per stack at which the oracle's line reaches `target` at a fixed design's level
    (None: no number does, a gap at least as large as the target)."""
    for n in range(2, MAX_PROJECTED + 1):
        if oracle_line(effects, var, {k: float(n) for k in effects}, ALPHA) <= target:
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
    """A small run: three stacks of one advice group, `repetitions` rounds, 10% noise."""
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
    p.add_argument("results", type=Path, nargs="*", help="results directories of `strata run`")
    p.add_argument("--target", default="20%", help="the margin a line should reach (default 20%%)")
    tiny.add(p)
    args = p.parse_args()
    if tiny.apply(args, repetitions=3):
        with tempfile.TemporaryDirectory(prefix="strata-oracle-") as d:
            synthetic(Path(d))
            args.results = [Path(d)]
            return report(args)
    if not args.results:
        print("error: give a results directory of `strata run` (or --tiny)")
        return 2
    return report(args)


def report(args: argparse.Namespace) -> int:
    target = _percent(args.target)
    if target is None:
        print(f"error: --target {args.target!r} is not a margin: give a percentage above 0%, e.g. 20%")
        return 2
    print(
        f"{'run':<10} {'group':<24} {'n':>3} {'method':<19} {'level':>6} {'old':>7} {'new':>7} {'new/old':>7} "
        f"{'pooled/old':>10} {'oracle':>7} {'new/oracle':>10}  oracle n for {target:.0%}"
    )
    vs_old, pooled_old, oracle_old, vs_oracle = [], [], [], []
    for path in args.results:
        try:
            results = load_results(path)
        except ValueError as e:  # a stored result this strata cannot read
            print(f"error: {e}")
            return 2
        if not results:
            print(f"error: no stored trials under {path}: give a results directory of `strata run`")
            return 2
        cells = describe(results, judge_steady=False).cells
        for group in by_context([c for c in cells if c.values and not c.is_raw and not c.emulated]).values():
            runs = {c.key: c.runs for c in group if c.runs.n >= 2}
            if len(runs) < 2:
                continue
            top = group[0]
            cmp = compare(runs, top.margin, FIXED)  # one look, as the old rule's below
            if cmp.fit is None:
                continue
            old = old_rule.compare_old(runs, top.margin, old_rule.FIXED)
            new_m, old_m = line_margin(cmp), old_margin(old)
            pooled_m = line_margin(compare(runs, top.margin, FIXED, one_variance=True))
            effects, var, n = oracle_of(runs, cmp)
            orc = oracle_line(effects, var, n, cmp.level)
            need = needed(effects, var, target)
            name = f"{top.labels['workload']} {top.labels['load']} on {top.labels['device']}"
            ratio_old = new_m / old_m if old_m > 0 else math.nan
            ratio_orc = new_m / orc if orc > 0 else math.nan
            ratio_pooled = pooled_m / old_m if old_m > 0 else math.nan
            vs_old.append(ratio_old)
            pooled_old.append(ratio_pooled)
            oracle_old.append(orc / old_m if old_m > 0 else math.nan)
            vs_oracle.append(ratio_orc)
            print(
                f"{path.name[:10]:<10} {name:<24} {max(n.values()):>3.0f} {cmp.method:<19} {cmp.level:>6.4f} "
                f"{old_m:>7.0%} {new_m:>7.0%} {ratio_old:>7.2f} {ratio_pooled:>10.2f} {orc:>7.0%} {ratio_orc:>10.2f}  "
                + (f"{need}" if need else f"over {MAX_PROJECTED} (a gap near or beyond the target)")
            )
    print(f"groups: {len(vs_old)}, every rule at one look; medians with bootstrap 95% intervals:")
    for name, xs in (("new / old", vs_old), ("pooled / old", pooled_old), ("oracle / old", oracle_old)):
        print(f"  median {name}: {_interval(xs)}")
    print(f"  median new / oracle: {_interval(vs_oracle)}")
    return 0


BOOTSTRAP = 2000  # resamples of the groups


def _interval(xs: list[float], seed: int = 3) -> str:
    """The median of per-group ratios and its bootstrap 95% percentile interval."""
    xs = [x for x in xs if x == x]
    if not xs:
        return "nan"
    rnd = random.Random(seed)
    meds = sorted(_median([rnd.choice(xs) for _ in xs]) for _ in range(BOOTSTRAP))
    return f"{_median(xs):.2f} [{meds[int(0.025 * BOOTSTRAP)]:.2f}, {meds[int(0.975 * BOOTSTRAP) - 1]:.2f}]"


def _median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return math.nan
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


if __name__ == "__main__":
    sys.exit(main())
