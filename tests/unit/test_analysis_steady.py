"""analysis/steady.py: SNIA PTS steady state over the last `window` samples."""

import pytest

from strata.steady import detect


def test_flat_series_is_steady():
    r = detect([100, 101, 99, 100, 100, 101, 100])
    assert r["steady"] and r["judged"]
    assert r["window_s"] == 5
    assert r["mean"] == pytest.approx(100.0)  # the last 5: 99, 100, 100, 101, 100
    assert r["range_pct"] == pytest.approx(2.0)


def test_only_the_last_window_counts():
    assert detect([5, 500, 1, 100, 100, 100, 100, 100])["steady"]


def test_ramp_fails_on_slope():
    # range 16% (<= 20%) but the fitted line climbs 16% of the mean over the window (> 10%)
    r = detect([92, 96, 100, 104, 108])
    assert not r["steady"]
    assert r["slope_pct"] == pytest.approx(16.0)
    assert r["range_pct"] == pytest.approx(16.0)
    assert "slope excursion" in r["reason"] and "range" not in r["reason"].split(":")[1]


def test_noise_fails_on_range():
    r = detect([80, 120, 100, 120, 80])
    assert not r["steady"]
    assert r["range_pct"] == pytest.approx(40.0)
    assert r["slope_pct"] == pytest.approx(0.0)


def test_too_few_samples_is_not_judged_and_says_what_to_do():
    r = detect([1.0, 2.0])
    assert r == {**r, "steady": False, "judged": False, "window_s": 2, "mean": None}
    assert "runtime" in r["reason"]


def test_stalled_workload():
    r = detect([0, 0, 0, 0, 0])
    assert not r["steady"] and "stalled" in r["reason"]


def test_window_parameter():
    vals = [50, 100, 100, 100]
    assert not detect(vals, window=5)["judged"]
    assert detect(vals, window=3)["steady"]
    with pytest.raises(ValueError):
        detect(vals, window=1)


def test_result_keys():
    assert {"steady", "window_s", "mean", "range_pct", "slope_pct", "reason"} <= set(detect([1] * 5))
