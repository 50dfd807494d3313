"""The comparisons of an advice group: every stack against the best, by design.

A group is the stacks compared for one workload, load and device (analysis/cells/query.py `by_context`). The
question a user asks of it is one-sided: which stacks may be the best, which are worse than the best, which
are within X of it, and what choosing the leader costs at most. Hsu's multiple comparisons with the best
answer exactly that (Hsu, *Multiple Comparisons: Theory and Methods*, 1996, ch. 4; Edwards & Hsu, JASA 78,
1983), with one-sided critical values (`stats.dunnett_one_sided`).

**The rounds are the blocks.** strata runs every configuration once per round, in a random order within the
round (experiment/expand.py), so a group of three or more stacks is a randomized complete block design:
stacks by rounds, on the log scale, y = stack + round + error (Box, Hunter & Hunter, *Statistics for
Experimenters*, 2005, ch. 4). The stack effects are least-squares estimates over all of each stack's trials,
whatever rounds racing left it (`_Fit`); what a slow round does to every stack cancels from their
differences. No pretest decides whether to block: in a randomized block design the stack effects are the
same with or without the blocks, and blocking only changes the error term, whose blocked form is unbiased
either way (a pretest on the rounds, as strata had before, biases what follows it: Bancroft, Ann. Math.
Stat. 15, 1944). It costs R - 1 degrees of freedom. Two stacks are compared without blocks: their
difference of means is the same, the round effects cancel from it just the same, and left in the error
term they make it larger, never smaller, so the two-sample interval stays valid with 2(n - 1) degrees of
freedom where the blocked one has n - 1.

**The error term.** One residual variance for the group, unless one stack's variance stands out; then that
stack gets its own (`_agree`, `_Fit._weighted`). The test reads the stacks' unbiased variance estimates
(the solution of E[SS_k] = sum_l A_kl sigma_l^2 over the fit's residuals, as Shukla's stability variances,
Heredity 29, 1972, for any pattern of trials) by Cochran's statistic (the largest as a share of their sum:
Ann. Eugenics 11, 1941), against its exact distribution under equal spreads, drawn for the group's pattern
of trials (the residuals are then a random direction in the residual space whatever the variance), at
VARIANCES_PRETEST. That choice costs the pooled branch nothing: the residual vector's length, the pooled
variance, is independent of its direction, which is all the test reads. Where one stack stands out, the fit
is weighted least squares (each trial by 1 / its variance, re-estimated from the weighted residuals: a
noisy stack then barely moves the round effects, so its noise stays out of the quiet stacks' residuals),
that stack with its own variance, the others with one pooled; each contrast's degrees of freedom by
Satterthwaite (Biometrics Bulletin 2, 1946), each comparison's critical value at its own degrees of freedom
and the marginal level Dunnett's normal critical value leaves (as Tamhane's T2 does with Sidak's, JASA 74,
1979).

**The floor.** No variance of that branch is taken below the one-variance fit's residual variance s2: a
part below it is set to s2, on s2's degrees of freedom. The branch is taken *because* one stack's residuals
came out large, so the others' pooled variance is, given the test, biased low: under equal variances
that branch erred in 14.5% of the groups it took at Hsu's least favourable configuration (4 stacks x 3
rounds, one 50% ahead), 6.0% overall. Floored, its intervals are at least as wide as the one-variance
rule's, whose error under equal variances the test cannot bias (above), so the branch no longer adds error
(4.4%). What the test misses it cannot help: a stack with 16 times the variance whose three residuals came
out small is pooled, and at three rounds that happens in about half the groups (docs/decisions.md; its
price, measured, in docs/repetitions.md).

All values are analysed as log(value) (`sign` * log for a quantity where lower is better): the ratios are
ratios of round-adjusted geometric means, and no interval crosses -100%.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from strata.analysis.decisions.answer import FIXED, MARGIN, Answer, Design
from strata.analysis.decisions.stats import dunnett_one_sided, fewest_repetitions, norm_cdf, t_quantile

BLOCKED, BLOCKED_PER_STACK = "blocked", "blocked, per stack"  # three or more stacks: stacks x rounds
POOLED, WELCH = "pooled", "welch"  # two stacks (or no rounds): one variance, or each its own
METHODS = (BLOCKED, BLOCKED_PER_STACK, POOLED, WELCH)
VARIANCES_PRETEST = 0.15  # Cochran's test of the stacks' residual spreads: below it, the one that stands out its own
WLS_ROUNDS = 4  # re-estimations of the weights of the fit with the stack that stands out on its own


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
        """The first value of each round."""
        out: dict[int, float] = {}
        for r, v in zip(self.rounds, self.values):
            out.setdefault(r, v)
        return out


@dataclass(frozen=True)
class Contrast:
    """log(b / a) as the fit estimates it: the estimate, its standard error and degrees of freedom."""

    estimate: float
    se: float
    df: float


@dataclass
class Comparisons:
    """A group's leader, every other stack's Answer relative to the best (its interval covers the stack's ratio
    to the true best, all of them at once), the leader's own (what choosing it costs at most), and the stacks
    that may be the best."""

    leader: str | None
    answers: dict[str, Answer] = field(default_factory=dict)
    own: Answer | None = None  # the leader's ratio to the best: [low, 1]; low = 1: it is the best
    best: tuple[str, ...] = ()  # the stacks that may be the best (Gupta's subset, read from the same intervals)
    lead_high: float | None = None  # when the leader alone may be best: its lead over the next is at most this
    method: str = WELCH
    level: float = 0.05  # the one-sided error rate of the group's intervals at this look (all at once)
    pairs: int = 1  # the comparisons with the best (G - 1)
    round_share: float | None = None  # the share of the variance the rounds hold, when blocked
    fit: _Fit | None = None
    crit: dict[str, float] = field(
        default_factory=dict
    )  # each stack's largest critical value as the comparisons' centre

    def pair(self, a: str, b: str) -> Contrast | None:
        """log(b / a) as the fit estimates it (None without an interval)."""
        return self.fit.contrast(a, b) if self.fit and a in self.fit.keys and b in self.fit.keys else None


def compare(
    group: dict[str, Runs],
    margin: float = MARGIN,
    design: Design = FIXED,
    higher_is_better: bool = True,
    known: dict[str, float] | None = None,
    one_variance: bool = False,
    pretest: float = VARIANCES_PRETEST,
) -> Comparisons:
    """The leader of `group` and every other stack relative to the best, valid at once for the whole group.

    Constrained multiple comparisons with the best (Hsu 1996, theorem 4.1.1, for unequal n and variances):
    with d_i the one-sided critical value of the comparisons with stack i, every stack k's log ratio to the
    best of the others lies in [L_k, U_k], all at once with probability 1 - alpha, where
    U_k = max(0, min_j (t_k - t_j + d_k se_kj)) and L_k = min(0, min_{j in S, j != k} (t_k - t_j - d_j se_kj)),
    S = {k: U_k > 0} the stacks that may be the best. So: k is worse (not the best) when U_k = 0; within m of
    the best when L_k >= -log(1 + m); and choosing the leader costs at most 1 / exp(L_leader) - 1.

    `known`: each stack's variance of log(value) per trial, known (an oracle, for bench/ only): the same fit
    and reading, with the normal's critical values. `one_variance` (bench/ only): one residual variance for
    every stack whatever Cochran's test says (valid only where the spreads agree). `pretest` (bench/ only): the
    level of that test (bench/pretest_frontier.py prices each)."""
    present = {k: r for k, r in group.items() if r.n >= 1}
    ready = {k: r for k, r in present.items() if r.n >= 2 and all(v > 0 for v in r.values)}
    pool = ready or {k: r for k, r in present.items() if r.mean > 0}
    if not pool:
        return Comparisons(None)
    sign = 1.0 if higher_is_better else -1.0
    pairs = max(len(present) - 1, 1)
    alpha = design.level(max(r.n for r in present.values()))
    fit = _Fit(ready, sign, known, one_variance, pretest) if len(ready) >= 2 else None
    if fit is not None and not fit.usable:
        fit = None
    if fit is not None:
        leader = max(fit.keys, key=lambda k: fit.effect[k])
    else:
        leader = max(pool, key=lambda k: sign * math.log(pool[k].mean))
    out = Comparisons(leader, best=(leader,), method=fit.method if fit else WELCH, level=alpha, pairs=pairs, fit=fit)
    lead = present[leader]
    for k, r in present.items():  # no interval yet: the ratio alone
        if k != leader and (fit is None or k not in fit.keys):
            ratio = r.mean / lead.mean if r.mean > 0 and lead.mean > 0 else math.nan
            out.answers[k] = Answer(ratio, None, None, margin, lead.n, r.n, alpha, higher_is_better, may_be_best=True)
    if fit is None:
        return out
    out.round_share = fit.round_share
    _mcb(out, fit, margin, alpha, higher_is_better)
    return out


def _mcb(out: Comparisons, fit: _Fit, margin: float, alpha: float, higher_is_better: bool) -> None:
    """Fill `out` with the constrained MCB intervals of the fit's stacks (see `compare`)."""
    keys, t = fit.keys, fit.effect
    leader = out.leader
    assert leader is not None
    d = {(i, j): fit.critical(i, j, alpha) for i in keys for j in keys if i != j}  # i the comparisons' centre
    out.crit = {i: max(d[(i, j)] for j in keys if j != i) for i in keys}
    c = {(a, b): fit.contrast(a, b) for a in keys for b in keys if a != b}  # log(b / a)
    upper = {k: min(t[k] - t[j] + d[(k, j)] * c[(j, k)].se for j in keys if j != k) for k in keys}
    best = tuple(k for k in keys if upper[k] > 0)
    if leader not in best:  # numerically impossible (t[leader] is the largest); kept for safety
        best = (leader, *best)
    out.best = best
    lower = {}
    for k in keys:
        against = [t[k] - t[j] - d[(j, k)] * c[(j, k)].se for j in best if j != k]
        lower[k] = min(0.0, min(against)) if against else 0.0
    for k in keys:
        if k == leader:
            continue
        ck = c[(leader, k)]
        out.answers[k] = Answer(
            math.exp(t[k] - t[leader]),
            math.exp(lower[k]),
            1.0,
            margin,
            fit.runs[leader].n,
            fit.runs[k].n,
            alpha,
            higher_is_better,
            ck.se,
            ck.df,
            fit.method,
            _n_eff(fit.runs[leader].n, fit.runs[k].n),
            may_be_best=k in best,
        )
    n_lead = fit.runs[leader].n
    out.own = Answer(
        1.0,
        math.exp(lower[leader]),
        1.0,
        margin,
        n_lead,
        n_lead,
        alpha,
        higher_is_better,
        method=fit.method,
        may_be_best=True,
    )
    if best == (leader,):
        out.lead_high = math.exp(max(upper[leader], 0.0))


def _n_eff(n_a: int, n_b: int) -> float:
    return 2 / (1 / n_a + 1 / n_b)


class _Fit:
    """Least squares of a group's log values on stack effects, and on round effects (three or more stacks
    with known rounds, two rounds at least): the estimates, each contrast's variance, its degrees of freedom."""

    def __init__(
        self,
        ready: dict[str, Runs],
        sign: float = 1.0,
        known: dict[str, float] | None = None,
        one_variance: bool = False,
        pretest: float = VARIANCES_PRETEST,
    ):
        self.runs = ready
        self.keys = list(ready)
        g = len(self.keys)
        x, y, rounds = self._design(ready, sign)
        self.xplus = np.linalg.pinv(x)
        beta = self.xplus @ y
        self.df = len(y) - int(np.linalg.matrix_rank(x))
        self.usable = self.df >= 1 or known is not None
        self.effect = {k: float(beta[i]) for i, k in enumerate(self.keys)}
        m = np.eye(len(y)) - x @ self.xplus
        resid = m @ y
        self.rss = float(resid @ resid)
        ind = np.zeros((len(y), g))
        ind[np.arange(len(y)), self.owner] = 1.0
        self._ind = ind
        self.stack_ss: np.ndarray = ind.T @ resid**2  # each stack's residual sum of squares
        self.share: np.ndarray = ind.T @ np.diag(m)  # and its share of the residual degrees of freedom
        s2 = self.rss / self.df if self.df else 0.0
        self.round_share = self._round_share(s2) if self.blocked else None
        a = ind.T @ (m**2) @ ind  # E[SS_k] = sum_l A_kl sigma_l^2 (the test reads the unbiased estimates)
        pattern = (tuple(self.owner.tolist()), tuple(-1 if r is None else r for r in rounds))
        self.alike = one_variance or self.df < 2 or _agree(self.stack_ss, _null_of(pattern, m, ind, a)) >= pretest
        self.method = (
            (BLOCKED if self.alike else BLOCKED_PER_STACK) if self.blocked else (POOLED if self.alike else WELCH)
        )
        self.known = known is not None
        self.part = np.arange(g)  # which stacks share a variance (the fit with one stack out: _weighted)
        self.floored = np.zeros(g, dtype=bool)
        if known is not None:
            self.alike, self.sigma2 = True, np.array([known[k] for k in self.keys])
        elif self.alike:
            self.sigma2 = np.full(g, s2)
        else:  # the stack that stands out its own variance, the rest one pooled: weighted least squares
            self.part = np.zeros(g, dtype=int)
            self.part[int(np.argmax(np.linalg.pinv(a) @ self.stack_ss))] = 1
            self._weighted(x, y, ind, self.stack_ss / np.maximum(self.share, 1e-9), s2)
        self._cache: dict[tuple[str, str], Contrast] = {}
        self._crit: dict[tuple[str, float], float] = {}

    def _design(self, ready: dict[str, Runs], sign: float) -> tuple[np.ndarray, np.ndarray, list[int | None]]:
        """The design matrix (a column per stack, and per round but the first when blocked), the log values,
        and each trial's round; sets `owner` (each trial's stack) and `blocked`."""
        g = len(self.keys)
        owner, ys, rounds = [], [], []
        for i, k in enumerate(self.keys):
            r = ready[k]
            for j, v in enumerate(r.values):
                owner.append(i)
                ys.append(sign * math.log(v))
                rounds.append(r.rounds[j] if r.rounds else None)
        levels = sorted({x for x in rounds if x is not None})
        self.blocked = g >= 3 and None not in rounds and len(levels) >= 2
        x = np.zeros((len(ys), g + (len(levels) - 1 if self.blocked else 0)))
        col = {lv: g + i for i, lv in enumerate(levels[1:])}
        for row, (i, rd) in enumerate(zip(owner, rounds)):
            x[row, i] = 1.0
            if self.blocked and rd in col:
                x[row, col[rd]] = 1.0
        self.owner = np.array(owner)
        return x, np.array(ys), rounds

    def _round_share(self, s2: float) -> float | None:
        """The share of the variance the rounds hold: 1 - the blocked residual variance over the one-way one."""
        within = sum(float(np.var(np.log(r.values), ddof=1)) * (r.n - 1) for r in self.runs.values())
        df1 = sum(r.n for r in self.runs.values()) - len(self.runs)
        return max(0.0, 1 - s2 / (within / df1)) if within > 0 and df1 > 0 else None

    def _weighted(self, x: np.ndarray, y: np.ndarray, ind: np.ndarray, sigma2: np.ndarray, s2: float) -> None:
        """Feasible weighted least squares (each trial weighted by 1 / its stack's variance, the variances
        re-estimated from the weighted fit's residuals, a few times): a noisy stack then barely moves the round
        effects, so its noise does not leak into the quiet stacks' residuals, as it does in the unweighted fit.
        Each stack's variance: its residual sum of squares over its share of the weighted residual degrees of
        freedom (the diagonal of the weighted residual projection), floored at `s2`, the one-variance fit's
        residual variance (the module's docstring says why)."""
        for _ in range(WLS_ROUNDS):
            sigma2 = np.maximum(sigma2, 1e-6 * float(np.mean(sigma2)) + 1e-300)
            root = 1 / np.sqrt(ind @ sigma2)
            xw = x * root[:, None]
            pw = np.linalg.pinv(xw)
            m_w = np.eye(len(y)) - xw @ pw
            share = ind.T @ np.diag(m_w)
            resid = y - x @ (pw @ (y * root))
            ss = ind.T @ resid**2
            sigma2 = self._by_part(ss) / np.maximum(self._by_part(share), 1e-9)
            self.floored = sigma2 < s2  # never below the one-variance fit's: see the module's docstring
            sigma2 = np.maximum(sigma2, s2)
        self.xplus = pw * root[None, :]  # the estimates' weights over the (unweighted) trials
        beta = self.xplus @ y
        self.effect = {k: float(beta[i]) for i, k in enumerate(self.keys)}
        self.sigma2 = np.maximum(sigma2, 1e-6 * float(np.mean(sigma2)) + 1e-300)
        self.stack_ss, self.share = ss, share

    def _by_part(self, v: np.ndarray) -> np.ndarray:
        """Each stack's value summed over its variance part (the stacks that share a variance)."""
        sums = np.bincount(self.part, weights=v)
        out: np.ndarray = sums[self.part]
        return out

    def _row(self, a: str, b: str) -> np.ndarray:
        """The weights of log(b / a)'s estimate over the trials."""
        ia, ib = self.keys.index(a), self.keys.index(b)
        row: np.ndarray = self.xplus[ib] - self.xplus[ia]
        return row

    def contrast(self, a: str, b: str) -> Contrast:
        key = (a, b)
        if key not in self._cache:
            row = self._row(a, b)
            w = self._ind.T @ row**2  # each stack's weight in the contrast's variance
            var = float(w @ self.sigma2)
            df = math.inf if self.known else float(self.df) if self.alike else self._satterthwaite(w, var)
            est = self.effect[b] - self.effect[a]
            self._cache[key] = Contrast(est, math.sqrt(max(var, 0.0)), df)
        return self._cache[key]

    def _satterthwaite(self, w: np.ndarray, var: float) -> float:
        """Satterthwaite's degrees of freedom of var = sum_k w_k s_k^2, each s_k^2 on its share of the residual
        degrees of freedom."""
        w_part = np.bincount(self.part, weights=w)
        s2_part = np.bincount(self.part, weights=self.sigma2) / np.bincount(self.part)
        df_part = np.bincount(self.part, weights=self.share)
        floored = np.bincount(self.part, weights=self.floored.astype(float)) > 0
        df_part = np.where(floored, float(self.df), df_part)  # a floored part's variance is s2, on its df
        den = float(np.sum((w_part * s2_part) ** 2 / np.maximum(df_part, 1e-9)))
        return float(min(max(var**2 / den, 1.0), self.df)) if den > 0 else float(self.df)

    def critical(self, i: str, j: str, alpha: float) -> float:
        """The one-sided critical value of the comparison of j with stack i among all the comparisons with i:
        Dunnett's, with each comparison's share of i's variance as its correlation (Hsu's one-factor
        approximation where the trials make it not exactly so, JCGS 1, 1992). With one residual variance, at its
        degrees of freedom, the same for every j; with a stack's own, each comparison's own degrees of freedom
        at the marginal level Dunnett's normal critical value leaves to one comparison (as Tamhane's T2 takes
        Sidak's level with Welch's degrees of freedom, JASA 74, 1979), so that a noisy stack's few degrees of
        freedom widen only its own comparisons."""
        key = (i, alpha)
        if key not in self._crit:
            others = [k for k in self.keys if k != i]
            cs = [self.contrast(i, k) for k in others]
            cov = self._contrast_cov(i, others)
            if len(others) >= 2:
                off = [cov[p, q] for p in range(len(others)) for q in range(len(others)) if p != q]
                shared = max(sum(off) / len(off), 0.0)
            else:
                shared = 0.0
            lam = tuple(math.sqrt(min(shared / c.se**2, 1.0)) if c.se > 0 else 0.0 for c in cs)
            if self.alike or self.known:
                self._crit[key] = dunnett_one_sided(lam, cs[0].df, alpha)
            else:  # the marginal level of the normal's critical value (the df enter per comparison)
                self._crit[key] = 1 - norm_cdf(dunnett_one_sided(lam, 0, alpha))
        if self.alike or self.known:
            return self._crit[key]
        return t_quantile(1 - self._crit[key], max(self.contrast(i, j).df, 1.0))

    def _contrast_cov(self, i: str, others: list[str]) -> np.ndarray:
        rows = np.array([self._row(i, j) for j in others])
        sig = self._ind @ self.sigma2
        cov: np.ndarray = (rows * sig[None, :]) @ rows.T
        return cov


NULL_DRAWS = 500  # Monte Carlo draws of the spreads' statistic under equal variances, per pattern of trials


def _spread_statistic(ss: np.ndarray, ainv: np.ndarray) -> np.ndarray:
    """How much one stack's variance stands out: Cochran's statistic (the largest of the variances as a share of
    their sum: Ann. Eugenics 11, 1941) of the stacks' unbiased estimates (ainv @ SS, each floored at a
    thousandth of their mean), per column of `ss`. At three rounds it finds one stack four times noisier in
    half the groups where Bartlett's statistic found it in a quarter (both at 10%)."""
    sig = ainv @ ss
    mean = np.maximum(sig.mean(axis=0), 1e-300)
    sig = np.maximum(sig, 1e-3 * mean)
    stat: np.ndarray = sig.max(axis=0) / sig.sum(axis=0)
    return stat


_NULLS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}


def _null_of(
    pattern: tuple[tuple[int, ...], tuple[int, ...]], m: np.ndarray, ind: np.ndarray, a: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The statistic's distribution under equal variances for this pattern of stacks and rounds: the residuals
    are then a uniformly random direction in the residual space, whatever the variance, so drawing it gives
    the exact null (seeded: the same answer every time). Cached per pattern."""
    if pattern not in _NULLS:
        rng = np.random.default_rng(41)
        resid = m @ rng.standard_normal((m.shape[0], NULL_DRAWS))
        ainv = np.linalg.pinv(a)
        _NULLS[pattern] = (np.sort(_spread_statistic(ind.T @ resid**2, ainv)), ainv)
        if len(_NULLS) > 4096:
            _NULLS.pop(next(iter(_NULLS)))
    return _NULLS[pattern]


def _agree(ss: np.ndarray, null: tuple[np.ndarray, np.ndarray]) -> float:
    """The p-value of equal variances: the share of the null draws at least as unequal as these residuals."""
    draws, ainv = null
    stat = float(_spread_statistic(ss[:, None], ainv)[0])
    beyond = len(draws) - int(np.searchsorted(draws, stat, side="left"))
    return (1 + beyond) / (1 + len(draws))


def repetitions_to_decide(cmp: Comparisons, cap: int = 10_000) -> int | None:
    """About how many repetitions of each stack would decide every stack that may be the best but is not within
    the margin (worse than the best, or within the margin of it), at today's estimates and spread, in a fixed
    design at the group's level: the critical values and standard errors shrink with n as a look's would.
    None when no number up to `cap` would (an estimate on the margin's edge)."""
    if cmp.fit is None or cmp.leader is None:
        return None
    open_ = [k for k, a in cmp.answers.items() if a.known and a.outcome == "undecided"]
    if cmp.own is not None and cmp.own.known and cmp.own.outcome == "undecided":
        open_ += [j for j in cmp.best if j != cmp.leader and j not in open_]
    need = 0
    for k in open_:
        c = cmp.pair(k, cmp.leader)  # log(leader / k) >= 0
        a = cmp.answers.get(k)
        if c is None or c.se <= 0 or a is None:
            return None
        n = _to_decide(c, a.n_eff or 2.0, math.log(1 + a.margin), cmp.crit.get(k, 2.0), cap)
        if n is None:
            return None
        need = max(need, n)
    return need or None


def _to_decide(c: Contrast, n0: float, edge: float, crit0: float, cap: int) -> int | None:
    """The fewest repetitions per side at which the half-width crit * se clears the room to a decision:
    below the estimate (worse) or below the margin's edge less the estimate (within the margin)."""
    room = max(c.estimate, edge - c.estimate)

    def half(n: int) -> float:
        df = c.df * (n - 1) / max(n0 - 1, 1e-9)
        return crit0 * _t_ratio(c.df, df) * c.se * math.sqrt(n0 / n)

    return fewest_repetitions(half, room, n0, cap)


def _t_ratio(df0: float, df: float) -> float:
    """How much a critical value shrinks when its degrees of freedom grow from df0 to df (Student's ratio at
    5% one-sided, a fair stand-in for Dunnett's)."""
    from strata.analysis.decisions.stats import t_quantile

    return t_quantile(0.95, max(df, 1.0)) / t_quantile(0.95, max(df0, 1.0))
