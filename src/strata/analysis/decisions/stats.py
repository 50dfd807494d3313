"""Means, confidence intervals, differences between repetitions, and the distributions behind them.

Repetitions of a trial (labels.repetition) are few (2 to 10), so intervals use Student's t with Welch's
unequal-variance degrees of freedom (Welch 1947; as in pyperf's `compare_to` and hyperfine's
`--export-json` analysis scripts). A ratio (stack / raw device) and a relative change of positive quantities
get their interval on the log scale by the delta method, so a throughput is never "112% lower".

The distributions (Student's t, F, chi-square, the normal) are SciPy's `scipy.stats`: a well-kept library
instead of the incomplete beta function by hand (docs/decisions.md says what it costs in install size and
import time). `dunnett_one_sided` is the critical value of the one-sided comparisons with one stack (Dunnett,
JASA 50, 1955) that analysis/decisions/groups.py's comparisons with the best need, as Dunnett computed it: a
one-dimensional integral over the normal for known variance, and over scipy's chi for Student's t.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np

CONFIDENCE = 0.95
CONFIDENCE_ALPHA = 1 - CONFIDENCE


@functools.cache
def _scipy() -> tuple[ModuleType, ModuleType, ModuleType]:
    """scipy.stats, scipy.special and scipy.optimize, imported on first use: about a second of CPU on the
    development VM, which only the commands that compute an interval pay (docs/decisions.md)."""
    from scipy import optimize, special, stats

    return stats, special, optimize


def t975(df: float) -> float:
    """Two-sided 95% quantile of t with `df` degrees of freedom (at least 1)."""
    return t_quantile(0.975, max(df, 1.0))


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float
    ci_low: float | None
    ci_high: float | None
    # the error rate its intervals spend: 5% for fixed repetitions, less for one look of `repetitions:
    # auto` (analysis/decisions/answer.py: alpha spending keeps intervals valid under optional stopping)
    alpha: float = CONFIDENCE_ALPHA

    @property
    def cv(self) -> float | None:
        """Coefficient of variation of the repetitions, or None with fewer than 2."""
        return self.sd / self.mean if self.n >= 2 and self.mean else None

    @property
    def se(self) -> float | None:
        return self.sd / math.sqrt(self.n) if self.n >= 2 else None

    @property
    def half_width(self) -> float | None:
        return None if self.ci_high is None or self.ci_low is None else (self.ci_high - self.ci_low) / 2


def summarize(values: list[float], alpha: float = CONFIDENCE_ALPHA) -> Summary:
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return Summary(0, math.nan, math.nan, None, None, alpha)
    mean = sum(vals) / n
    if n == 1:
        return Summary(1, mean, 0.0, None, None, alpha)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    h = t_two_sided(alpha, n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - h, mean + h, alpha)


def t_two_sided(alpha: float, df: float) -> float:
    """The quantile of a two-sided (1 - alpha) interval: the table at 95%, else computed."""
    return t975(df) if alpha == CONFIDENCE_ALPHA else t_quantile(1 - alpha / 2, df)


@dataclass(frozen=True)
class Change:
    """B relative to A: (mean_b - mean_a) / mean_a, with its 95% interval."""

    base: Summary
    other: Summary
    rel: float
    rel_low: float | None
    rel_high: float | None

    @property
    def known(self) -> bool:
        return self.rel_low is not None

    @property
    def significant(self) -> bool | None:
        """True/False when both sides have repetitions; None when it cannot be told."""
        if self.rel_low is None or self.rel_high is None:
            return None
        return self.rel_low > 0 or self.rel_high < 0

    def text(self) -> str:
        s = f"{self.rel:+.1%}"
        if not self.known:
            return s + " (no interval: too few repetitions)"
        sig = "significant" if self.significant else "not significant"
        return f"{s} [{self.rel_low:+.1%}, {self.rel_high:+.1%}] ({sig})"


def change(a: Summary, b: Summary) -> Change:
    """mean_b relative to mean_a, (b - a) / a, with its 95% interval. For positive quantities (throughput,
    latency: every headline) the interval is that of the ratio b / a on the log scale (the delta method
    with Welch's degrees of freedom, as `ratio`), less one: it never reaches below -100% and is
    asymmetric, as a ratio's is. Otherwise Welch's interval of the difference, relative to mean_a."""
    rel = (b.mean - a.mean) / a.mean if a.mean else math.nan
    if a.n < 2 or b.n < 2 or not a.mean:
        return Change(a, b, rel, None, None)
    if a.mean > 0 and b.mean > 0:
        r = ratio(b, a)
        if r.low is None or r.high is None:
            return Change(a, b, rel, None, None)
        return Change(a, b, rel, r.low - 1, r.high - 1)
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return Change(a, b, rel, rel, rel)
    df = (va + vb) ** 2 / ((va**2 / (a.n - 1)) + (vb**2 / (b.n - 1))) if va + vb else a.n + b.n - 2
    h = t_two_sided(min(a.alpha, b.alpha), df) * se / abs(a.mean)
    return Change(a, b, rel, rel - h, rel + h)


@dataclass(frozen=True)
class Ratio:
    value: float
    low: float | None
    high: float | None


def ratio(num: Summary, den: Summary) -> Ratio:
    """num.mean / den.mean with a 95% interval by the delta method on log scale."""
    if not den.mean or not num.mean or num.mean <= 0 or den.mean <= 0:
        return Ratio(math.nan, None, None)
    r = num.mean / den.mean
    se_num, se_den = num.se, den.se
    if se_num is None or se_den is None:  # fewer than 2 repetitions
        return Ratio(r, None, None)
    ra, rb = (se_num / num.mean) ** 2, (se_den / den.mean) ** 2
    s = math.sqrt(ra + rb)
    if s == 0:
        return Ratio(r, r, r)
    df = welch_df(ra, num.n, rb, den.n)
    h = t_two_sided(min(num.alpha, den.alpha), df) * s
    return Ratio(r, r * math.exp(-h), r * math.exp(h))


def welch_df(va: float, n_a: int, vb: float, n_b: int) -> float:
    """Welch's degrees of freedom of a difference whose two sides' variances (of their means) are va and vb.
    A side with no spread adds nothing, so the other side's n - 1 (the limit of Welch's formula), not the
    larger n - 1; neither with any: the two together, n_a + n_b - 2 (the interval is then a point anyway)."""
    if va and vb:
        return (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    if va or vb:
        return float((n_a if va else n_b) - 1)
    return float(n_a + n_b - 2)


def ratio_of_ratios(num: Ratio, den: Ratio) -> Ratio:
    """num / den of two independent ratios; the log-scale half-widths of their 95% intervals add in
    quadrature (each already carries its own t quantile, so this is slightly conservative)."""
    if not (num.value > 0 and den.value > 0):
        return Ratio(math.nan, None, None)
    r = num.value / den.value
    if num.low is None or den.low is None or num.high is None or den.high is None:
        return Ratio(r, None, None)
    h = math.hypot(math.log(num.high / num.value), math.log(den.high / den.value))
    return Ratio(r, r * math.exp(-h), r * math.exp(h))


def t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    return float(_scipy()[0].t.cdf(x, df))


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (0 < p < 1); df rounded to 3 decimals and cached (the rounding moves a
    quantile by far less than its own precision matters)."""
    if not 0 < p < 1:
        raise ValueError("p must lie in (0, 1)")
    return _t_quantile(p, round(df, 3))


@functools.lru_cache(maxsize=65536)
def _t_quantile(p: float, df: float) -> float:
    return float(_scipy()[0].t.ppf(p, df)) if df < 1e7 else norm_quantile(p)


@functools.lru_cache(maxsize=65536)
def norm_quantile(p: float) -> float:
    """The p-quantile of the standard normal."""
    return float(_scipy()[0].norm.ppf(p))


def norm_cdf(x: float) -> float:
    """P(Z <= x) for the standard normal."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def f_sf(x: float, d1: float, d2: float) -> float:
    """P(F > x) for Fisher's F with (d1, d2) degrees of freedom."""
    return float(_scipy()[0].f.sf(x, d1, d2)) if x > 0 else 1.0


def chi2_sf(x: float, k: float) -> float:
    """P(X > x) for a chi-square with k degrees of freedom."""
    return float(_scipy()[0].chi2.sf(x, k)) if x > 0 else 1.0


# Gauss-Hermite nodes for the integral over the shared normal; Gauss-Legendre nodes over the chi variable's
# probability scale (its quantiles: dense in both tails), exact to 1e-3 in d at every df
_HERMITE = np.polynomial.hermite_e.hermegauss(40)
_LEGENDRE = np.polynomial.legendre.leggauss(40)


def dunnett_one_sided(lambdas: tuple[float, ...], df: float, alpha: float) -> float:
    """The one-sided critical value d of k comparisons with one stack: P(max_j T_j <= d) = 1 - alpha, where
    T_j = Z_j / S, Z normal with correlations lambda_i lambda_j (each comparison's share of the stack's own
    variance: the comparisons with one stack of stacks estimated independently), S^2 a chi-square over df
    (df 0 or above 1e6: known variance). Dunnett (JASA 50, 1955): P = E_S E_Z0 prod_j Phi((d S - lambda_j
    Z0) / sqrt(1 - lambda_j^2)). One comparison: Student's one-sided quantile."""
    lam = tuple(sorted(round(min(max(x, 0.0), 0.995), 2) for x in lambdas))
    return _dunnett(lam, _df_grid(df), round(alpha, 8))


def _df_grid(df: float) -> float:
    """Degrees of freedom rounded down onto a grid (so the critical values cache; rounding down is the
    conservative side): steps of 0.1 below 10, of 1 below 200; 0 (known variance) beyond, or for 0."""
    if not 0 < df < 200:
        return 0.0
    return max(math.floor(df * 10) / 10, 1.0) if df < 10 else float(math.floor(df))


@functools.lru_cache(maxsize=16384)
def _dunnett(lam: tuple[float, ...], df: float, alpha: float) -> float:
    if alpha <= 0:
        return math.inf
    if len(lam) == 1:
        return t_quantile(1 - alpha, df) if df else norm_quantile(1 - alpha)
    stats, special, optimize = _scipy()
    x, w = _HERMITE
    w = w / w.sum()
    lv = np.array(lam)[:, None]
    root = np.sqrt(1 - lv**2)
    if df:
        u, wu = (_LEGENDRE[0] + 1) / 2, _LEGENDRE[1] / 2
        s = stats.chi.ppf(u, df) / math.sqrt(df)
    else:
        s, wu = np.ones(1), np.ones(1)

    def below(d: float) -> float:
        z = special.ndtr((d * s[:, None, None] - lv[None, :, :] * x[None, None, :]) / root[None, :, :])
        return float(wu @ (np.prod(z, axis=1) @ w)) - (1 - alpha)

    hi = 4.0
    while below(hi) < 0:
        hi *= 2
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(below, 0.0, hi, xtol=1e-5))


def fewest_repetitions(half: Callable[[int], float], room: float, n0: float, cap: int) -> int | None:
    """The fewest repetitions above `n0`, at most `cap`, at which an interval's half-width `half(n)` (falling
    with n) clears `room`; None when even `cap` does not."""
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
