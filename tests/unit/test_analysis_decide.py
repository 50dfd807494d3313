"""analysis/decisions/answer.py, sequential.py, groups.py, racing.py, variance.py: decisions, looks, group comparisons,
racing, where the noise lives (issues 21 and 34)."""

import math
import random

import pytest

from strata.analysis.cells.variance import components, shorter_trials
from strata.analysis.decisions.answer import BETTER, EQUIVALENT, UNDECIDED, WORSE, Design, answer
from strata.analysis.decisions.criterion import repetitions_for
from strata.analysis.decisions.groups import (
    BLOCKED,
    BLOCKED_PER_STACK,
    POOLED,
    WELCH,
    Runs,
    compare,
    repetitions_to_decide,
)
from strata.analysis.decisions.racing import DECIDED, ELIMINATED, EQUIVALENT_STOP, UNDECIDABLE, chance_to_decide, race
from strata.analysis.decisions.sequential import levels
from strata.analysis.decisions.stats import summarize, t975, t_cdf, t_quantile
from strata.experiment.looks import planned_looks


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


def test_planned_looks_and_their_levels_are_the_published_lan_demets_pocock_boundaries():
    """Issue 34: a few planned looks, the error spent over them (Lan & DeMets 1983, Pocock-type function):
    the boundaries computed here are the published ones (2.157 and 2.201 for two equally spaced looks;
    2.438 to 2.386 for five), not the union bound over every round."""
    assert planned_looks(3, 10) == (3, 6, 10) and planned_looks(3, 6) == (3, 6) and planned_looks(5, 5) == (5,)
    z = [t_quantile(1 - a / 2, 1e9) for a in levels((0.5, 1.0), 0.05, sides=2)]
    assert z == pytest.approx([2.157, 2.201], abs=2e-3)
    z = [t_quantile(1 - a / 2, 1e9) for a in levels((0.2, 0.4, 0.6, 0.8, 1.0), 0.05, sides=2)]
    assert z == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)
    # one-sided (issue 41): the same boundaries at twice the level (the other side is never crossed), and a
    # single look spends all of it
    one = [t_quantile(1 - a, 1e9) for a in levels((0.5, 1.0), 0.025)]
    assert one == pytest.approx([2.157, 2.201], abs=5e-3)
    assert levels((1.0,), 0.05) == pytest.approx((0.05,))


def test_a_design_reads_its_looks_and_old_results_keep_their_union_bound():
    d = Design.auto(3, 10)
    assert d.sequential and d.looks == (3, 6, 10) and d.is_look(6) and not d.is_look(5) and d.final == 10
    assert Design.of({"repetitions": "auto", "min": 3, "max": 10, "looks": [3, 6, 10], "margin": 0.05}) == d
    # stored before looks were planned: every round was a look, each alpha / 8 (read as it was run)
    old = Design.of({"repetitions": "auto", "min": 3, "max": 10, "margin": 0.05})
    assert old.spending == "bonferroni" and old.level(4) == pytest.approx(0.05 / 8)
    assert Design.of({"repetitions": 3}) == Design() and Design().level(7) == pytest.approx(0.05)
    # a planned look spends what the spending function gives it (one-sided for the group comparisons,
    # two-sided for a configuration's own interval); the budget ending the run at 4 makes 4 the last look,
    # which spends all that is left; before the first look, the same
    first, at_4 = d.level(3), d.level(4)
    assert d.level(3, sides=2) == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.3))
    assert first == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.3))
    assert first < at_4 < 0.05 and d.level(2) == pytest.approx(0.05)
    # issue 41: looks the budget cannot pay for are not planned: one look at 3 is a fixed design's 5%
    paid = Design.of({"repetitions": "auto", "min": 3, "max": 6, "looks": [3], "margin": 0.05})
    assert not paid.sequential and paid.final == 3 and paid.level(3) == pytest.approx(0.05)
    assert Design.of({"repetitions": "auto", "min": 3, "max": 6, "looks": [3, 6]}).level(3) < 0.035


def _wrong(cmp, truth):
    """Any answer of a group the truth contradicts (MCB's reading): no true best among the stacks that may be
    the best, or a bound of a stack's ratio to the best above the true ratio, or the leader's lead above its
    bound."""
    top = max(truth.values())
    if not any(truth[k] == top for k in cmp.best):
        return True
    pairs = [*cmp.answers.items(), (cmp.leader, cmp.own)]
    if any(a.low is not None and math.log(a.low) > math.log(truth[k] / top) + 1e-12 for k, a in pairs):
        return True
    if cmp.lead_high is not None:
        lead = truth[cmp.leader] / max(v for k, v in truth.items() if k != cmp.leader)
        return lead > cmp.lead_high or lead < 1
    return False


def test_intervals_stay_valid_when_we_look_and_stop_at_the_first_decision():
    """Optional stopping: stop as soon as the best is called worse or a bound misses (the worst a user could
    do). With a plain one-sided 95% look after every round the errors pile up; at the planned looks, with the
    error spent over them, they stay near 5% (Student's t at the looks' nominal levels is approximate at few
    degrees of freedom; the bound allows for that and for this test's own error of 0.6%)."""
    rng = random.Random(7)
    design, plain = Design.auto(3, 12), Design.auto(3, 12, tuple(range(3, 13)))
    truth = {"a": 100.0, "b": 98.0}
    false_plain = false_seq = 0
    runs = 1000
    for _ in range(runs):
        a = [rng.gauss(100, 10) for _ in range(12)]
        b = [rng.gauss(98, 10) for _ in range(12)]
        hit_plain = hit_seq = False
        for n in range(3, 13):
            g = {"a": Runs.of(a[:n], range(n)), "b": Runs.of(b[:n], range(n))}
            hit_plain |= _wrong(compare(g, 0.0001), truth)  # 5% at every round: a fixed design's level
            if design.is_look(n):
                hit_seq |= _wrong(compare(g, 0.0001, design), truth)
        false_plain += hit_plain
        false_seq += hit_seq
    assert plain.looks == tuple(range(3, 13))
    assert false_plain / runs > 0.1  # looked at 10 times at 5% each, wrong far beyond 5%
    assert false_seq / runs < 0.07


def test_repetitions_for_shrinks_with_the_spread():
    a, b = summarize([1000, 1100, 900]), summarize([950, 1050, 850])
    n = repetitions_for(answer(a, b, 0.05))
    assert n is not None and n > 3
    tight = repetitions_for(answer(summarize([1000, 1010, 990]), summarize([950, 960, 940]), 0.05))
    assert tight is not None and tight < n
    # near the margin's edge with a 30% spread: hundreds (the advice then says no number will do)
    assert repetitions_for(answer(summarize([1000, 1300, 700]), summarize([952, 1240, 665]), 0.05)) > 200


def group(**values):
    return {k: Runs.of(v, range(len(v))) for k, v in values.items()}


def test_race_eliminates_far_behind_and_ends_the_leader_when_all_is_decided():
    d = Design.auto(3, 10)
    g = group(
        lead=[1000, 1005, 995, 1002, 998, 1001],
        same=[999, 1003, 996, 1001, 1000, 998],
        far=[500, 505, 495, 502, 499, 501],
    )
    assert race(g, 0.05, d) == {"same": EQUIVALENT_STOP, "far": ELIMINATED, "lead": DECIDED}


def test_race_goes_on_while_a_comparison_can_still_be_decided_and_stops_what_cannot_be():
    d = Design.auto(3, 10)
    # 8% apart at 5% noise after 3 rounds: not yet decided at this look's level, likely by 10
    g = group(lead=[1000, 1050, 950], near=[920, 970, 870])
    cmp = compare(g, 0.05, d)
    assert cmp.answers["near"].outcome == UNDECIDED and chance_to_decide(cmp, "near", d) > 0.5
    assert race(g, 0.05, d) == {}
    # 1% apart at 20% noise after 6 rounds: no number up to 10 decides it, allowing for what the gap may be
    g = group(lead=[1000, 1200, 800, 1100, 900, 1000], x=[990, 1190, 790, 1090, 890, 990])
    cmp = compare(g, 0.05, d)
    assert chance_to_decide(cmp, "x", d) < 0.1
    assert race(g, 0.05, d) == {"x": UNDECIDABLE, "lead": UNDECIDABLE}
    # at the first look, with 3 trials, the gap is too rough to give up on: it may well be large
    g3 = {k: Runs.of(r.values[:3], range(3)) for k, r in g.items()}
    assert chance_to_decide(compare(g3, 0.05, d), "x", d) > 0.1


def test_a_stack_with_a_single_trial_does_not_stop_racing_for_its_group():
    """Issue 34 (racing.py): one stack with a single successful trial (the others failed) made the whole
    group go on to max_repetitions; now the others are raced without it, and it goes on on its own."""
    d = Design.auto(3, 10)
    g = group(lead=[1000, 1005, 995], far=[500, 505, 495], one=[700])
    out = race(g, 0.05, d)
    assert out["far"] == ELIMINATED and "one" not in out and out["lead"] == DECIDED
    assert race({"a": Runs.of([1, 2, 3]), "b": Runs.of([5])}, 0.05, d) == {}
    assert race({"a": Runs.of([1, 2, 3])}, 0.05, d) == {}


def test_the_variance_is_pooled_when_the_cvs_agree_and_not_when_they_do_not():
    rng = random.Random(2)
    alike = {k: Runs.of([1000 * (1 + rng.gauss(0, 0.05)) for _ in range(4)]) for k in "abcde"}
    cmp = compare(alike, 0.05)
    assert cmp.method == POOLED and all(a.df == 15 for a in cmp.answers.values())  # sum(n_i - 1)
    unlike = dict(alike, f=Runs.of([1000, 1400, 600, 1100]))
    assert compare(unlike, 0.05).method == WELCH


def test_the_leader_the_data_pick_keeps_the_whole_group_valid():
    """Issues 34 and 41: one stack 3% ahead of nine equal ones; the leader is the luckiest. Compared with it one
    pair at a time at 95%, some interval misses its true ratio in many groups; the group's one-sided
    comparisons with the best (Hsu) miss in at most 5% of them."""
    rng = random.Random(11)
    truth = {f"s{i}": 1030.0 if i == 0 else 1000.0 for i in range(10)}
    runs, old_wrong, new_wrong = 300, 0, 0
    for _ in range(runs):
        g = {k: Runs.of([m * (1 + rng.gauss(0, 0.05)) for _ in range(5)], range(5)) for k, m in truth.items()}
        cmp = compare(g, 0.05)
        new_wrong += _wrong(cmp, truth)
        lead = summarize(g[cmp.leader].values)
        old_wrong += any(
            not (a.low <= truth[k] / truth[cmp.leader] <= a.high)
            for k, r in g.items()
            if k != cmp.leader
            for a in [answer(lead, summarize(r.values))]
        )
    assert old_wrong / runs > 0.2 and new_wrong / runs <= 0.05


def test_a_stack_tied_with_the_best_is_never_called_worse_through_a_third():
    """Multiple comparisons with the best: a stack is worse only when it is below a stack that may be the
    best by more than that stack's critical distance, so its tie with the best (here b, unknown to the data)
    cannot be read as 'worse'; and a worse stack's bound is taken against every stack that may be the best."""
    g = group(a=[1000, 1004, 996, 1001], b=[1010, 975, 1000, 985], c=[930, 935, 925, 932])
    cmp = compare(g, 0.05)
    assert cmp.leader == "a" and set(cmp.best) >= {"a", "b"}
    assert cmp.answers["c"].outcome == WORSE and cmp.answers["b"].outcome != WORSE
    t = cmp.fit.effect
    want = min(t["c"] - t[j] - cmp.fit.critical(j, "c", cmp.level) * cmp.pair(j, "c").se for j in cmp.best)
    assert math.log(cmp.answers["c"].low) == pytest.approx(want)


def test_every_group_of_three_or_more_is_blocked_and_a_pair_is_not():
    """Issue 41: the rounds are the blocks of every group of three or more (no pretest: a slow round for every
    stack cancels from their differences, and the stack effects are least squares over all trials); two
    stacks are compared without blocks (2(n - 1) degrees of freedom, valid whatever the rounds hold)."""
    rng = random.Random(4)
    rounds = [math.exp(rng.gauss(0, 0.15)) for _ in range(6)]
    g = {
        k: Runs.of([m * r * (1 + rng.gauss(0, 0.01)) for r in rounds], range(6))
        for k, m in zip("abc", (1000, 990, 900))
    }
    cmp = compare(g, 0.05)
    assert cmp.method in (BLOCKED, BLOCKED_PER_STACK) and cmp.round_share > 0.9 and cmp.fit.df == (3 - 1) * (6 - 1)
    unblocked = compare({k: Runs.of(r.values) for k, r in g.items()}, 0.05)  # rounds unknown
    assert unblocked.method in (POOLED, WELCH)
    for k in ("b", "c"):
        assert cmp.answers[k].low > unblocked.answers[k].low  # the shared noise left the error term
    # no round effect at all: still blocked, at the cost of R - 1 degrees of freedom only
    quiet = {
        k: Runs.of([m * (1 + rng.gauss(0, 0.05)) for _ in range(4)], range(4)) for k, m in zip("abcd", (1, 1, 1, 1))
    }
    assert compare(quiet, 0.05).method in (BLOCKED, BLOCKED_PER_STACK)
    pair = compare({k: g[k] for k in "ab"}, 0.05)
    assert pair.method in (POOLED, WELCH) and pair.fit.df == 2 * (6 - 1)


def test_racing_leaves_stacks_at_different_repetitions_and_every_trial_counts():
    """Least-squares stack effects over all trials: a stack raced out at 3 still lends its rounds to the fit,
    and the two that went on to 6 are compared on all six of theirs (the old rule compared a pair within
    the rounds both ran only)."""
    rng = random.Random(9)
    rounds = [math.exp(rng.gauss(0, 0.1)) for _ in range(6)]
    vals = {k: [m * r * math.exp(rng.gauss(0, 0.03)) for r in rounds] for k, m in zip("abc", (1000, 980, 700))}
    g = {"a": Runs.of(vals["a"], range(6)), "b": Runs.of(vals["b"], range(6)), "c": Runs.of(vals["c"][:3], range(3))}
    cmp = compare(g, 0.05)
    assert cmp.fit.df == (6 + 6 + 3) - 3 - 5  # trials less stacks less rounds - 1
    mean_diff = sum(math.log(y) - math.log(x) for x, y in zip(vals["a"], vals["b"])) / 6
    assert cmp.pair("a", "b").estimate == pytest.approx(mean_diff)  # both ran every round: the paired mean
    assert cmp.answers["c"].outcome == WORSE


def test_a_stack_four_times_noisier_gets_its_own_variance():
    """Issue 41: where the stacks' residual spreads disagree, the one that stands out gets its own variance
    (Satterthwaite's degrees of freedom), and its comparisons widen. Issue 54: no variance of that branch
    below the one-variance rule's, so the quiet stacks' comparisons are never narrower than that rule's (the
    branch is taken because one stack's residuals came out large: the others' pooled variance is then, given
    the test, biased low)."""
    rng = random.Random(3)
    g = {
        k: Runs.of([m * math.exp(rng.gauss(0, 0.02)) for _ in range(6)], range(6))
        for k, m in zip("abc", (1000, 990, 980))
    }
    g["d"] = Runs.of([950 * math.exp(rng.gauss(0, 0.3)) for _ in range(6)], range(6))
    cmp = compare(g, 0.05)
    assert cmp.method == BLOCKED_PER_STACK
    assert cmp.pair("a", "d").se > 1.4 * cmp.pair("a", "b").se
    one = compare(g, 0.05, one_variance=True)  # one variance whatever the test (bench/ only)
    assert one.method == BLOCKED and one.pair("a", "b").se == pytest.approx(one.pair("a", "d").se, rel=0.5)
    assert one.pair("a", "d").se < cmp.pair("a", "d").se
    assert cmp.pair("a", "b").se >= one.pair("a", "b").se * 0.999  # the floor
    assert cmp.fit.floored.tolist() == [True, True, True, False]  # the quiet part at s2, the noisy one its own


def test_the_undecided_group_names_the_set_that_may_be_best_and_what_choosing_the_leader_costs():
    """Issue 41: the subset that may be best, every stack's bound relative to the best, the leader's own (what
    choosing it costs at most), and the repetitions that would decide the group."""
    g = group(a=[1000, 1080, 930], b=[1010, 1040, 925], c=[700, 720, 690])
    cmp = compare(g, 0.05)
    assert set(cmp.best) == {"a", "b"} and cmp.answers["c"].outcome == WORSE
    assert cmp.own is not None and cmp.own.outcome == UNDECIDED and 0 < cmp.own.supported < 0.5
    n = repetitions_to_decide(cmp)
    assert n is not None and n > 3


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


def test_no_interval_of_a_group_reaches_below_minus_100_percent():
    """Issue 34: every interval the advice shows is a ratio's (log scale), whatever the spread, the method
    (pooled, by round, Welch, paired) or the look: B/A - 1 never below -100%, the lead A/B - 1 neither."""
    rng = random.Random(5)
    d = Design.auto(3, 10)
    for trial in range(200):
        g, n = rng.randint(2, 6), rng.choice((2, 3, 6, 10))
        cv = rng.choice((0.02, 0.3, 0.9))
        rounds = [math.exp(rng.gauss(0, cv)) for _ in range(n)]
        group = {
            f"s{i}": Runs.of(
                [1000 * (1 - 0.1 * i) * rounds[j] * math.exp(rng.gauss(0, cv)) for j in range(n)], range(n)
            )
            for i in range(g)
        }
        cmp = compare(group, 0.05, d if trial % 2 else Design())
        for a in list(cmp.answers.values()) + [cmp.own]:
            assert a.low > 0 and a.rel_low > -1 and a.high == 1.0
            assert a.low <= min(a.ratio, 1.0)
        assert cmp.lead_high is None or cmp.lead_high >= 1.0


def test_longer_trials_are_advised_where_the_seconds_hold_the_noise():
    """Issue 41 (variance.py): `shorter_trials` could never advise longer trials. With 20%/s within a trial
    and 1% between trials, 5 s trials with 10 s of overhead each are too short: fewer, longer ones narrow the
    interval in the same machine time."""
    from strata.analysis.cells.variance import Components, better_trials

    c = Components(trials=6, seconds=5, mean=1000.0, within_cv=0.20, between_cv=0.01, overhead_s=10.0)
    n, seconds = better_trials(c, 6)
    assert seconds > 10 and n < 6
    assert shorter_trials(c, 6) is None


def test_a_configuration_without_a_stored_repetition_has_a_level():
    """Regression: with `auto`, a configuration whose every trial failed has n = 0; its level divided by zero
    (information fraction 0) and the report crashed."""
    d = Design.auto(3, 6, (3, 6))
    assert 0 < d.level(0) <= 0.05 + 1e-12 and d.level(0) == d.level(1)
