"""analysis/hygiene.py: every warning says what is wrong and what to do (docs/style.md, item 10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402


def kinds(results):
    return {w.kind: w for w in analyse(results, judge_steady=True).warnings}


def test_clean_results_have_no_warning():
    rs = [make_result(rep=i, value=v, steady={"steady": True, "judged": True}) for i, v in enumerate((100, 101, 99))]
    assert kinds(rs) == {}


def test_each_check_fires_with_a_fix():
    rs = [make_result(fs="raw", rep=i, value=100) for i in range(3)]
    rs += [make_result(fs="ext4", rep=0, value=100)]  # too few repetitions
    rs += [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((50, 100, 150))]  # spread
    rs += [make_result(fs="xfs", rep=3, value=900, cache=True)]  # cache
    rs += [make_result(fs="btrfs", rep=i, value=300) for i in range(3)]  # above raw
    rs += [make_result(fs="ext4", rw="randwrite", rep=0, steady={"steady": False, "judged": True, "reason": "x"})]
    skew = make_result(fs="ext4", rw="read", containers=2, runtime="docker", path="volume")
    skew["flags"]["sync"] = {"suspect": True, "skew_s": 3.0}
    rs += [skew, make_result(fs="ext4", rep=1, status="failed")]
    rs[-1]["flags"]["failed"] = {"category": "disk_full", "message": "no space"}
    other = dict(make_result(fs="ext4", rep=2), host={"hostname": "other", "note": "measured in a virtual machine"})
    w = kinds(rs + [other])
    assert set(w) == {"repetitions", "spread", "cache", "unconfirmed", "steady", "sync", "failed", "hosts", "host"}
    for x in w.values():
        assert "What to do:" in x.text() and x.fix
    assert "repetitions: 3" in w["repetitions"].fix
    assert "until: steady" in w["steady"].fix
    assert "1 disk_full" in w["failed"].message


def test_too_short_to_judge_is_its_own_warning():
    rs = [make_result(rep=i, steady={"steady": False, "judged": False}) for i in range(3)]
    w = kinds(rs)["steady"]
    assert "too short" in w.message and "runtime" in w.fix
