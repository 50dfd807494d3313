"""bench/oracle_margin.py: the oracle's supported margin, and the repetitions it would need for a target."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import oracle_margin  # noqa: E402

from strata.analysis.groups import Runs


def test_oracle_margin_is_the_far_end_of_the_known_variance_interval():
    runs = {"a": Runs.of([100.0, 110.0, 90.0]), "b": Runs.of([90.0, 99.0, 81.0])}  # both CV 10%, b 10% behind
    z = 1.959963984540054
    se = math.sqrt(0.01 / 3 + 0.01 / 3)
    want = math.exp(-(math.log(0.9) - z * se)) - 1  # how far a may be ahead of b
    assert oracle_margin.oracle_margin(runs, "a", 0.05) == pytest.approx(want, rel=1e-12)


def test_needed_repetitions_shrink_the_margin_to_the_target_and_none_when_the_gap_is_beyond_it():
    runs = {"a": Runs.of([100.0, 110.0, 90.0]), "b": Runs.of([90.0, 99.0, 81.0])}
    n = oracle_margin.needed(runs, "a", 0.05, 0.20)
    assert n is not None and oracle_margin.oracle_margin(runs, "a", 0.05, n) <= 0.20
    assert oracle_margin.oracle_margin(runs, "a", 0.05, n - 1) > 0.20
    assert oracle_margin.needed(runs, "a", 0.05, 0.10) is None  # a gap of 11% never fits in +-10%


def test_a_target_that_is_not_a_margin_is_refused():
    assert oracle_margin._percent("20%") == 0.2
    assert oracle_margin._percent("abc") is None and oracle_margin._percent("0%") is None
