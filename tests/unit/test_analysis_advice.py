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
    assert b.best.fs_type == "xfs" and not b.tied
    assert b.margin.significant and b.margin.rel < 0
    assert "significant at 95%" in b.text() and "20.0% [" in b.text()


def test_tied_stacks_are_reported_tied():
    a = analyse(reps("xfs", (1000, 1100, 900)) + reps("ext4", (1010, 910, 1110)) + reps("btrfs", (300, 310, 290)))
    (b,) = a.best
    assert [c.fs_type for c in b.tied] == ["xfs" if b.best.fs_type == "ext4" else "ext4"]
    assert "statistically tied" in b.text()


def test_single_repetition_says_no_confidence():
    (b,) = analyse(reps("xfs", (1000,)) + reps("ext4", (800,))).best
    assert "no confidence" in b.text()


def test_containers_per_host():
    rs = [
        r
        for n, v in zip(range(1, 6), (100, 180, 240, 200, 150))
        for r in reps("xfs", (v, v * 1.01, v * 0.99), runtime="docker", path="volume", containers=n)
    ]
    (c,) = analyse(rs).containers
    assert c.best_x == 3 and c.falls_after
    assert "3 container(s) per host" in c.text()
    rs = [r for n in (1, 2, 4) for r in reps("xfs", (n * 100,) * 2, runtime="docker", path="volume", containers=n)]
    (c,) = analyse(rs).containers
    assert c.best_x == 4 and "measure more containers" in c.text()
