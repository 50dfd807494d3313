"""Means, 95% confidence intervals and differences between repetitions.

Repetitions of a trial (labels.repetition) are few (2 to 10), so intervals use
Student's t with Welch's unequal-variance degrees of freedom (Welch 1947; as in
pyperf's `compare_to` and hyperfine's `--export-json` analysis scripts). A
ratio (stack / raw device) and a relative change of positive quantities get
their interval on the log scale by the delta method, so a throughput is never
"112% lower". No SciPy: the 95% t quantiles are tabulated, others computed from
the incomplete beta function.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

CONFIDENCE = 0.95
CONFIDENCE_ALPHA = 1 - CONFIDENCE
# two-sided 95% quantiles of Student's t, df = 1..30
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975 = 1.959964


def t975(df: float) -> float:
    """Two-sided 95% quantile of t with `df` degrees of freedom (fractional df interpolated in 1/df)."""
    if df < 1:
        df = 1.0
    if df <= 30:
        lo = int(math.floor(df))
        if lo == df or lo >= 30:
            return _T975[lo - 1]
        w = (1 / df - 1 / (lo + 1)) / (1 / lo - 1 / (lo + 1))
        return w * _T975[lo - 1] + (1 - w) * _T975[lo]
    z = _Z975  # Cornish-Fisher expansion, exact to 3 decimals beyond df 30
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float
    ci_low: float | None
    ci_high: float | None
    # the error rate its intervals spend: 5% for fixed repetitions, less for one look of `repetitions:
    # auto` (analysis/decide.py: alpha spending keeps intervals valid under optional stopping)
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
    df = (ra + rb) ** 2 / (ra**2 / (num.n - 1) + rb**2 / (den.n - 1)) if ra and rb else max(num.n, den.n) - 1
    h = t_two_sided(min(num.alpha, den.alpha), df) * s
    return Ratio(r, r * math.exp(-h), r * math.exp(h))


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
    """P(T <= x) for Student's t with `df` degrees of freedom (through the regularized incomplete beta)."""
    if df <= 0:
        raise ValueError("df must be positive")
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + x * x))
    return 1 - tail if x > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t; df rounded to 3 decimals and cached (the rounding moves a quantile
    by far less than its own precision matters)."""
    return _t_quantile(p, round(df, 3))


@functools.lru_cache(maxsize=65536)
def _t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (0 < p < 1): Newton's method on t_cdf from the normal quantile, bisection
    where Newton strays: any level, not only 95%, for the levels a sequential design and a group's pairs leave
    to one interval (analysis/decide.py)."""
    if not 0 < p < 1:
        raise ValueError("p must lie in (0, 1)")
    if p < 0.5:
        return -_t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
        if hi > 1e12:
            return math.inf
    x = (lo + hi) / 2
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(200):
        f = t_cdf(x, df) - p
        if f < 0:
            lo = x
        else:
            hi = x
        pdf = math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))
        step = f / pdf if pdf > 0 else math.inf
        nxt = x - step
        if not lo < nxt < hi:  # Newton left the bracket: bisect
            nxt = (lo + hi) / 2
        if abs(nxt - x) < 1e-12 * max(1.0, abs(x)):
            return nxt
        x = nxt
    return x


def f_sf(x: float, d1: float, d2: float) -> float:
    """P(F > x) for Fisher's F with (d1, d2) degrees of freedom."""
    if x <= 0:
        return 1.0
    return _betainc(d2 / 2, d1 / 2, d2 / (d2 + d1 * x))


def chi2_sf(x: float, k: float) -> float:
    """P(X > x) for a chi-square with k degrees of freedom (the regularized upper incomplete gamma)."""
    if x <= 0:
        return 1.0
    a, z = k / 2, x / 2
    ln_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # the series converges here
        term = total = 1 / a
        for i in range(1, 500):
            term *= z / (a + i)
            total += term
            if term < total * 1e-15:
                break
        return max(0.0, 1 - math.exp(ln_front) * total)
    tiny = 1e-300  # else the continued fraction (modified Lentz)
    b = z + 1 - a
    c, d = 1 / tiny, 1 / b
    f = d
    for i in range(1, 500):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        f *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(ln_front) * f


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, modified Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x > (a + 1) / (a + b + 2):  # the continued fraction converges fast on this side only
        return 1 - _betainc(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return math.exp(ln_front) * f / a
