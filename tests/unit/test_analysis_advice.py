"""analysis/advice.py: best stack with margin and confidence, ties, containers per host."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402


def reps(fs, values, **kw):
    return [make_result(fs=fs, rep=i, value=v, **kw) for i, v in enumerate(values)]


def test_best_with_significant_margin():
    a = analyse(reps("raw", (2000, 2000, 2000)) + reps("xfs", (1000, 1010, 990)) + reps("ext4", (800, 805, 795)))
    (b,) = a.best
    assert b.best.fs_type == "xfs" and not b.equivalent and b.status == "best"
    assert b.lead.outcome == "worse" and b.lead.rel < 0
    assert "is best: 20.0% [" in b.text()


def test_equivalent_only_when_the_difference_is_within_the_margin():
    a = analyse(reps("xfs", (1000, 1002, 998)) + reps("ext4", (1001, 999, 1003)) + reps("btrfs", (300, 310, 290)))
    (b,) = a.best
    other = "xfs" if b.best.fs_type == "ext4" else "ext4"
    assert b.status == "equivalent" and [c.fs_type for c in b.equivalent] == [other]
    assert [c.fs_type for c in b.worse] == ["btrfs"]
    assert "equivalent within +-5%" in b.text() and "choose on other grounds" in b.text()


def test_the_spec_margin_decides_equivalence():
    """Issue 21: the margin is the spec's; 2% apart with little spread is equivalent at 5%, decidedly
    worse (so xfs is best) at 1%."""
    for margin, status in ((0.05, "equivalent"), (0.01, "best")):
        design = {"repetitions": 3, "margin": margin}
        rs = reps("xfs", (1000, 1004, 996), design=design) + reps("ext4", (980, 984, 976), design=design)
        (b,) = analyse(rs).best
        assert b.status == status and b.margin == margin


def test_a_difference_the_intervals_do_not_decide_is_undecided_with_the_supported_margin():
    """Issue 12: not significant is not 'tied'; issue 21: say the margin the data do support."""
    a = analyse(reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)))
    (b,) = a.best
    assert b.status == "undecided" and not b.equivalent and b.undecided
    assert b.text().startswith("undecided at +-5%")
    assert f"no stack differs from it by more than {b.supported:.0%} here" in b.text()
    assert 0.2 < b.supported < 0.6


def test_single_repetition_decides_nothing():
    (b,) = analyse(reps("xfs", (1000,)) + reps("ext4", (800,))).best
    assert b.status == "undecided" and "2 or more repetitions" in b.text()


def test_containers_per_host():
    rs = [
        r
        for n, v in zip(range(1, 6), (100, 180, 240, 200, 150))
        for r in reps("xfs", (v, v * 1.01, v * 0.99), runtime="docker", path="volume", containers=n)
    ]
    (c,) = analyse(rs).containers
    assert c.best_x == 3 and c.falls_after
    assert "3 container(s) per host" in c.text() and c.status == "best"
    rs = [r for n in (1, 2, 4) for r in reps("xfs", (n * 100,) * 2, runtime="docker", path="volume", containers=n)]
    (c,) = analyse(rs).containers
    assert c.best_x == 4 and "measure more containers" in c.text()
