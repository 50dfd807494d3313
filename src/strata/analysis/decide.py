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

Optional stopping. `repetitions: auto` looks at the intervals after every round and stops a
configuration once its comparisons are decided. An interval that is valid at a fixed n is not valid at a
data-dependent n (looking until it excludes 1 makes it exclude 1 eventually). The intervals here are a
group-sequential design with alpha spending (Lan & DeMets, Biometrika 1983): look r of at most K spends
alpha_r = alpha * (f(r/K) - f((r-1)/K)) with f(t) = t (Pocock-like: every look gets the same share),
and the looks are combined by the union bound (Bonferroni), so with probability >= 95% every interval of
every look covers the truth at once, however the run decided to stop. Unlike an exact group-sequential
boundary this needs no model of the correlation between looks (which with Student's t at 3 to 10
repetitions has no closed form); it is conservative by that much. bench/decisions_sim.py shows its
coverage by simulation. A fixed number of repetitions is one look: the plain 95% interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from strata.analysis.stats import CONFIDENCE_ALPHA, Summary, t_two_sided

ALPHA = CONFIDENCE_ALPHA
MARGIN = 0.05  # the default margin of equivalence (a spec key: `margin`)
BETTER, WORSE, EQUIVALENT, UNDECIDED = "better", "worse", "equivalent", "undecided"
OUTCOMES = (BETTER, WORSE, EQUIVALENT, UNDECIDED)


@dataclass(frozen=True)
class Design:
    """How the repetitions were taken: fixed (one look), or `auto` from `first` to at most `last` per
    configuration, looking after every round."""

    first: int = 0
    last: int = 0

    @property
    def sequential(self) -> bool:
        return self.last > self.first > 0

    @property
    def looks(self) -> int:
        return self.last - self.first + 1 if self.sequential else 1

    def look(self, n: int) -> int:
        """The look at which a comparison with `n` repetitions on its larger side was made (1-based)."""
        return min(max(n - self.first + 1, 1), self.looks) if self.sequential else 1

    def alpha(self, n: int = 0) -> float:
        """The error rate one look may spend (alpha spending with f(t) = t: the same at every look)."""
        return ALPHA / self.looks

    def to_json(self) -> dict:
        return {"repetitions": "auto", "min": self.first, "max": self.last} if self.sequential else {}

    @classmethod
    def of(cls, doc: dict | None) -> Design:
        """From a stored result's `design` (absent: fixed repetitions)."""
        doc = doc or {}
        if doc.get("repetitions") != "auto":
            return cls()
        return cls(int(doc.get("min", 0)), int(doc.get("max", 0)))


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
    alpha: float = ALPHA
    higher_is_better: bool = True

    @property
    def known(self) -> bool:
        return self.low is not None

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
        if not self.known:
            return UNDECIDED
        if self.low >= 1 / (1 + self.margin) and self.high <= 1 + self.margin:
            return EQUIVALENT
        if self.low > 1:
            return BETTER if self.higher_is_better else WORSE
        if self.high < 1:
            return WORSE if self.higher_is_better else BETTER
        return UNDECIDED

    @property
    def beyond_margin(self) -> bool:
        """Decided apart by more than the margin: the whole interval lies outside it, on one side."""
        return self.known and (self.low > 1 + self.margin or self.high < 1 / (1 + self.margin))

    @property
    def supported(self) -> float | None:
        """The smallest margin this interval would call equivalent: |B/A - 1| is below it, at 95%."""
        if not self.known:
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


def answer(a: Summary, b: Summary, margin: float = MARGIN, higher_is_better: bool = True) -> Answer:
    """B against A: the interval of mean_b / mean_a at the level the summaries' design leaves for this
    look (the smaller alpha of the two: Summary.alpha)."""
    alpha = min(a.alpha, b.alpha)
    if not (a.mean > 0 and b.mean > 0):
        return Answer(math.nan, None, None, margin, a.n, b.n, alpha, higher_is_better)
    r = b.mean / a.mean
    if a.n < 2 or b.n < 2:
        return Answer(r, None, None, margin, a.n, b.n, alpha, higher_is_better)
    va, vb = (a.sd / a.mean) ** 2 / a.n, (b.sd / b.mean) ** 2 / b.n
    s = math.sqrt(va + vb)
    if s == 0:
        return Answer(r, r, r, margin, a.n, b.n, alpha, higher_is_better)
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1)) if va and vb else max(a.n, b.n) - 1
    h = t_two_sided(alpha, df) * s
    return Answer(r, r * math.exp(-h), r * math.exp(h), margin, a.n, b.n, alpha, higher_is_better)


def repetitions_for(a: Summary, b: Summary, margin: float) -> int | None:
    """About how many repetitions of each side would decide the comparison at the observed means and
    spread, at the summaries' alpha (the interval's half-width shrinks as 1/sqrt(n)); None when no
    number up to 10,000 would (the estimate sits on the margin's edge and the spread is large)."""
    if a.n < 2 or b.n < 2 or not (a.mean > 0 and b.mean > 0):
        return None
    d = abs(math.log(b.mean / a.mean))
    edge = math.log(1 + margin)
    # decided once the half-width is below either distance: to 1 (a difference) or, from inside, to the
    # margin's edge (equivalence)
    room = max(edge - d, d)
    cv2 = (a.sd / a.mean) ** 2 + (b.sd / b.mean) ** 2
    alpha = min(a.alpha, b.alpha)
    # Welch's degrees of freedom lie between n - 1 and 2n - 2: n - 1 keeps the estimate from promising
    # a decision at the very n that has not decided
    lo, hi = max(a.n, b.n) + 1, 10_000
    if t_two_sided(alpha, hi - 1) * math.sqrt(cv2 / hi) >= room:
        return None
    while lo < hi:  # the half-width falls with n: bisect for the first n that clears
        mid = (lo + hi) // 2
        if t_two_sided(alpha, mid - 1) * math.sqrt(cv2 / mid) < room:
            hi = mid
        else:
            lo = mid + 1
    return lo
