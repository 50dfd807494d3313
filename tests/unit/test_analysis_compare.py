"""analysis/compare.py: matched on labels, not trial ids."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import HOST, make_result  # noqa: E402

from strata.analysis.compare import compare  # noqa: E402


def test_match_on_labels_across_hosts():
    a = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((100, 101, 99))]
    b = [
        make_result(fs="xfs", rep=i, value=v, size=2 << 30, host={**HOST, "hostname": "b"})
        for i, v in enumerate((120, 121, 119))
    ]
    assert {r["trial_id"] for r in a}.isdisjoint(r["trial_id"] for r in b)
    b += [make_result(fs="ext4", rep=0, value=5)]
    cmp = compare(a, b)
    (m,) = cmp.matches
    assert m.change.rel == 0.2 or abs(m.change.rel - 0.2) < 1e-9
    assert m.status == "higher" and m.change.rel_low > 0
    assert cmp.only_b and not cmp.only_a


def test_cache_flagged_trials_are_not_compared_as_device():
    a = [make_result(rep=i, value=100) for i in range(2)]
    b = [make_result(rep=i, value=1000, cache=True) for i in range(2)]
    assert compare(a, b).matches == []


def test_compare_says_same_only_within_five_percent_and_undecided_otherwise():
    a = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((1000, 1002, 998))]
    same = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((1001, 999, 1003))]
    noisy = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((900, 1150, 1000))]
    one = [make_result(fs="xfs", rep=0, value=1500)]
    assert [m.status for m in compare(a, same).matches] == ["same"]
    assert [m.status for m in compare(a, noisy).matches] == ["undecided"]
    assert [m.status for m in compare(a, one).matches] == ["undecided"]


def test_compare_interval_of_a_ratio_never_crosses_minus_100_percent():
    """Two repetitions and a large spread: the log-scale interval stays above -100%, asymmetric."""
    a = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((1000, 1400))]
    b = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((150, 400))]
    (m,) = compare(a, b).matches
    assert -1 < m.change.rel_low < m.change.rel < m.change.rel_high
    assert m.change.rel_high - m.change.rel > m.change.rel - m.change.rel_low
