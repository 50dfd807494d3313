"""The comparisons of an advice group: every stack against the best, with the narrowest valid variance.

A group is the stacks compared for one workload, load and device (analysis/query.py `by_context`). Its
leader is the stack with the highest mean (the lowest, where lower is better). Every other stack gets an
interval of its ratio to the best (analysis/decide.py Answer), valid for all of them at once and, for
`repetitions: auto`, at every look (`compare`: multiple comparisons with the best, the error divided among
the G-1 comparisons with the best and spent over the looks by `Design.level`).

What sets an interval's width is the variance behind it and its degrees of freedom. With 3 to 10
repetitions per stack, a pair on its own has 2 to 18 degrees of freedom; the stacks of a group ran on the
same machine, in the same rounds, so they can lend each other theirs. Two questions are asked of the data,
never assumed:

- Do the stacks' coefficients of variation agree? Bartlett's test (*Properties of sufficiency and
  statistical tests*, Proc. R. Soc. A 160, 1937) of the relative variances, at 5%. If they do, the variance
  is pooled over the group: df = sum(n_i - 1) instead of a pair's Welch df (Welch, Biometrika 34, 1947).
  With equal CVs the pooled variance is independent of Bartlett's statistic, so the choice costs nothing
  there; with unequal ones, pooling a high-CV pair with low-CV stacks narrows its interval, and the
  simulation measures what that costs.
- Do rounds share noise (the machine slower in one round for every stack, or drifting over the run)?
  The F test of rounds in the two-way analysis of variance with stacks and rounds as factors, the rounds
  being the blocks of a randomized complete block design (the trials of a round run interleaved). If they
  do, each pair is compared within the rounds both ran, with the residual variance of the two-way fit when
  the CVs agree ("pooled by round"), or the variance of the pair's own differences when they do not
  ("paired by round"). The estimated share of the variance the rounds hold is reported (`round_share`).

Both are preliminary tests, and a preliminary test biases what follows it unless its level is chosen for
that (Bancroft, *On biases in estimation due to the use of preliminary tests of significance*, Ann. Math.
Stat. 15, 1944). The by-round error term is chosen only when the rounds' F test rejects at 1%: that choice
is made when the residual looks small next to the rounds' mean square, so it is anti-conservative when
rounds share no noise, and only a strict level keeps that rare (at 25% the error of a pair of equal stacks
rose from 5% to 8% in bench/decisions_sim.py). Two stacks are never compared by round: their by-round
error term has only n - 1 degrees of freedom, and even at 1% choosing it raised their error from 5.3% to
6.3% over three looks; with three or more stacks the same choice moved it by less than 0.3%.

All variances are of relative deviations (y / mean - 1), the delta method's variance of log(mean): the
interval is that of the ratio of arithmetic means.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from strata.analysis.decide import FIXED, MARGIN, WELCH, Answer, Design, interval
from strata.analysis.stats import chi2_sf, f_sf

POOLED, BLOCKED, PAIRED = "pooled", "pooled by round", "paired by round"
METHODS = (POOLED, BLOCKED, WELCH, PAIRED)
PRETEST = 0.05  # the level of Bartlett's test, below which the variance is not pooled
ROUNDS_PRETEST = 0.01  # the level of the test that picks the smaller, by-round error term


@dataclass(frozen=True)
class Runs:
    """One configuration's successful trials: their headline values and the round (repetition) of each."""

    values: tuple[float, ...]
    rounds: tuple[int, ...] = ()

    @classmethod
    def of(cls, values: Iterable[float], rounds: Iterable[int] | None = None) -> Runs:
        vals = tuple(float(v) for v in values)
        rs = tuple(int(r) for r in rounds) if rounds is not None else ()
        return cls(vals, rs if len(rs) == len(vals) else ())

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values) if self.values else math.nan

    def by_round(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for r, v in zip(self.rounds, self.values):
            out.setdefault(r, v)
        return out


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


def compare(
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
        df = (va + vb) ** 2 / (va**2 / (ra.n - 1) + vb**2 / (rb.n - 1)) if va and vb else max(ra.n, rb.n) - 1
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
