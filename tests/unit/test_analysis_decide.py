"""analysis/decide.py, racing.py, variance.py: decisions, racing, where the noise lives (issue 21)."""

import math
import random

import pytest

from strata.analysis.decide import BETTER, EQUIVALENT, UNDECIDED, WORSE, Design, answer, repetitions_for
from strata.analysis.racing import DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE, race
from strata.analysis.stats import summarize, t975, t_cdf, t_quantile
from strata.analysis.variance import components, shorter_trials


def test_t_quantile_agrees_with_the_table_and_the_cdf():
    for df in (1, 2, 3, 5, 10, 29, 30):
        assert t_quantile(0.975, df) == pytest.approx(t975(df), abs=2e-3)
    assert t_quantile(0.995, 10) == pytest.approx(3.1693, abs=1e-3)  # a textbook value
    for p in (0.6, 0.9, 0.999):
        assert t_cdf(t_quantile(p, 7.5), 7.5) == pytest.approx(p, abs=1e-9)
    assert t_quantile(0.1, 4) == pytest.approx(-t_quantile(0.9, 4))


def test_equivalent_when_the_whole_interval_lies_within_the_margin():
    a, b = summarize([1000, 1004, 996, 1002]), summarize([990, 994, 986, 992])
    ans = answer(a, b, 0.05)
    assert ans.outcome == EQUIVALENT and ans.low > 1 / 1.05 and ans.high < 1.05
    assert "equivalent within +-5%" in ans.text()


def test_better_and_worse_beyond_the_margin():
    a, b = summarize([1000, 1010, 990]), summarize([1500, 1510, 1490])
    assert answer(a, b).outcome == BETTER and answer(b, a).outcome == WORSE
    assert answer(b, a).beyond_margin
    # lower is better (latency): the same interval, the other word
    assert answer(a, b, higher_is_better=False).outcome == WORSE


def test_undecided_says_the_margin_the_data_support():
    a, b = summarize([1000, 1100, 900]), summarize([1010, 910, 1110])
    ans = answer(a, b, 0.05)
    assert ans.outcome == UNDECIDED
    assert ans.supported == pytest.approx(max(ans.high, 1 / ans.low) - 1)
    assert f"no difference above {ans.supported:.0%}" in ans.text()


def test_ratio_interval_never_crosses_minus_100_percent():
    """Issue 25: two repetitions, a large spread: the log-scale interval stays above -100%."""
    ans = answer(summarize([1000, 1400]), summarize([150, 400]))
    assert ans.low > 0 and ans.rel_low > -1
    assert ans.high - ans.ratio > ans.ratio - ans.low  # asymmetric, as a ratio's interval is


def test_a_sequential_design_spends_alpha_over_its_looks():
    d = Design(3, 10)
    assert d.sequential and d.looks == 8 and d.alpha() == pytest.approx(0.05 / 8)
    assert not Design().sequential and Design().alpha() == pytest.approx(0.05)
    assert Design.of({"repetitions": "auto", "min": 3, "max": 10, "margin": 0.05}) == d
    assert Design.of({"repetitions": 3}) == Design() and Design.of(None) == Design()
    vals_a, vals_b = [1000, 1030, 970, 1010], [900, 930, 870, 910]
    plain = answer(summarize(vals_a), summarize(vals_b))
    wide = answer(summarize(vals_a, d.alpha()), summarize(vals_b, d.alpha()))
    assert wide.low < plain.low and wide.high > plain.high  # more looks, wider intervals


def test_intervals_stay_valid_when_we_look_after_every_round():
    """Optional stopping: stop as soon as the interval excludes 1 (the worst a user could do). With the
    plain 95% interval the false decisions pile up over 10 looks; with alpha spent over the looks they
    stay below 5%."""
    rng = random.Random(7)
    design = Design(3, 12)
    false_plain = false_seq = 0
    runs = 600
    for _ in range(runs):
        a = [rng.gauss(100, 10) for _ in range(12)]
        b = [rng.gauss(100, 10) for _ in range(12)]
        hit_plain = hit_seq = False
        for n in range(3, 13):
            hit_plain |= answer(summarize(a[:n]), summarize(b[:n]), 0.0001).outcome in (BETTER, WORSE)
            s_a, s_b = summarize(a[:n], design.alpha()), summarize(b[:n], design.alpha())
            hit_seq |= answer(s_a, s_b, 0.0001).outcome in (BETTER, WORSE)
        false_plain += hit_plain
        false_seq += hit_seq
    assert false_plain / runs > 0.1  # the plain interval, looked at 10 times, is wrong far beyond 5%
    assert false_seq / runs < 0.05


def test_repetitions_for_shrinks_with_the_spread():
    a, b = summarize([1000, 1100, 900]), summarize([950, 1050, 850])
    n = repetitions_for(a, b, 0.05)
    assert n is not None and n > 3
    tight = repetitions_for(summarize([1000, 1010, 990]), summarize([950, 960, 940]), 0.05)
    assert tight is not None and tight < n
    # near the margin's edge with a 30% spread: hundreds (the advice then says no number will do)
    assert repetitions_for(summarize([1000, 1300, 700]), summarize([952, 1240, 665]), 0.05) > 200


def test_race_eliminates_far_behind_and_ends_the_leader_when_all_is_decided():
    d = Design(3, 10)
    group = {
        "lead": summarize([1000, 1005, 995, 1002], d.alpha()),
        "same": summarize([999, 1003, 996, 1001], d.alpha()),
        "far": summarize([500, 505, 495, 502], d.alpha()),
    }
    assert race(group, 0.05, d) == {"same": EQUIVALENT_STOP, "far": ELIMINATED, "lead": DECIDED}


def test_race_goes_on_while_a_comparison_can_still_be_decided():
    d = Design(3, 30)
    group = {"lead": summarize([1000, 1050, 950], d.alpha()), "near": summarize([980, 1030, 930], d.alpha())}
    assert race(group, 0.05, d) == {}  # the first look: too rough to give up on
    # at a later look, a comparison no number of repetitions up to the maximum decides is undecidable
    d2 = Design(3, 5)
    group = {
        k: summarize(v, d2.alpha()) for k, v in {"lead": [1000, 1300, 700, 1000], "x": [950, 1250, 650, 950]}.items()
    }
    out = race(group, 0.05, d2)
    assert out["x"] == UNDECIDABLE and out["lead"] == UNDECIDABLE


def test_race_needs_every_member_to_have_an_interval():
    d = Design(3, 10)
    assert race({"a": summarize([1, 2, 3]), "b": summarize([5])}, 0.05, d) == {}
    assert race({"a": summarize([1, 2, 3])}, 0.05, d) == {}


def test_variance_components_find_the_trial_to_trial_spread():
    rng = random.Random(3)
    series = []
    for _ in range(12):
        level = 1000 * math.exp(rng.gauss(0, 0.10))
        series.append([level * (1 + rng.gauss(0, 0.02)) for _ in range(20)])
    c = components(series, overhead_s=4.0)
    assert c.trials == 12 and c.seconds == 20
    assert c.within_cv == pytest.approx(0.02, rel=0.2)
    assert 0.05 < c.between_cv < 0.16 and c.between_dominates
    n, seconds = shorter_trials(c, 3)
    assert seconds == 5 and n > 3  # 5 s trials: the shortest the steady check judges
    assert components([[1.0, 2.0]]) is None


def test_no_shorter_trials_when_the_seconds_hold_the_noise():
    series = [[1000 * (1 + 0.2 * ((i * 7 + j) % 5 - 2) / 2) for j in range(30)] for i in range(4)]
    c = components(series, overhead_s=4.0)
    assert not c.between_dominates and shorter_trials(c, 3) is None
