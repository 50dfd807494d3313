"""analysis/decisions/stats.py: t intervals, Welch changes, ratios."""

import math

import pytest

from strata.analysis.decisions.answer import answer
from strata.analysis.decisions.stats import change, ratio, summarize, t975, welch_df


def test_t_quantiles():
    """The published table's values (scipy.stats now computes them; issue 41)."""
    assert t975(1) == pytest.approx(12.706, abs=1e-3)
    assert t975(10) == pytest.approx(2.228, abs=1e-3)
    assert t975(30) == pytest.approx(2.042, abs=1e-3)
    assert t975(120) == pytest.approx(1.980, abs=2e-3)
    assert t975(1000) == pytest.approx(1.962, abs=2e-3)
    assert t975(2.0) > t975(2.5) > t975(3.0)


def test_summary_interval():
    s = summarize([10.0, 12.0, 14.0])
    assert s.n == 3 and s.mean == 12.0 and s.sd == 2.0
    h = 4.303 * 2.0 / math.sqrt(3)
    assert (s.ci_low, s.ci_high) == (pytest.approx(12 - h, abs=1e-3), pytest.approx(12 + h, abs=1e-3))
    assert s.cv == pytest.approx(2 / 12)


def test_single_and_empty():
    assert summarize([5.0]).ci_low is None and summarize([5.0]).cv is None
    assert summarize([]).n == 0


def test_change_significant_and_not():
    a, b = summarize([100, 101, 99, 100]), summarize([120, 121, 119, 120])
    ch = change(a, b)
    assert ch.rel == pytest.approx(0.2)
    assert ch.significant is True and ch.rel_low > 0
    noisy = change(summarize([100, 60, 140]), summarize([110, 70, 150]))
    assert noisy.significant is False
    assert "not significant" in noisy.text()


def test_change_without_repetitions_is_unknown():
    ch = change(summarize([100]), summarize([150]))
    assert ch.significant is None and not ch.known
    assert "too few repetitions" in ch.text()


def test_ratio_interval_contains_value():
    r = ratio(summarize([90, 92, 88]), summarize([100, 101, 99]))
    assert r.value == pytest.approx(0.9)
    assert r.low < 0.9 < r.high
    assert ratio(summarize([90]), summarize([100])).low is None


def test_relative_change_of_a_throughput_never_crosses_minus_100_percent():
    """Issue 25: two repetitions with a large spread (a remote device far slower than a local one): the
    interval of the change is the ratio's, on the log scale: above -100%, and asymmetric."""
    local, remote = summarize([1000.0, 1600.0]), summarize([180.0, 520.0])
    ch = change(local, remote)
    assert ch.rel == pytest.approx(350 / 1300 - 1)
    assert -1 < ch.rel_low < ch.rel < ch.rel_high
    assert ch.rel_high - ch.rel > ch.rel - ch.rel_low
    # the linear (Welch) interval of the same numbers reaches below -100%: what the report used to draw
    va, vb = local.sd**2 / 2, remote.sd**2 / 2
    df = (va + vb) ** 2 / (va**2 + vb**2)
    assert ch.rel - t975(df) * math.sqrt(va + vb) / local.mean < -1


def test_dunnett_critical_values_are_the_published_ones_and_scipys_multivariate_t():
    """Issue 41: the one-sided critical values of comparisons with one stack, against Dunnett's table (JASA 50,
    1955, one-sided 5% and 1%: k comparisons, df) and against scipy.stats.multivariate_t's own (Monte Carlo)
    integration with the same correlations."""
    import numpy as np
    from scipy import stats

    from strata.analysis.decisions.stats import dunnett_one_sided

    lam = (math.sqrt(0.5),)
    table = {(2, 6, 0.05): 2.34, (3, 6, 0.05): 2.56, (4, 6, 0.05): 2.71, (9, 6, 0.05): 3.12, (3, 20, 0.05): 2.19,
             (2, 6, 0.01): 3.61, (3, 6, 0.01): 3.88, (3, 20, 0.01): 2.97, (3, 0, 0.05): 2.06}  # fmt: skip
    for (k, df, alpha), d in table.items():
        assert dunnett_one_sided(lam * k, df, alpha) == pytest.approx(d, abs=0.011), (k, df, alpha)
    assert dunnett_one_sided(lam, 6, 0.05) == pytest.approx(stats.t.ppf(0.95, 6), abs=1e-6)  # one: Student's
    lams = (0.3, 0.6, 0.8)
    corr = np.outer(lams, lams)
    np.fill_diagonal(corr, 1.0)
    d = dunnett_one_sided(lams, 8, 0.05)
    mvt = stats.multivariate_t(loc=np.zeros(3), shape=corr, df=8)
    assert mvt.cdf(np.full(3, d), random_state=1) == pytest.approx(0.95, abs=3e-3)


def test_a_side_with_no_spread_leaves_the_other_sides_degrees_of_freedom():
    """Issue 54: Welch's degrees of freedom when one side has no spread are the other side's n - 1 (the
    formula's limit), not the larger n - 1; the ratio's and the pair's intervals widen accordingly."""
    assert welch_df(0.0, 10, 0.5, 3) == 2 and welch_df(0.5, 3, 0.0, 10) == 2
    assert welch_df(1e-12, 10, 0.5, 3) == pytest.approx(2, rel=1e-6)  # the limit, approached
    assert welch_df(0.0, 4, 0.0, 3) == 5
    flat, noisy = summarize([100.0] * 10), summarize([90.0, 100.0, 110.0])
    r = ratio(noisy, flat)
    h = math.log(r.high / r.value)
    assert h == pytest.approx(t975(2) * (noisy.se / noisy.mean))  # 2 degrees of freedom, not 9
    a = answer(flat, noisy)
    assert a.df == 2
