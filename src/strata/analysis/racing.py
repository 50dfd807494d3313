"""Racing: which configurations of a group still need repetitions, after each round of `repetitions: auto`.

A group is the set of stacks the advice compares (same workload, load and device: analysis/query.py
`by_context`). Its leader is the one with the highest mean; every other configuration is compared with
the leader (analysis/decide.py, intervals valid under this optional stopping). A configuration stops
when its comparison is decided:

- `eliminated`: worse than the leader by more than the margin (the whole interval below 1/(1+m)), so
  no further round can make it the answer (racing, as in F-Race: Birattari et al., GECCO 2002, with
  the anytime-valid intervals of decide.py instead of a rank test);
- `equivalent`: within +-margin of the leader;
- `decided`: better or worse, but not beyond the margin; the leader, once every comparison it takes
  part in is decided;
- `undecidable`: from the second look on, at the observed means and spread, not even `max_repetitions`
  would decide it (decide.repetitions_for): a 1% difference on a machine with 10% trial-to-trial noise. It stops with
  what it can say, the smallest margin its interval supports, rather than spend rounds that cannot
  change the answer. Stopping never harms the intervals' validity; only their width.

Pure: summaries in, reasons out, so bench/decisions_sim.py runs the very rule strata runs.
"""

from __future__ import annotations

from strata.analysis.decide import BETTER, EQUIVALENT, WORSE, Design, answer, repetitions_for
from strata.analysis.stats import Summary

DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE = "decided", "eliminated", "equivalent", "undecidable"


def race(group: dict[str, Summary], margin: float, design: Design, stopped: dict | None = None) -> dict[str, str]:
    """The configurations of one group that may stop now, with why; those absent go on. A comparison with
    a configuration that already stopped stays decided (its decision was made at a valid look). A group of
    one compares nothing: the caller decides by its own rule."""
    stopped = stopped or {}
    ready = {k: s for k, s in group.items() if s.n >= 2 and s.mean > 0}
    if len(group) < 2 or len(ready) < len(group):
        return {}
    leader = max(ready, key=lambda k: ready[k].mean)
    out: dict[str, str] = {}
    for k, s in ready.items():
        if k == leader or k in stopped:
            continue
        a = answer(ready[leader], s, margin)
        if a.outcome == WORSE and a.beyond_margin:
            out[k] = ELIMINATED
        elif a.outcome == EQUIVALENT:
            out[k] = EQUIVALENT_STOP
        elif a.outcome in (BETTER, WORSE):
            out[k] = DECIDED
        elif design.sequential and min(s.n, ready[leader].n) > design.first:
            # from the second look on: a spread from the first look's few trials is too rough to give up on
            need = repetitions_for(ready[leader], s, margin)
            if need is None or need > design.last:
                out[k] = UNDECIDABLE
    ends = {k: why for k, why in {**stopped, **out}.items() if k in ready and k != leader}
    if len(ends) == len(ready) - 1:
        out[leader] = UNDECIDABLE if UNDECIDABLE in ends.values() else DECIDED
    return out
