"""Whether an interval decides a criterion, and about how many repetitions would decide what it does not.

Both kinds of decision ask it: a finding's criterion on one quantity (`decides`: the whole 95% interval on
one side of a bound, findings/verdict.py) and a pair's answer at its margin of equivalence (`repetitions_for`:
answer.py). With one repetition there is no interval, so nothing is decided. The number of repetitions that
would decide is read from the observed spread, the half-width shrinking as 1/sqrt(n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from strata.analysis.decisions.answer import Answer
from strata.analysis.decisions.stats import fewest_repetitions, t_two_sided

MAX_USEFUL_REPETITIONS = 200  # beyond this, "add repetitions" is no advice


def need_repetitions(estimate: float, low: float, high: float, bound: float, n: int, log: bool) -> str:
    """About how many repetitions would make the interval clear `bound`, at the observed spread."""
    f = math.log if log else (lambda x: x)
    if log and min(estimate, low, high, bound) <= 0:
        return "needs more repetitions"
    distance = abs(f(estimate) - f(bound))
    half = max(f(estimate) - f(low), f(high) - f(estimate))
    if distance == 0 or half == 0:
        return "the estimate sits on the criterion: no number of repetitions decides it"
    n_needed = math.ceil(n * (half / distance) ** 2)
    if n_needed > MAX_USEFUL_REPETITIONS:
        return f"too close to the criterion to decide with repetitions ({n_needed} would be needed)"
    return f"needs about {max(n_needed, n + 1)} repetitions at the observed spread (now {n})"


@dataclass(frozen=True)
class Bound:
    """One side of a criterion, as its text prints it: `op` is ">", ">=", "<" or "<=". A strict bound ("<",
    ">", "above", "below") is not met by an interval that touches it; an inclusive one (">=", "<=", "within",
    "N to M") is."""

    op: Literal[">", ">=", "<", "<="]
    value: float

    def holds(self, x: float) -> bool:
        return {">": x > self.value, ">=": x >= self.value, "<": x < self.value, "<=": x <= self.value}[self.op]


def above(x: float) -> Bound:
    return Bound(">", x)


def at_least(x: float) -> Bound:
    return Bound(">=", x)


def below(x: float) -> Bound:
    return Bound("<", x)


def at_most(x: float) -> Bound:
    return Bound("<=", x)


def decides(
    estimate: float,
    low: float | None,
    high: float | None,
    n: int,
    lo: Bound | None = None,
    hi: Bound | None = None,
    log: bool = False,
) -> tuple[bool | None, str]:
    """Is the criterion (`lo`: a lower bound, ">" or ">="; `hi`: an upper one, "<" or "<="; either may be
    absent) held over the whole interval? True, False, or None with what would decide it. A bound says whether
    it is strict, as the criterion's text does, so that "< 1%" is not held by an interval reaching 1.00%."""
    if lo is not None and lo.op not in (">", ">=") or hi is not None and hi.op not in ("<", "<="):
        raise ValueError(f"a lower bound is > or >=, an upper one < or <=: {lo}, {hi}")
    if low is None or high is None or n < 2:
        return None, "no interval: needs 2 or more repetitions of each side (3 recommended)"
    if (lo is None or lo.holds(low)) and (hi is None or hi.holds(high)):
        return True, ""
    if (lo is not None and not lo.holds(high)) or (hi is not None and not hi.holds(low)):
        return False, ""
    # undecided: the bound the interval straddles
    bound = lo if lo is not None and not lo.holds(low) else hi
    if bound is None:  # not reached: an interval that neither holds nor fails a criterion straddles a bound
        return None, ""
    return None, need_repetitions(estimate, low, high, bound.value, n, log)


def repetitions_for(ans: Answer, alpha: float | None = None, cap: int = 10_000) -> int | None:
    """About how many repetitions of each side would decide the comparison at its estimate and spread, at
    two-sided `alpha` (default: its own): the half-width shrinks as 1/sqrt(n), its degrees of freedom grow with
    n. None when no number up to `cap` would (the estimate sits on the margin's edge and the spread is large)."""
    if not ans.known or not ans.se or not ans.n_eff or not ans.ratio > 0:
        return None
    d = abs(math.log(ans.ratio))
    # decided once the half-width is below either distance: to 1 (a difference) or, from inside, to the
    # margin's edge (equivalence)
    room = max(math.log(1 + ans.margin) - d, d)
    a = ans.alpha if alpha is None else alpha
    n0, df0, se = ans.n_eff, ans.df or ans.n_eff - 1, ans.se

    def half(n: int) -> float:
        df = df0 * (n - 1) / (n0 - 1) if n0 > 1 else n - 1
        return t_two_sided(a, max(df, 1.0)) * se * math.sqrt(n0 / n)

    return fewest_repetitions(half, room, n0, cap)
