"""Decisions between two configurations: better, worse, equivalent within a margin, or undecided.

Every comparison strata makes (the advice's best stack, `strata compare`, sweeps, the findings whose
claim is "near" or "within") asks one question of one interval: the 95% interval of the ratio of two
means (B / A), computed on the log scale by the delta method with Welch's degrees of freedom (as
stats.ratio), so it never crosses zero and is asymmetric. Then, for a quantity where higher is better:

- *equivalent within +-margin* when the whole interval lies inside [1/(1+m), 1+m]: the two one-sided
  tests (TOST, Schuirmann 1987) at 2.5% each, read from the same interval;
- *better* when the interval lies above 1, *worse* when below 1 (and the interval is not inside the
  margin: a difference that is real but smaller than the margin is equivalent, which is what a user
  choosing a stack needs to hear);
- *undecided* otherwise. An undecided comparison still says what the data support: the smallest
  margin the interval lies inside (`supported`), "no difference above 9% here".

Optional stopping and many comparisons. `repetitions: auto` looks at its intervals at a few planned numbers
of repetitions and stops what is decided; the advice compares a group's leader, chosen by the data, with
every other stack. Each interval is therefore taken at a nominal level that keeps all of them valid at once:
the error rate is spent over the planned looks (analysis/sequential.py: Lan-DeMets error spending with a
Pocock-type function) and divided among the G(G-1)/2 pairs of the group's G stacks (Bonferroni: the leader
is picked by the data, so any pair may be the one shown; Dunn, JASA 56, 1961). With probability at least
95%, every interval of every look of one group covers its true ratio. `Design.level` gives that level;
analysis/groups.py the variance behind each interval (pooled over the group, by round, or per pair).
A fixed number of repetitions is one look.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from strata.analysis.sequential import BONFERRONI, POCOCK, levels
from strata.analysis.stats import CONFIDENCE_ALPHA, Summary, t_two_sided
from strata.experiment.looks import planned_looks

ALPHA = CONFIDENCE_ALPHA
MARGIN = 0.05  # the default margin of equivalence (a spec key: `margin`)
BETTER, WORSE, EQUIVALENT, UNDECIDED = "better", "worse", "equivalent", "undecided"
WELCH = "welch"  # the interval of one pair on its own (Welch's degrees of freedom)
OUTCOMES = (BETTER, WORSE, EQUIVALENT, UNDECIDED)


@dataclass(frozen=True)
class Design:
    """How the repetitions were taken: fixed (one look), or `auto` from `first` to at most `last` per
    configuration, looking at the planned `looks`. `spending`: how the error is spread over the looks
    (POCOCK; BONFERRONI for results stored before looks were planned, which looked after every round)."""

    first: int = 0
    last: int = 0
    looks: tuple[int, ...] = ()
    spending: str = POCOCK

    @classmethod
    def auto(cls, first: int, last: int) -> Design:
        return cls(first, last, planned_looks(first, last))

    @property
    def sequential(self) -> bool:
        return self.last > self.first > 0

    def is_look(self, n: int) -> bool:
        """Whether `auto` looks once every configuration going on has n repetitions."""
        return not self.sequential or n in self.looks

    def level(self, n: int, pairs: int = 1) -> float:
        """The nominal two-sided error rate of one interval of a group whose largest configuration has `n`
        repetitions, among `pairs` pairs: the error of the look reached, divided among the pairs. A planned look
        spends what the spending function gives it; a look between planned ones (the budget ended the run) is
        the last and spends what is left; before the first planned look, the same."""
        alpha = ALPHA / max(pairs, 1)
        if not self.sequential:
            return alpha
        if self.spending == BONFERRONI:
            return alpha / len(self.looks)
        done = [k for k in self.looks if k <= n]
        final = n not in self.looks
        fractions = [k / self.last for k in done] + ([min(n, self.last) / self.last] if final else [])
        return levels(tuple(fractions), alpha, final)[-1]

    def to_json(self) -> dict[str, Any]:
        if not self.sequential:
            return {}
        return {"repetitions": "auto", "min": self.first, "max": self.last, "looks": list(self.looks)}

    @classmethod
    def of(cls, doc: dict[str, Any] | None) -> Design:
        """From a stored result's `design` (absent: fixed repetitions; without `looks`: stored before looks
        were planned, when every round was a look, each spending alpha / (max - min + 1))."""
        doc = doc or {}
        if doc.get("repetitions") != "auto":
            return cls()
        first, last = int(doc.get("min", 0)), int(doc.get("max", 0))
        if "looks" not in doc:
            return cls(first, last, tuple(range(first, last + 1)), BONFERRONI)
        return cls(first, last, tuple(int(k) for k in doc["looks"]))


FIXED = Design()


@dataclass(frozen=True)
class Answer:
    """B relative to A: the ratio of means, its interval, and what it decides at `margin`."""

    ratio: float
    low: float | None
    high: float | None
    margin: float
    n_a: int
    n_b: int
    alpha: float = ALPHA  # the nominal two-sided error rate of this interval (Design.level)
    higher_is_better: bool = True
    se: float | None = None  # the standard error of log(ratio)
    df: float | None = None  # the degrees of freedom of its t quantile
    method: str = WELCH  # where the variance came from (analysis/groups.py)
    n_eff: float = 0.0  # the repetitions per side that would give this standard error with both sides alike

    @property
    def known(self) -> bool:
        return self.low is not None

    @property
    def ahead(self) -> float:
        """How far A is ahead of B, A/B - 1: the one convention of the advice ("leads by", "is best: ... ahead",
        "equivalent within": all A/B - 1 for the leader A, so that +-5% means the same everywhere)."""
        return 1 / self.ratio - 1

    def ahead_text(self) -> str:
        """A/B - 1 with its interval, e.g. "5.1% [1.5%, 8.6%]"."""
        if self.low is None or self.high is None:
            return f"{self.ahead:.1%} (no interval)"
        return f"{self.ahead:.1%} [{1 / self.high - 1:.1%}, {1 / self.low - 1:.1%}]"

    @property
    def rel(self) -> float:
        return self.ratio - 1

    @property
    def rel_low(self) -> float | None:
        return None if self.low is None else self.low - 1

    @property
    def rel_high(self) -> float | None:
        return None if self.high is None else self.high - 1

    @property
    def outcome(self) -> str:
        low, high = self.low, self.high
        if low is None or high is None:
            return UNDECIDED
        if low >= 1 / (1 + self.margin) and high <= 1 + self.margin:
            return EQUIVALENT
        if low > 1:
            return BETTER if self.higher_is_better else WORSE
        if high < 1:
            return WORSE if self.higher_is_better else BETTER
        return UNDECIDED

    @property
    def beyond_margin(self) -> bool:
        """Decided apart by more than the margin: the whole interval lies outside it, on one side."""
        low, high = self.low, self.high
        return low is not None and high is not None and (low > 1 + self.margin or high < 1 / (1 + self.margin))

    @property
    def supported(self) -> float | None:
        """The smallest margin this interval would call equivalent: |B/A - 1| is below it, at 95%."""
        if self.low is None or self.high is None:
            return None
        return max(self.high, 1 / self.low) - 1

    def interval_text(self) -> str:
        if not self.known:
            return f"{self.rel:+.1%} (no interval: needs 2 or more repetitions of each)"
        return f"{self.rel:+.1%} [{self.rel_low:+.1%}, {self.rel_high:+.1%}]"

    def text(self) -> str:
        """The outcome in words, B relative to A."""
        o = self.outcome
        if o == EQUIVALENT:
            return f"equivalent within +-{self.margin:.0%} ({self.interval_text()})"
        if o == UNDECIDED:
            tail = f"; no difference above {self.supported:.0%}" if self.known else ""
            return f"undecided at +-{self.margin:.0%} ({self.interval_text()}{tail})"
        return f"{o} ({self.interval_text()})"


def within_text(margin: float) -> str:
    """A margin of equivalence in words: "+-14%" (the interval inside [1/(1+m), 1+m]); from 100% on, "a factor
    of 8.2", since "+-718%" would read as a ratio below -100%, which no interval holds."""
    return f"+-{margin:.0%}" if margin < 1 else f"a factor of {1 + margin:.1f}"


def answer(a: Summary, b: Summary, margin: float = MARGIN, higher_is_better: bool = True) -> Answer:
    """B against A on their own (one pair, Welch's degrees of freedom): the interval of mean_b / mean_a at the
    summaries' level (the smaller alpha of the two: Summary.alpha). Groups: analysis/groups.py."""
    alpha = min(a.alpha, b.alpha)
    if not (a.mean > 0 and b.mean > 0):
        return Answer(math.nan, None, None, margin, a.n, b.n, alpha, higher_is_better)
    r = b.mean / a.mean
    if a.n < 2 or b.n < 2:
        return Answer(r, None, None, margin, a.n, b.n, alpha, higher_is_better)
    va, vb = (a.sd / a.mean) ** 2 / a.n, (b.sd / b.mean) ** 2 / b.n
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1)) if va and vb else max(a.n, b.n) - 1
    return interval(r, va + vb, df, alpha, margin, a.n, b.n, higher_is_better, WELCH)


def interval(
    r: float,
    var: float,
    df: float,
    alpha: float,
    margin: float,
    n_a: int,
    n_b: int,
    higher_is_better: bool,
    method: str,
) -> Answer:
    """The Answer for ratio r whose log has variance `var`, with Student's t at `df` and two-sided `alpha`."""
    s = math.sqrt(max(var, 0.0))
    h = t_two_sided(alpha, max(df, 1.0)) * s if s > 0 else 0.0
    n_eff = 2 / (1 / n_a + 1 / n_b)
    return Answer(r, r * math.exp(-h), r * math.exp(h), margin, n_a, n_b, alpha, higher_is_better, s, df, method, n_eff)


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

    lo, hi = math.floor(n0) + 1, cap
    if half(hi) >= room:
        return None
    while lo < hi:  # the half-width falls with n: bisect for the first n that clears
        mid = (lo + hi) // 2
        if half(mid) < room:
            hi = mid
        else:
            lo = mid + 1
    return lo
