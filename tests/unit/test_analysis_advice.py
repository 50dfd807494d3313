"""analysis/advice/advice.py: best stack with margin and confidence, ties, containers per host."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import pytest  # noqa: E402
from synth_results import make_result  # noqa: E402

from strata.analysis.advice.advice import Best  # noqa: E402
from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.decisions.answer import Answer  # noqa: E402


def reps(fs, values, **kw):
    return [make_result(fs=fs, rep=i, value=v, **kw) for i, v in enumerate(values)]


def test_best_with_significant_margin():
    a = analyse(reps("raw", (2000, 2000, 2000)) + reps("xfs", (1000, 1010, 990)) + reps("ext4", (800, 805, 795)))
    (b,) = a.best
    assert b.best.fs_type == "xfs" and not b.equivalent and b.status == "best"
    assert b.lead.outcome == "worse" and b.lead.rel < 0
    assert "is best: 25.0% ahead of the next" in b.text()  # xfs / ext4 - 1: the leader ahead, A/B - 1 (issue 34)
    assert f"(at most {b.lead_high - 1:.1%})" in b.text() and b.lead_high > 1.25  # its lead's upper bound (issue 41)


def test_equivalent_only_when_the_difference_is_within_the_margin():
    a = analyse(reps("xfs", (1000, 1002, 998)) + reps("ext4", (1001, 999, 1003)) + reps("btrfs", (300, 300.6, 299.4)))
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
    """Issue 12: not significant is not 'tied'; issues 21 and 34: say the margin the data do support; issue 41:
    name the stacks that may be the best and what choosing the leader costs at most."""
    a = analyse(reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)))
    (b,) = a.best
    assert b.status == "undecided" and not b.equivalent and b.undecided
    text = b.text()
    assert "undecided at +-5%: the best is one of " in text and f", each within +-{b.supported:.0%} of it" in text
    assert "(95%, all lines at once)" in text and b.undecided[0].stack in text
    assert f"choosing {b.best.stack} costs at most {b.cost:.1%} against the best" in text
    assert 0 < b.cost <= b.supported < 0.6
    assert "repetitions of each would decide it" in text or "no affordable number" in text


def test_the_supported_margin_leaves_out_the_stacks_decided_worse():
    """Issue 34 (advice.py): the group's margin was the largest over every answer, a stack already decided
    worse included, so the line said "no stack differs from it by more than 300%" for a close pair whose
    interval supports 40%."""
    rs = reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)) + reps("btrfs", (250, 240, 260))
    (b,) = analyse(rs).best
    assert [c.fs_type for c in b.worse] == ["btrfs"] and len(b.undecided) == 1
    close = b.answers[b.undecided[0].stack]
    assert b.supported == max(close.supported, b.cost) < 0.6 < b.answers[b.worse[0].stack].supported
    assert f"each within +-{b.supported:.0%} of it" in b.text() and "worse: loop/btrfs" in b.text()


def _three():
    """A group's cells: xfs leads, ext4 and btrfs behind."""
    rs = (
        reps("xfs", (1000, 1001, 999, 1000))
        + reps("ext4", (999, 1000, 998, 999))
        + reps("btrfs", (900, 800, 1000, 850))
    )
    cells = {c.fs_type: c for c in analyse(rs).cells if c.fs_type != "raw"}
    return cells["xfs"], cells["ext4"], cells["btrfs"]


def test_the_undecided_line_names_each_part_of_the_group():
    """Issue 41: the stacks that may be the best, those within the margin of it, those worse, and the leader's
    cost bound, each in its place."""
    xfs, ext4, btrfs = _three()
    eq = Answer(0.999, 0.99, 1.0, 0.05, 4, 4, may_be_best=True)  # ext4 within +-5% of the best
    open_ = Answer(0.8875, 0.80, 1.0, 0.05, 4, 4, may_be_best=True)  # btrfs may be the best, 25% at most below
    own = Answer(1.0, 0.9, 1.0, 0.05, 4, 4, may_be_best=True)
    b = Best("rr", "low", "IOPS", xfs, ext4, eq, [ext4], [], [btrfs], {ext4.stack: eq, btrfs.stack: open_}, own=own)
    assert b.status == "undecided" and b.supported == pytest.approx(0.25) and b.cost == pytest.approx(1 / 0.9 - 1)
    text = b.text()
    assert f"the best is one of {xfs.stack} (1,000 IOPS, n=4), {btrfs.stack}, each within +-25% of it" in text
    assert f"within +-5% of the best: {ext4.stack}" in text and "worse:" not in text
    assert f"choosing {xfs.stack} costs at most 11.1% against the best" in text


def test_a_group_whose_others_are_within_the_margin_but_whose_leader_is_not_is_undecided():
    """Issue 41: the leader's own bound (what choosing it costs) counts: every other stack within the margin of
    the best does not make the group equivalent when the leader itself may be further from it."""
    xfs, ext4, _ = _three()
    eq = Answer(0.999, 0.99, 1.0, 0.05, 4, 4, may_be_best=True)
    b = Best(
        "rr",
        "low",
        "IOPS",
        xfs,
        ext4,
        eq,
        [ext4],
        [],
        [],
        {ext4.stack: eq},
        own=Answer(1.0, 0.9, 1.0, 0.05, 4, 4, may_be_best=True),
    )
    assert b.status == "undecided"
    b.own = Answer(1.0, 0.99, 1.0, 0.05, 4, 4, may_be_best=True)
    assert b.status == "equivalent"


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
    from strata.analysis.decisions.answer import within_text

    assert within_text(0.14) == "+-14%" and within_text(0.999) == "+-100%"
    assert within_text(7.18) == "a factor of 8.2" and within_text(1.0) == "a factor of 2.0"
    rs = reps("xfs", (1000, 3000, 300)) + reps("ext4", (1010, 2900, 310))
    (b,) = analyse(rs).best
    assert b.supported is not None and b.supported >= 1
    assert f"each within a factor of {1 + b.supported:.1f} of it" in b.text()
    assert f"within +-{b.supported:.0%}" not in b.text()
