"""The decision rule of strata before issue 41 (commit ee1f538), frozen as a yardstick.

bench/decisions_sim.py and bench/oracle_margin.py put the rule strata runs beside this one, on the same
trials: every group compared with the best by two-sided intervals at alpha / (G - 1) (Bonferroni), the error
spent over the looks `planned_looks(min, max)` (Lan-DeMets, Pocock-type), the variance pooled when Bartlett's
test at 5% allows it, compared within rounds only when the rounds' F test rejects at 1%, else each pair on
its own (Welch). Kept as it was (only the distributions now come from scipy.stats, and the names are its own):
not used by strata itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats as _st

from strata.analysis.decisions.groups import Runs
from strata.analysis.decisions.sequential import POCOCK, levels
from strata.experiment.looks import planned_looks

ALPHA = 0.05
MARGIN = 0.05
BONFERRONI = "bonferroni"
BETTER, WORSE, EQUIVALENT, UNDECIDED = "better", "worse", "equivalent", "undecided"
WELCH = "welch"


def t_two_sided(alpha: float, df: float) -> float:
    return float(_st.t.ppf(1 - alpha / 2, df))


def f_sf(x: float, d1: float, d2: float) -> float:
    return float(_st.f.sf(x, d1, d2)) if x > 0 else 1.0


def chi2_sf(x: float, k: float) -> float:
    return float(_st.chi2.sf(x, k)) if x > 0 else 1.0


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
        return levels(tuple(fractions), alpha, final, sides=2)[-1]

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
    method: str = WELCH  # where the variance came from (analysis/decisions/groups.py)
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


POOLED, BLOCKED, PAIRED = "pooled", "pooled by round", "paired by round"
METHODS = (POOLED, BLOCKED, WELCH, PAIRED)
PRETEST = 0.05  # the level of Bartlett's test, below which the variance is not pooled
ROUNDS_PRETEST = 0.01  # the level of the test that picks the smaller, by-round error term


@dataclass
class Comparisons:
    """A group's leader, and every other stack's Answer relative to the best (the other's mean over the
    leader's, with an interval that covers its ratio to the true best: see `compare`)."""

    leader: str | None
    answers: dict[str, Answer] = field(default_factory=dict)
    lead: Answer | None = None  # the closest other relative to the leader, its interval that of max_j mu_j / mu_leader
    best: tuple[str, ...] = ()  # the stacks that may be the best (no interval puts them below another)
    method: str = WELCH
    level: float = 0.05  # the nominal two-sided error rate of each pairwise interval
    pairs: int = 1  # the comparisons the error is divided among (G - 1)
    round_share: float | None = None  # the share of the variance the rounds explain, when estimated
    fit: _Fit | None = None

    def pair(self, a: str, b: str) -> Answer | None:
        """b relative to a on their own interval at this level (None without one)."""
        return self.fit.pair(a, b, self.level) if self.fit and a in self.fit.runs and b in self.fit.runs else None


def compare_old(
    group: dict[str, Runs], margin: float = MARGIN, design: Design = FIXED, higher_is_better: bool = True
) -> Comparisons:
    """The leader of `group` and every other stack relative to the best, valid at once for the whole group.

    Multiple comparisons with the best (after Hsu, *Multiple Comparisons*, 1996, ch. 4; Edwards & Hsu, JASA
    78, 1983): only the G-1 comparisons of each stack with the true best, b, need to hold at once, so each
    pairwise interval is taken at level alpha / (G - 1) (Bonferroni), spent over the looks. When they hold,
    b is among the stacks that no interval puts below another (`best`, Gupta's subset), so every stack k's
    ratio to the true best lies between the smallest lower and the largest upper bound of its intervals against
    the members of that subset (and reaches 1 if k is a member itself). Every answer is read from that
    interval: worse (below 1: not the best), beyond the margin, within the margin, or within the margin the
    data support. Where the leader is the only member, it is the best, and its lead over the others is
    the interval of max_j mu_j / mu_leader."""
    present = {k: r for k, r in group.items() if r.n >= 1}
    ready = {k: r for k, r in present.items() if r.n >= 2 and r.mean > 0}
    pool = ready or {k: r for k, r in present.items() if r.mean > 0}
    if not pool:
        return Comparisons(None)
    sign = 1 if higher_is_better else -1
    leader = max(pool, key=lambda k: sign * pool[k].mean)
    pairs = max(len(present) - 1, 1)
    level = design.level(max(r.n for r in present.values()), pairs)
    fit = _Fit(ready, margin, higher_is_better) if len(ready) >= 2 and leader in ready else None
    out = Comparisons(leader, {}, None, (leader,), fit.method if fit else WELCH, level, pairs, None, fit)
    lead = present[leader]
    for k, r in present.items():  # no interval yet: the ratio alone
        if k != leader and (fit is None or k not in ready):
            ratio = r.mean / lead.mean if r.mean > 0 and lead.mean > 0 else math.nan
            out.answers[k] = Answer(ratio, None, None, margin, lead.n, r.n, level, higher_is_better)
    if fit is None:
        return out
    out.round_share = fit.round_share
    out.best = tuple(j for j in ready if not any(fit.below(j, k, level) for k in ready if k != j))
    for k in ready:
        if k != leader:
            out.answers[k] = _to_best(fit, leader, k, out.best, level)
    others = [out.answers[k] for k in ready if k != leader]
    if others:  # max_j mu_j / mu_leader (min_j, where lower is better)
        top = max(others, key=lambda a: sign * a.ratio)
        pick = max if higher_is_better else min
        out.lead = replace(top, low=pick(_bounds(a)[0] for a in others), high=pick(_bounds(a)[1] for a in others))
    return out


def _to_best(fit: _Fit, leader: str, k: str, best: tuple[str, ...], level: float) -> Answer:
    """k's interval relative to the best: its ratio to the leader, bounded by its intervals against every stack
    that may be the best (reaching 1 if k may be the best itself)."""
    against = [_bounds(fit.pair(j, k, level)) for j in best if j != k]
    low, high = min(lo for lo, _ in against), max(hi for _, hi in against)
    if k in best:
        low, high = min(low, 1.0), max(high, 1.0)
    return replace(fit.pair(leader, k, level), low=low, high=high)


def _bounds(a: Answer) -> tuple[float, float]:
    assert a.low is not None and a.high is not None  # every pair of ready stacks has its interval
    return a.low, a.high


class _Fit:
    """The variance structure of a group's ready stacks: pooled or not, by round or not."""

    def __init__(self, ready: dict[str, Runs], margin: float = MARGIN, higher_is_better: bool = True):
        self.runs, self.margin, self.higher_is_better = ready, margin, higher_is_better
        self._pairs: dict[tuple[str, str, float], Answer] = {}
        self.rel = {k: [v / r.mean - 1 for v in r.values] for k, r in ready.items()}
        self.ss1 = sum(sum(u * u for u in us) for us in self.rel.values())
        self.df1 = sum(r.n - 1 for r in ready.values())
        self.blocked, self.round_share = False, None
        per_stack = {k: (sum(u * u for u in us), r.n - 1.0) for (k, us), r in zip(self.rel.items(), ready.values())}
        # two stacks: the by-round error term would have n - 1 degrees of freedom and be chosen by the very data
        # it judges (at 1%, the error of two equal stacks rose from 5.3% to 6.3%); three or more lend it theirs
        two_way = _two_way(ready, self.rel) if len(ready) >= 3 else None
        if two_way is not None:
            rss2, df2, resid = two_way
            self.rss2, self.df2 = rss2, df2
            if self.df1 > df2 and rss2 > 0:
                f = ((self.ss1 - rss2) / (self.df1 - df2)) / (rss2 / df2)
                self.blocked = f_sf(f, self.df1 - df2, df2) < ROUNDS_PRETEST
                self.round_share = max(0.0, 1 - (rss2 / df2) / (self.ss1 / self.df1)) if self.ss1 > 0 else None
            if self.blocked:  # each stack's share of the residual degrees of freedom
                per_stack = {k: (ss, (ready[k].n - 1) * df2 / self.df1) for k, ss in resid.items()}
        self.pooled = _agree(list(per_stack.values()))
        self.method = (BLOCKED if self.pooled else PAIRED) if self.blocked else (POOLED if self.pooled else WELCH)

    def below(self, j: str, k: str, level: float) -> bool:
        """j decidedly worse than k at `level`."""
        low, high = _bounds(self.pair(k, j, level))
        return high < 1 if self.higher_is_better else low > 1

    def pair(self, a: str, b: str, level: float) -> Answer:
        """b relative to a, on its own interval at `level`."""
        key = (a, b, level)
        if key not in self._pairs:
            self._pairs[key] = self._pair(a, b, self.margin, level, self.higher_is_better)
        return self._pairs[key]

    def _pair(self, a: str, b: str, margin: float, level: float, higher_is_better: bool) -> Answer:
        ra, rb = self.runs[a], self.runs[b]
        common = sorted(set(ra.by_round()) & set(rb.by_round())) if self.blocked else []
        if self.method == BLOCKED and common:
            return self._within(ra, rb, common, margin, level, higher_is_better, self.rss2 / self.df2, self.df2)
        if self.method == PAIRED and len(common) >= 2:
            return self._within(ra, rb, common, margin, level, higher_is_better, None, len(common) - 1)
        r = rb.mean / ra.mean
        if self.pooled:
            s2 = self.ss1 / self.df1 if self.df1 else 0.0
            return interval(r, s2 / ra.n + s2 / rb.n, self.df1, level, margin, ra.n, rb.n, higher_is_better, POOLED)
        va, vb = _own(self.rel[a]) / ra.n, _own(self.rel[b]) / rb.n
        if va and vb:
            df = (va + vb) ** 2 / (va**2 / (ra.n - 1) + vb**2 / (rb.n - 1))
        else:  # one side with no spread: the other side's n - 1 (issue 54; it was the larger n - 1)
            df = (ra.n if va else rb.n) - 1 if va or vb else ra.n + rb.n - 2
        return interval(r, va + vb, df, level, margin, ra.n, rb.n, higher_is_better, WELCH)

    @staticmethod
    def _within(
        ra: Runs,
        rb: Runs,
        common: list[int],
        margin: float,
        level: float,
        higher_is_better: bool,
        s2: float | None,
        df: float,
    ) -> Answer:
        """A pair compared within the rounds both ran: the ratio of their means over those rounds; the variance
        of a difference of relative deviations is 2 s2 (pooled by round) or that of the pair's own (paired)."""
        xa, xb = ra.by_round(), rb.by_round()
        ya, yb = [xa[j] for j in common], [xb[j] for j in common]
        ma, mb, m = sum(ya) / len(ya), sum(yb) / len(yb), len(common)
        if s2 is None:
            d = [vb / mb - va / ma for va, vb in zip(ya, yb)]
            var = _own(d) / m
            method = PAIRED
        else:
            var, method = 2 * s2 / m, BLOCKED
        return replace(interval(mb / ma, var, df, level, margin, ra.n, rb.n, higher_is_better, method), n_eff=float(m))


def _own(us: list[float]) -> float:
    """The sample variance of deviations (about their own mean)."""
    if len(us) < 2:
        return 0.0
    mu = sum(us) / len(us)
    return sum((u - mu) ** 2 for u in us) / (len(us) - 1)


def _agree(stats: list[tuple[float, float]]) -> bool:
    """Bartlett's test that the variances (sum of squares, degrees of freedom) agree, at PRETEST."""
    stats = [(ss, d) for ss, d in stats if d > 0]
    if len(stats) < 2:
        return True
    if any(ss <= 0 for ss, _ in stats):
        return all(ss <= 0 for ss, _ in stats)  # one without spread beside others with: not alike
    total_d = sum(d for _, d in stats)
    pooled = sum(ss for ss, _ in stats) / total_d
    m = total_d * math.log(pooled) - sum(d * math.log(ss / d) for ss, d in stats)
    c = 1 + (sum(1 / d for _, d in stats) - 1 / total_d) / (3 * (len(stats) - 1))
    return chi2_sf(m / c, len(stats) - 1) >= PRETEST


def _two_way(ready: dict[str, Runs], rel: dict[str, list[float]]) -> tuple[float, int, dict[str, float]] | None:
    """Least squares of the relative deviations on stack and round (additive): (residual sum of squares, its
    degrees of freedom, each stack's residual sum of squares), or None when no round holds two stacks."""
    rounds = sorted({j for r in ready.values() for j in r.by_round()})
    if any(not r.rounds for r in ready.values()) or len(rounds) < 2:
        return None
    count: dict[int, int] = {}
    for r in ready.values():
        for j in r.by_round():
            count[j] = count.get(j, 0) + 1
    if max(count.values()) < 2:
        return None
    keys = list(ready)
    col = {j: len(keys) + i for i, j in enumerate(rounds[1:])}
    rows, ys, owner = [], [], []
    for i, k in enumerate(keys):
        seen = set()
        for j, u in zip(ready[k].rounds, rel[k]):
            if j in seen:
                continue
            seen.add(j)
            x = [0.0] * (len(keys) + len(rounds) - 1)
            x[i] = 1.0
            if j in col:
                x[col[j]] = 1.0
            rows.append(x)
            ys.append(u)
            owner.append(k)
    x_mat, y = np.array(rows), np.array(ys)
    beta, _, rank, _ = np.linalg.lstsq(x_mat, y, rcond=None)
    resid = y - x_mat @ beta
    df2 = len(ys) - int(rank)
    if df2 < 1:
        return None
    per = {k: 0.0 for k in keys}
    for k, e in zip(owner, resid.tolist()):
        per[k] += e * e
    return float(resid @ resid), df2, per


DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE = "decided", "eliminated", "equivalent", "undecidable"
FUTILE_BELOW = 0.10  # a predictive probability of a decision by max_repetitions below this: stop


def race_old(
    group: dict[str, Runs], margin: float, design: Design, stopped: dict[str, str] | None = None
) -> dict[str, str]:
    """The configurations of one group that may stop now, with why; those absent go on. A comparison with
    a configuration that already stopped stays decided (its decision was made at a valid look). A group of
    one compares nothing: the caller decides by its own rule."""
    stopped = stopped or {}
    if len(group) < 2:
        return {}
    cmp = compare_old(group, margin, design)
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
