"""analysis/steady.py: SNIA PTS steady state over the last `window` samples."""

import pytest

from strata.results.validity.snia import detect


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


# ---- the drift: what a short trial of a repeated design can show (issue 32) ----

from strata.results import validity  # noqa: E402
from strata.results.validity.snia import drift, drift_t_critical  # noqa: E402


def _series(values):
    return [[t, v] for t, v in enumerate([*values, 1])]  # the last, partial second is dropped


def test_per_second_noise_is_no_drift():
    d = drift([80, 120, 100, 120, 80])  # 40% range: SNIA's range fails, but no trend at all
    assert d["drift_pct"] == pytest.approx(0.0) and d["drift_t"] == pytest.approx(0.0)


def test_a_warm_up_is_a_drift_beyond_the_noise():
    d = drift([60, 75, 88, 97, 100])
    assert d["drift_pct"] > 10 and abs(d["drift_t"]) > drift_t_critical(3)


def test_a_noisy_tilt_is_not_called_a_drift():
    """5 samples of 10% noise tilt the line by more than 10% often; only a slope beyond the noise counts."""
    d = drift([90, 112, 96, 118, 108])
    assert d["drift_pct"] > 10 and abs(d["drift_t"]) < drift_t_critical(3)


def test_t_critical_takes_the_wider_quantile_between_table_keys():
    assert drift_t_critical(3) == pytest.approx(5.841)
    assert drift_t_critical(11) == drift_t_critical(10)  # 11 is between 10 and 12: the wider
    assert drift_t_critical(500) == pytest.approx(2.576)
    with pytest.raises(ValueError):
        drift_t_critical(0)


@pytest.mark.parametrize(
    "design,basis",
    [(None, "snia"), ({"repetitions": 1}, "snia"), ({"repetitions": 3}, "drift"), ({"repetitions": "auto"}, "drift")],
)
def test_the_design_sets_the_basis(design, basis):
    noisy = _series([80, 120, 100, 120, 80])  # not steady by SNIA's range; no drift
    s = validity.steady(noisy, design=design)
    assert s.basis == basis and not s.steady and s.drift is False
    assert s.warns == (basis == "snia")  # a single trial must be steady; a repeated design asks for no drift


def test_a_drift_warns_in_a_repeated_design():
    s = validity.steady(_series([60, 75, 88, 97, 100]), design={"repetitions": "auto"})
    assert s.basis == "drift" and s.drift and s.warns


def test_the_runner_sets_the_basis_once_the_design_is_stored():
    from strata.results.flags import Flag, Flags

    flags = Flags({Flag.STEADY: validity.steady(_series([80, 120, 100, 120, 80]))})
    assert flags.to_json()["steady"]["basis"] == "snia"
    validity.judge_design(flags, {"repetitions": "auto"})
    assert flags.to_json()["steady"]["basis"] == "drift" and not flags.warns(Flag.STEADY)


def test_a_result_stored_before_the_basis_keeps_its_snia_verdict():
    old = {"steady": False, "judged": True, "reason": "not steady", "window_s": 5, "mean": 100.0,
           "range_pct": 40.0, "slope_pct": 0.0}  # fmt: skip
    from strata.results.flags import Flag, Flags

    flags = Flags.from_json({"steady": old})
    validity.judge_design(flags, {"repetitions": 3})
    assert "basis" not in flags.to_json()["steady"]
    assert flags.warns(Flag.STEADY)
