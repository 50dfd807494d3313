"""Racing: which configurations of a group still need repetitions, at each planned look of `repetitions: auto`.

A group is the set of stacks the advice compares (same workload, load and device: analysis/query.py
`by_context`). Its leader is the one with the highest mean; every other configuration is compared with
the leader (analysis/groups.py, at the level analysis/decide.py `Design.level` leaves to one pair at this
look, so the intervals stay valid under this optional stopping). A configuration stops when its comparison
is decided:

- `eliminated`: worse than the leader by more than the margin (the whole interval below 1/(1+m)), so
  no further round can make it the answer (racing, as in F-Race: Birattari et al., GECCO 2002, with
  the intervals of groups.py instead of a rank test);
- `equivalent`: within +-margin of the leader;
- `decided`: better or worse, but not beyond the margin; the leader, once every comparison it takes
  part in is decided;
- `undecidable`: the comparison is unlikely to be decided even at `max_repetitions`. Its answer will be
  read against the stacks that may still be the best then (today's candidates, less those the leader would
  leave behind by then at today's estimates); for each such pair, the predictive probability that its
  interval then lies beyond 1 or within the margin, averaged over what the gap may be given the data so
  far (a flat prior on the log ratio: the predictive power of Spiegelhalter, Freedman & Blackburn,
  Controlled Clinical Trials 7, 1986). Below FUTILE_BELOW (10%) for any of them, it stops, from the first
  look on: a 1% difference on a machine with 10% trial-to-trial noise stops there; a gap whose estimate is
  still rough goes on. It stops with what it can say, the smallest margin its interval supports. Stopping
  never harms the intervals' validity; only their width.

A configuration with fewer than 2 successful trials has no interval yet: it goes on, and the others are
raced without it (it never holds its group back). Pure: trials in, reasons out, so bench/decisions_sim.py
runs the very rule strata runs.
"""

from __future__ import annotations

import math

from strata.analysis.decide import BETTER, EQUIVALENT, WORSE, Answer, Design
from strata.analysis.groups import BLOCKED, PAIRED, Comparisons, Runs, compare
from strata.analysis.stats import t_two_sided

DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE = "decided", "eliminated", "equivalent", "undecidable"
FUTILE_BELOW = 0.10  # a predictive probability of a decision by max_repetitions below this: stop


def race(
    group: dict[str, Runs], margin: float, design: Design, stopped: dict[str, str] | None = None
) -> dict[str, str]:
    """The configurations of one group that may stop now, with why; those absent go on. A comparison with
    a configuration that already stopped stays decided (its decision was made at a valid look). A group of
    one compares nothing: the caller decides by its own rule."""
    stopped = stopped or {}
    if len(group) < 2:
        return {}
    cmp = compare(group, margin, design)
    leader = cmp.leader
    if leader is None or group[leader].n < 2:
        return {}
    out: dict[str, str] = {}
    for k, a in cmp.answers.items():
        if k in stopped or not a.known:
            continue
        if a.outcome == WORSE and a.beyond_margin:
            out[k] = ELIMINATED
        elif a.outcome == EQUIVALENT:
            out[k] = EQUIVALENT_STOP
        elif a.outcome in (BETTER, WORSE):
            out[k] = DECIDED
        elif design.sequential and _chance(cmp, k, design, stopped) < FUTILE_BELOW:
            out[k] = UNDECIDABLE
    raced = [k for k, a in cmp.answers.items() if a.known]
    ends = {k: why for k, why in {**stopped, **out}.items() if k in raced}
    if raced and len(ends) == len(raced) and leader not in stopped:
        out[leader] = UNDECIDABLE if UNDECIDABLE in ends.values() else DECIDED
    return out


def _chance(cmp: Comparisons, k: str, design: Design, stopped: dict[str, str]) -> float:
    """The chance that k's answer is decided by max_repetitions. It will be read against the stacks that may
    still be the best then: today's candidates but those the leader would leave behind by then at today's
    estimates. It is at most the smallest chance of its comparisons with them."""
    leader = cmp.leader
    assert leader is not None
    going = {j: j not in stopped for j in cmp.best}
    last = [j for j in cmp.best if j != k and (j == leader or not _parts(cmp, leader, j, design, going))]
    pairs = [(j, cmp.pair(j, k)) for j in last or [leader]]
    return min(chance_to_decide(a, design, cmp.pairs, going.get(j, True)) for j, a in pairs if a is not None)


def _parts(cmp: Comparisons, leader: str, j: str, design: Design, going: dict[str, bool]) -> bool:
    """Whether j's interval against the leader would exclude 1 at max_repetitions, at today's estimate."""
    a = cmp.pair(leader, j)
    if a is None or not a.se or not a.ratio > 0:
        return False
    se_end = _se_end(a, design, going.get(leader, True))
    if se_end is None:
        return False
    df_end = (a.df or a.n_eff - 1) * (2 * a.se**2 * a.n_eff / 2 / se_end**2 - 1) / max(a.n_eff - 1, 1)
    return abs(math.log(a.ratio)) > t_two_sided(design.level(design.last, cmp.pairs), max(df_end, 1.0)) * se_end


def _se_end(a: Answer, design: Design, leader_goes: bool) -> float | None:
    """The standard error of a's log ratio at max_repetitions (the leader's own n if it stopped); None when no
    more trials come."""
    per_trial = a.se**2 * a.n_eff / 2 if a.se else 0.0  # one trial's relative variance (both sides alike)
    n_lead = design.last if leader_goes else a.n_a
    n_end = min(n_lead, design.last) if a.method in (BLOCKED, PAIRED) else 2 / (1 / n_lead + 1 / design.last)
    return math.sqrt(2 * per_trial / n_end) if n_end > a.n_eff else None


def chance_to_decide(a: Answer, design: Design, pairs: int, leader_goes: bool = True) -> float:
    """The predictive probability that pair `a` is decided (better, worse, or equivalent within its margin)
    once it reaches `max_repetitions` (the leader too, unless it stopped: then at the trials it has), at the
    level of that look: its final log ratio is normal about today's estimate with the variance the remaining
    trials add (a flat prior on the gap), its final half-width the one today's spread gives at those n."""
    if not a.known or not a.se or not a.n_eff or not a.ratio > 0:
        return 1.0
    se_end = _se_end(a, design, leader_goes)
    if se_end is None:
        return 0.0
    n_end = 2 * a.se**2 * a.n_eff / 2 / se_end**2  # the per-side n that gives se_end
    df_end = (a.df or a.n_eff - 1) * (n_end - 1) / max(a.n_eff - 1, 1)
    h = t_two_sided(design.level(design.last, pairs), max(df_end, 1.0)) * se_end
    sd = math.sqrt(max(a.se**2 - se_end**2, 1e-300))
    d, edge = math.log(a.ratio), math.log(1 + a.margin)

    def below(x: float) -> float:  # P(D < x)
        return 0.5 * math.erfc((d - x) / (sd * math.sqrt(2)))

    p = below(-h) + 1 - below(h)
    if edge > h:
        p += below(edge - h) - below(-(edge - h))
    return min(max(p, 0.0), 1.0)
