"""Decisions between two configurations: better, worse, equivalent within a margin, or undecided; and the
design of the repetitions behind them (`Design`: fixed, or `auto` looking at a few planned numbers of
repetitions).

A pair on its own (`strata compare`, sweeps, the remote and runtime figures) asks one question of one
interval: the 95% interval of the ratio of two means (B / A), computed on the log scale by the delta method
with Welch's degrees of freedom (as stats.ratio), so it never crosses zero and is asymmetric. Then, for a
quantity where higher is better:

- *equivalent within +-margin* when the whole interval lies inside [1/(1+m), 1+m]: the two one-sided
  tests (TOST, Schuirmann 1987) at 2.5% each, read from the same interval;
- *better* when the interval lies above 1, *worse* when below 1 (and the interval is not inside the
  margin: a difference that is real but smaller than the margin is equivalent, which is what a user
  choosing a stack needs to hear);
- *undecided* otherwise, with the smallest margin the interval lies inside (`supported`).

An advice group's stacks are compared with the best all at once (analysis/decisions/groups.py): each stack's Answer
then holds the interval of its ratio to the true best, [low, 1], and whether it may be the best
(`may_be_best`): *equivalent* within the margin of the best, *worse* (not the best), or *undecided* (it may
be the best, and is not within the margin of it).

Optional stopping. `repetitions: auto` looks at its intervals at a few planned numbers of repetitions,
planned before the first trial from the budget and the estimated trial time (run/repeat.py `plan_looks`:
only the looks the budget can pay for), and stops what is decided. The error rate is spent over those looks
(analysis/decisions/sequential.py: Lan-DeMets error spending with a Pocock-type function, up to the last planned
look); `Design.level` gives a look's one-sided level for the group comparisons, and its two-sided level for
a configuration's own interval. A fixed number of repetitions is one look.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strata.analysis.decisions.sequential import BONFERRONI, POCOCK, levels
from strata.analysis.decisions.stats import CONFIDENCE_ALPHA, Summary, t_two_sided, welch_df
from strata.experiment.looks import planned_looks

if TYPE_CHECKING:
    from strata.experiment.model import DesignDoc

ALPHA = CONFIDENCE_ALPHA
MARGIN = 0.05  # the default margin of equivalence (a spec key: `margin`)
BETTER, WORSE, EQUIVALENT, UNDECIDED = "better", "worse", "equivalent", "undecided"
WELCH = "welch"  # the interval of one pair on its own (Welch's degrees of freedom)
OUTCOMES = (BETTER, WORSE, EQUIVALENT, UNDECIDED)


@dataclass(frozen=True)
class Design:
    """How the repetitions were taken: fixed (one look), or `auto` from `first` to at most `last` per
    configuration, looking at the planned `looks` (their last is where all the error is spent: the budget may
    plan fewer repetitions than `last`). `spending`: how the error is spread over the looks (POCOCK;
    BONFERRONI for results stored before looks were planned, which looked after every round)."""

    first: int = 0
    last: int = 0
    looks: tuple[int, ...] = ()
    spending: str = POCOCK

    @classmethod
    def auto(cls, first: int, last: int, looks: tuple[int, ...] | None = None) -> Design:
        return cls(first, last, looks or planned_looks(first, last))

    @property
    def sequential(self) -> bool:
        """Whether it looks more than once (a plan of one look is a fixed design)."""
        return self.last > self.first > 0 and len(self.looks) > 1

    @property
    def final(self) -> int:
        """The last planned look: no configuration repeats beyond it."""
        return self.looks[-1] if self.looks else self.last

    def is_look(self, n: int) -> bool:
        """Whether `auto` looks once every configuration going on has n repetitions."""
        return not self.sequential or n in self.looks

    def level(self, n: int, sides: int = 1) -> float:
        """The nominal error rate of an interval at the look reached when the largest configuration has `n`
        repetitions: one-sided (the comparisons with the best: groups.py, all of a group's at once) or
        two-sided (a configuration's own interval). A planned look spends what the spending function gives it;
        a look between planned ones (the budget ended the run) is the last and spends what is left; before the
        first planned look, the same."""
        if not self.sequential:
            return ALPHA
        if self.spending == BONFERRONI:
            return ALPHA / len(self.looks)
        n = max(n, 1)  # no repetition stored (every trial failed): no interval will be drawn, and no look was reached
        done = [k for k in self.looks if k <= n]
        final = n not in self.looks
        top = self.final
        fractions = [k / top for k in done] + ([min(n, top) / top] if final else [])
        return levels(tuple(fractions), ALPHA, final, sides)[-1]

    def to_json(self) -> dict[str, Any]:
        if not self.sequential:
            return {}
        return {"repetitions": "auto", "min": self.first, "max": self.last, "looks": list(self.looks)}

    @classmethod
    def of(cls, doc: DesignDoc | None) -> Design:
        """From a stored result's `design` (absent: fixed repetitions; without `looks`: stored before looks
        were planned, when every round was a look, each spending alpha / (max - min + 1))."""
        if doc is None or doc.get("repetitions") != "auto":
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
    method: str = WELCH  # where the variance came from (analysis/decisions/groups.py)
    n_eff: float = 0.0  # the repetitions per side that would give this standard error with both sides alike
    # a stack of an advice group (groups.py): whether it may be the best; its interval is then that of
    # its ratio to the true best, [low, 1]. None: a pair on its own, B relative to A
    may_be_best: bool | None = None

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
        if self.may_be_best is not None:  # relative to the best: within the margin, not the best, or may be it
            return EQUIVALENT if low >= 1 / (1 + self.margin) else WORSE if not self.may_be_best else UNDECIDED
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
        if self.may_be_best is not None:  # one-sided: how far below the best is not bounded
            return False
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
    summaries' level (the smaller alpha of the two: Summary.alpha). Groups: analysis/decisions/groups.py."""
    alpha = min(a.alpha, b.alpha)
    if not (a.mean > 0 and b.mean > 0):
        return Answer(math.nan, None, None, margin, a.n, b.n, alpha, higher_is_better)
    r = b.mean / a.mean
    if a.n < 2 or b.n < 2:
        return Answer(r, None, None, margin, a.n, b.n, alpha, higher_is_better)
    va, vb = (a.sd / a.mean) ** 2 / a.n, (b.sd / b.mean) ** 2 / b.n
    df = welch_df(va, a.n, vb, b.n)
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
