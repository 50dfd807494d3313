"""analysis/cells/across.py: the judges that need more than one trial, at one moment, over stored results."""

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.cells.across import judge_results, judged_cells  # noqa: E402
from strata.results.flags import Flag  # noqa: E402
from strata.results.result import Result  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src" / "strata"


def _at(doc, second):
    doc["started_at"] = f"2026-12-07T10:00:{second:02d}+00:00"
    return Result.from_stored(doc)


def test_a_result_is_judged_against_the_raw_trial_stored_last_before_it():
    raw0, raw1 = _at(make_result(fs="raw", rep=0, value=100), 1), _at(make_result(fs="raw", rep=1, value=50), 30)
    xfs0, xfs1 = _at(make_result(rep=0, value=140), 10), _at(make_result(rep=1, value=140), 40)
    judge_results([xfs1, raw1, xfs0, raw0])  # in any order: by when each began
    assert xfs0.flags.above_raw is None  # 1.4x round 0's raw device: within the single-trial tolerance
    judged = xfs1.flags.above_raw
    assert judged is not None and judged.warns
    assert judged.evidence["ratio"] == pytest.approx(2.8) and judged.evidence["raw_trial"] == raw1.trial_id
    assert [w["flag"] for w in xfs1.warnings] == ["above_raw"]  # `strata show` lists it with the trial's warnings
    assert raw0.flags.above_raw is None and raw1.flags.above_raw is None


def test_no_raw_trial_before_it_another_load_or_a_failed_raw_trial_is_no_baseline():
    failed_raw = _at(make_result(fs="raw", rep=0, value=100, status="failed"), 1)
    other_load = _at(make_result(fs="raw", rep=0, value=100, iodepth=32), 2)
    fast = _at(make_result(rep=0, value=1000), 10)
    raw_after = _at(make_result(fs="raw", rep=1, value=100), 20)
    judge_results([failed_raw, other_load, fast, raw_after])
    assert fast.flags.above_raw is None and fast.warnings == []


def test_an_above_raw_stored_by_an_older_runner_stays_as_stored():
    raw = _at(make_result(fs="raw", rep=0, value=100), 1)
    doc = make_result(rep=0, value=400)
    doc["flags"]["above_raw"] = {"suspect": True, "reason": "stored with the trial", "evidence": {"ratio": 4.0}}
    old = _at(doc, 10)
    judge_results([raw, old])
    assert old.flags.above_raw.reason == "stored with the trial" and old.warnings == []


def test_judged_cells_make_every_judgement_across_trials_once():
    raw = [_at(make_result(fs="raw", rep=i, value=100), i) for i in range(2)]
    fast = [_at(make_result(rep=i, value=v), 10 + i) for i, v in enumerate((300, 100, 110))]
    noisy = [_at(make_result(fs="ext4", rep=i, value=v), 20 + i) for i, v in enumerate((60, 100, 80))]
    cells = {c.labels["filesystem"]: c for c in judged_cells(raw + fast + noisy)}
    assert fast[0].flags.warns(Flag.ABOVE_RAW)  # the single trial 3x raw
    # with repetitions of both the intervals decide: the pool (300, 100, 110) is not above the raw device, so
    # the single trial's flag is dismissed and it counts with the others
    x = cells["xfs"]
    assert x.above_raw is None and x.unconfirmed == [] and sorted(x.values) == [100, 110, 300]
    assert x.spread is not None and x.spread.warns and cells["ext4"].spread.warns
    assert not cells["raw"].spread.warns
    # judged again over the same results, the same judgement
    again = {c.labels["filesystem"]: c for c in judged_cells(raw + fast + noisy)}
    assert sorted(again["xfs"].values) == [100, 110, 300] and again["xfs"].spread.warns


# A judge across trials called anywhere else is a second moment: its call sites are these.
ACROSS = {
    r"validity\.above_raw\(": {"analysis/cells/across.py"},
    r"above_raw_repeated\(": {"analysis/cells/baseline.py"},
    r"validity\.spread\(": {"analysis/cells/across.py"},
    r"apply_above_raw\(": {"analysis/cells/across.py"},
    r"judge_results\(": {"analysis/cells/across.py", "cli/show.py", "cli/export.py"},
}


@pytest.mark.parametrize("call", sorted(ACROSS))
def test_the_judges_across_trials_are_called_at_their_one_moment(call):
    callers = {
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "validity" not in p.parts and re.search(r"(?<!def )" + call, p.read_text())
    }
    assert callers == ACROSS[call]
