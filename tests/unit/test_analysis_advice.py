"""analysis/advice.py: best stack with margin and confidence, ties, containers per host."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import pytest  # noqa: E402
from synth_results import make_result  # noqa: E402

from strata.analysis.advice import Best  # noqa: E402
from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.decide import Answer  # noqa: E402


def reps(fs, values, **kw):
    return [make_result(fs=fs, rep=i, value=v, **kw) for i, v in enumerate(values)]


def test_best_with_significant_margin():
    a = analyse(reps("raw", (2000, 2000, 2000)) + reps("xfs", (1000, 1010, 990)) + reps("ext4", (800, 805, 795)))
    (b,) = a.best
    assert b.best.fs_type == "xfs" and not b.equivalent and b.status == "best"
    assert b.lead.outcome == "worse" and b.lead.rel < 0
    assert "is best: 25.0% [" in b.text()  # xfs / ext4 - 1: the leader ahead, A/B - 1 (issue 34)


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


def test_a_difference_the_intervals_do_not_decide_is_answered_with_the_supported_margin():
    """Issue 12: not significant is not 'tied'; issues 21 and 34: say the margin the data do support, as an
    answer: "equivalent within +-X%"."""
    a = analyse(reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)))
    (b,) = a.best
    assert b.status == "undecided" and not b.equivalent and b.undecided
    assert f"equivalent within +-{b.supported:.0%} (not decided at +-5%)" in b.text()
    assert 0.2 < b.supported < 0.6


def test_the_supported_margin_leaves_out_the_stacks_decided_worse():
    """Issue 34 (advice.py): the group's margin was the largest over every answer, a stack already decided
    worse included, so the line said "no stack differs from it by more than 300%" for a close pair whose
    interval supports 40%."""
    rs = reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)) + reps("btrfs", (250, 240, 260))
    (b,) = analyse(rs).best
    assert [c.fs_type for c in b.worse] == ["btrfs"] and len(b.undecided) == 1
    close = b.answers[b.undecided[0].stack]
    assert b.supported == close.supported < 0.6 < b.answers[b.worse[0].stack].supported
    assert f"equivalent within +-{close.supported:.0%}" in b.text()


def _three():
    """A group's cells: xfs leads, ext4 and btrfs behind."""
    rs = (
        reps("xfs", (1000, 1001, 999, 1000))
        + reps("ext4", (999, 1000, 998, 999))
        + reps("btrfs", (900, 800, 1000, 850))
    )
    cells = {c.fs_type: c for c in analyse(rs).cells if c.fs_type != "raw"}
    return cells["xfs"], cells["ext4"], cells["btrfs"]


def test_the_line_gives_each_undecided_stack_its_own_gap():
    """Issue 34 (advice.py): "leads {undecided} by" printed the runner-up's gap even when the runner-up was
    equivalent and the stack named was another."""
    xfs, ext4, btrfs = _three()
    eq = Answer(0.999, 0.99, 1.01, 0.05, 4, 4)  # ext4 within +-5% of xfs
    open_ = Answer(0.8875, 0.80, 1.02, 0.05, 4, 4)  # btrfs 11.3% behind, undecided
    b = Best("rr", "low", "IOPS", xfs, ext4, eq, [ext4], [], [btrfs], {ext4.stack: eq, btrfs.stack: open_})
    assert b.status == "undecided"
    assert f"{btrfs.stack} by {1 / 0.8875 - 1:.1%}" in b.text() and f"{btrfs.stack} by 0.1%" not in b.text()


def test_leads_by_and_the_margins_use_one_convention():
    """Issue 34 (advice.py): "leads by" was 1 - B/A (11.3% for B/A = 0.8875) where "is best" and the margins are
    A/B - 1 (12.7%): the same pair had two sizes on one line. Now both are A/B - 1."""
    xfs, ext4, btrfs = _three()
    open_ = Answer(0.8875, 0.80, 1.02, 0.05, 4, 4)
    b = Best("rr", "low", "IOPS", xfs, btrfs, open_, [], [], [btrfs], {btrfs.stack: open_})
    assert f"{btrfs.stack} by 12.7%" in b.text() and f"+-{open_.supported:.0%}" in b.text()
    assert open_.supported == pytest.approx(1 / 0.80 - 1)  # A/B - 1 at the interval's far end


def test_single_repetition_decides_nothing():
    (b,) = analyse(reps("xfs", (1000,)) + reps("ext4", (800,))).best
    assert b.status == "undecided" and "2 or more repetitions" in b.text() and "no interval" in b.text()


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


def test_a_supported_margin_of_100_percent_or_more_is_said_as_a_factor():
    """A margin m means an interval inside [1/(1+m), 1+m]: "+-718%" read as a ratio below -100% (the
    quickstart of 2026-11-27), so from 100% on the advice says the factor."""
    from strata.analysis.decide import within_text

    assert within_text(0.14) == "+-14%" and within_text(0.999) == "+-100%"
    assert within_text(7.18) == "a factor of 8.2" and within_text(1.0) == "a factor of 2.0"
    rs = reps("xfs", (1000, 3000, 300)) + reps("ext4", (1010, 2900, 310))
    (b,) = analyse(rs).best
    assert b.supported is not None and b.supported >= 1
    assert f"equivalent within a factor of {1 + b.supported:.1f} (not decided" in b.text()
    assert f"within +-{b.supported:.0%}" not in b.text()
