"""Issue 58: the advice compares a latency the spec names (`compare: sync_lat`, fio's syncs) instead of the headline,
and judges each stack against `latency_target` (etcd's 10 ms) on its interval (analysis/advice/advice.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402


def _synced(fs: str, p99s_ms, design: dict) -> list[dict]:
    """fio trials of etcd's job: their sync latency's p99 as given, each repetition its own."""
    out = []
    for rep, p99 in enumerate(p99s_ms):
        r = make_result(fs=fs, rep=rep, value=400.0, rw="write", workload="etcd", design=design)
        r["metrics"]["sync"] = {"total_ios": 1000, "lat_ns": {"n": 1000, "mean": p99 * 4e5, "p99": p99 * 1e6}}
        out.append(r)
    return out


def test_the_advice_compares_the_sync_latency_the_spec_names_and_judges_it_against_the_target():
    """Issue 58: `compare: sync_lat` and `latency_target: 10ms` (etcd's disk check): the advice compares the p99
    of the syncs, lower being better, and says of each stack whether its interval is below, above or about 10 ms."""
    design = {"repetitions": 3, "margin": 0.05, "compare": "sync_lat", "latency_target_ms": 10.0}
    a = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (4.0, 4.2, 3.8), design))
    (b,) = a.best
    assert "p99 sync (fsync, fdatasync) latency, lower is better, as the spec compares" in b.text()
    assert b.best.fs_type == "xfs" and "is best" in b.text(), b.text()
    assert b.target.startswith("etcd at load") and "against 10 ms: below it on every stack" in b.target, b.target
    assert "loop/ext4/native/bind 4.00 ms [" in b.target  # the highest, with its interval
    assert b.lines() == [b.text(), b.target]
    slow = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (14.0, 15.0, 13.0), design))
    assert "above it on loop/ext4/native/bind 14.00 ms [" in slow.best[0].target
    assert "below it on loop/xfs/native/bind" in slow.best[0].target
    wide = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (5.0, 15.0, 10.0), design))
    assert "undecided on loop/ext4/native/bind" in wide.best[0].target and "more repetitions" in wide.best[0].target
    plain = analyse(
        _synced("xfs", (2.0, 2.1, 1.9), {"repetitions": 3, "margin": 0.05})
        + _synced("ext4", (4.0, 4.2, 3.8), {"repetitions": 3, "margin": 0.05})
    )
    assert plain.best[0].target == "" and "sync" not in plain.best[0].text()  # the headline, as before


def test_a_stack_whose_syncs_never_reached_the_device_is_named_not_judged():
    """ext4 mounted barrier=0 (etcd's check flags it NOFLUSH): left out of the comparison and of the verdicts, and
    named in the target's line with its flag, so a reader never takes its silence for a pass."""
    design = {"repetitions": 3, "margin": 0.05, "compare": "sync_lat", "latency_target_ms": 10.0}
    dropped = []
    for r in _synced("ext4", (0.1, 0.1, 0.1), design):
        r["labels"]["filesystem"] = "ext4-barrier0"
        r["trial"]["filesystem"]["name"] = "ext4-barrier0"
        r["flags"]["flush"] = {"suspect": True, "reason": "the device saw no flush", "evidence": {}}
        dropped.append(r)
    a = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + dropped)
    (b,) = a.best
    assert "below it on every stack compared (the highest: loop/xfs/native/bind 2.00 ms [" in b.target, b.target
    assert b.target.endswith("; not judged, every trial drawn apart: loop/ext4-barrier0/native/bind (NOFLUSH)")
