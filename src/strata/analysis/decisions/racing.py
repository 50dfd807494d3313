"""Racing: which configurations of a group still need repetitions, at each planned look of `repetitions: auto`.

A group is the set of stacks the advice compares (same workload, load and device: analysis/cells/query.py
`by_context`). At each look its stacks are compared with the best all at once (analysis/decisions/groups.py, at the
one-sided level analysis/decisions/answer.py `Design.level` leaves to that look, so the intervals stay valid under
this optional stopping). A configuration stops when its answer is decided:

- `eliminated`: not the best (decidedly below a stack that may be the best), so no further round can make
  it the answer (racing, as in F-Race: Birattari et al., GECCO 2002, with the intervals of groups.py instead
  of a rank test);
- `equivalent`: within +-margin of the best;
- `decided`: the leader, once every other stack's answer ended;
- `undecidable`: it may be the best, is not within the margin, and is unlikely to be decided by the last
  planned look: the predictive probability that its comparison with the leader then lies beyond the leader's
  critical distance (worse) or within the margin (equivalent), averaged over what the gap may be given the
  data so far (a flat prior on the log ratio: the predictive power of Spiegelhalter, Freedman & Blackburn,
  Controlled Clinical Trials 7, 1986). Below FUTILE_BELOW (10%), it stops, from the first look on: a 1%
  difference on a machine with 10% trial-to-trial noise stops there; a gap whose estimate is still rough
  goes on. Stopping never harms the intervals' validity; only their width.

A configuration with fewer than 2 successful trials has no interval yet: it goes on, and the others are
raced without it (it never holds its group back). Pure: trials in, reasons out, so bench/decisions_sim.py
runs the very rule strata runs.
"""

from __future__ import annotations

import math

from strata.analysis.decisions.answer import EQUIVALENT, WORSE, Design
from strata.analysis.decisions.groups import Comparisons, Runs, compare
from strata.analysis.decisions.stats import t_quantile

DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE = "decided", "eliminated", "equivalent", "undecidable"
FUTILE_BELOW = 0.10  # a predictive probability of a decision by the last look below this: stop


def race(
    group: dict[str, Runs], margin: float, design: Design, stopped: dict[str, str] | None = None
) -> dict[str, str]:
    """The configurations of one group that may stop now, with why; those absent go on. A configuration that
    already stopped stays decided (its decision was made at a valid look). A group of one compares nothing:
    the caller decides by its own rule."""
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
        if a.outcome == EQUIVALENT:
            out[k] = EQUIVALENT_STOP
        elif a.outcome == WORSE:
            out[k] = ELIMINATED
        elif design.sequential and chance_to_decide(cmp, k, design) < FUTILE_BELOW:
            out[k] = UNDECIDABLE
    raced = [k for k, a in cmp.answers.items() if a.known]
    ends = {k: why for k, why in {**stopped, **out}.items() if k in raced}
    if raced and len(ends) == len(raced) and leader not in stopped:
        out[leader] = UNDECIDABLE if UNDECIDABLE in ends.values() else DECIDED
    return out


def chance_to_decide(cmp: Comparisons, k: str, design: Design) -> float:
    """The predictive probability that stack k, which may be the best, is decided at the last planned look
    (both it and the leader at that many repetitions): its log ratio to the leader is then normal about
    today's estimate with the variance the remaining trials add (a flat prior on the gap), and decided beyond
    the leader's critical distance (worse) or within the margin (equivalent), the critical value at that look's
    level and degrees of freedom."""
    leader = cmp.leader
    c = cmp.pair(k, leader) if leader is not None else None  # log(leader / k)
    a = cmp.answers.get(k)
    if c is None or a is None or c.se <= 0 or not a.n_eff:
        return 1.0
    n_end = max(design.final, 2)
    if n_end <= a.n_eff:
        return 0.0
    se_end = c.se * math.sqrt(a.n_eff / n_end)
    df_end = c.df * (n_end - 1) / max(a.n_eff - 1, 1.0)
    crit_now = cmp.crit.get(k, t_quantile(1 - cmp.level, max(c.df, 1.0)))
    # the critical value at the last look: today's, moved as Student's would by the level and the df
    scale = t_quantile(1 - design.level(n_end), max(df_end, 1.0)) / t_quantile(1 - cmp.level, max(c.df, 1.0))
    h = crit_now * scale * se_end
    sd = math.sqrt(max(c.se**2 - se_end**2, 1e-300))
    d, edge = c.estimate, math.log(1 + a.margin)

    def above(x: float) -> float:  # P(D > x)
        return 0.5 * math.erfc((x - d) / (sd * math.sqrt(2)))

    if edge - h >= h:  # every outcome decides
        return 1.0
    p = above(h) + 1 - above(edge - h)  # worse (the leader ahead beyond it), or equivalent (within the margin)
    return min(max(p, 0.0), 1.0)
