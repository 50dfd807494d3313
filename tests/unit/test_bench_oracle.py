"""bench/oracle_margin.py: the blocked oracle's line margin, and the repetitions it would need for a target."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import oracle_margin  # noqa: E402


def test_the_oracle_line_of_a_pair_is_the_one_sided_known_variance_bound():
    """Two stacks, b 10% behind at a per-trial variance of 0.01 each and 3 trials: the leader's own bound and
    b's, one-sided at the normal's quantile."""
    effects = {"a": 0.0, "b": math.log(0.9)}
    var, n = {"a": 0.01, "b": 0.01}, {"a": 3.0, "b": 3.0}
    z = 1.6448536269514722
    se = math.sqrt(0.01 / 3 + 0.01 / 3)
    low_b = math.log(0.9) - z * se  # b against a, the only stack that may be the best besides b
    want = math.exp(-low_b) - 1 if math.log(0.9) + z * se > 0 else 0.0
    assert oracle_margin.oracle_line(effects, var, n, 0.05) == pytest.approx(want, rel=1e-6)


def test_a_stack_the_oracle_decides_worse_is_left_out_of_its_line():
    """Issue 41: `needed` counted stacks that could be decided worse; the line's margin leaves them out."""
    effects = {"a": 0.0, "b": math.log(0.98), "c": math.log(0.5)}
    var, n = {k: 0.01 for k in effects}, {k: 3.0 for k in effects}
    with_c = oracle_margin.oracle_line(effects, var, n, 0.05)
    without = oracle_margin.oracle_line({k: effects[k] for k in "ab"}, var, n, 0.05)
    assert with_c < 0.5 and with_c == pytest.approx(without, rel=0.2)


def test_needed_repetitions_shrink_the_margin_to_the_target():
    effects = {"a": 0.0, "b": math.log(0.95)}
    var = {"a": 0.01, "b": 0.01}
    n = oracle_margin.needed(effects, var, 0.20)
    assert n is not None and oracle_margin.oracle_line(effects, var, {"a": n, "b": n}, 0.05) <= 0.20
    assert oracle_margin.oracle_line(effects, var, {"a": n - 1, "b": n - 1}, 0.05) > 0.20


def test_a_target_that_is_not_a_margin_is_refused():
    assert oracle_margin._percent("20%") == 0.2
    assert oracle_margin._percent("abc") is None and oracle_margin._percent("0%") is None
