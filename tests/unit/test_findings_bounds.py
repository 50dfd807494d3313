"""Each finding's check holds its bounds as its printed criterion says them (issue 54): "<" and ">" strict, so
that "< 1%" is not held by an interval that reaches 1.00%, and ">=", "<=", "within" and "N to M" inclusive.
The operators are read from each criterion in findings.py, the bounds from its check's code (the calls to
criterion.py's `above`, `at_least`, `below`, `at_most` in the check's own body)."""

import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.decisions.criterion import above, at_least, at_most, below, decides  # noqa: E402
from strata.analysis.findings.findings import FINDINGS, HELD, NOT_HELD  # noqa: E402

STRICT = {"above": True, "below": True, "at_least": False, "at_most": False}
# Checks that compare two intervals with each other, not with a bound (strict: one wholly above the other),
# or that decide by byte evidence (validity's `shows_cache`: a share below 50%, strictly)
NO_BOUND = {"btrfs-rr-blocksize", "p99-grows-faster", "memory-limit-hurts-most", "above-raw-is-cache"}
# what a criterion's operators select (a block size, a sweep's length, the drivers compared), not its bound
SELECTS = re.compile(r"(<=|>=|<|>) ?\d+ ?(KiB|container counts|storage drivers)")


def bounds_of(check):
    """The strictness of each bound the check's own body constructs."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(check)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return {STRICT[c.func.id] for c in calls if c.func.id in STRICT}


def printed(criterion):
    """The strictness of the bounds a criterion prints: its operators, else its words."""
    text = SELECTS.sub("", criterion)
    ops = re.findall(r"<=|>=|<|>", text)
    if ops:
        return {op in ("<", ">") for op in ops}
    if "within" in text or re.search(r"\d+ to \d+", text):
        return {False}
    return {True} if re.search(r"\b(above|below)\b", text) else set()


@pytest.mark.parametrize("f", FINDINGS, ids=lambda f: f.id)
def test_each_checks_bounds_are_as_strict_as_its_criterion_prints(f):
    said = printed(f.criterion)
    assert said, f"{f.id}: no bound read in its criterion: {f.criterion!r}"
    if f.id in NO_BOUND:
        assert not bounds_of(f.check) and said == {True}, f.id
        return
    assert bounds_of(f.check) == said, f"{f.id}: the check's bounds against {f.criterion!r}"


def test_a_strict_bound_is_not_held_at_its_edge_and_an_inclusive_one_is():
    assert decides(0.01, 0.01, 0.01, 2, hi=below(0.01)) == (False, "")
    assert decides(0.01, 0.01, 0.01, 2, hi=at_most(0.01)) == (True, "")
    assert decides(1.0, 1.0, 1.0, 2, lo=above(1.0)) == (False, "")
    assert decides(1.0, 1.0, 1.0, 2, lo=at_least(1.0)) == (True, "")
    held, need = decides(0.01, 0.005, 0.02, 3, hi=below(0.01))
    assert held is None and need
    with pytest.raises(ValueError):
        decides(1.0, 0.9, 1.1, 2, lo=below(1.0))


def _latency(slat_share):
    """Random reads at low and high load, slat the given share of the whole at high load (exact: no spread)."""
    out = []
    for load, (jobs, depth) in (("low", (1, 1)), ("high", (32, 32))):
        for i in range(2):
            r = make_result(rep=i, value=1000, numjobs=jobs, iodepth=depth, load=load)
            side = r["metrics"]["read"]
            side["slat_ns"]["mean"] = side["lat_ns"]["mean"] * (slat_share if load == "high" else 0.05)
            out.append(r)
    return out


def test_slat_at_exactly_one_percent_is_not_less_than_one_percent():
    """Issue 54: "high-load slat < 1% of total latency" held at exactly 1.00%, the bound compared as "<="."""
    outcome = {f.id: o for f, o in analyse(_latency(0.01), judge_steady=False).findings}["slat-negligible-high-load"]
    assert outcome.status == NOT_HELD and "1.00% of the total" in outcome.detail, outcome.detail
    outcome = {f.id: o for f, o in analyse(_latency(0.0099), judge_steady=False).findings}["slat-negligible-high-load"]
    assert outcome.status == HELD, outcome.detail
