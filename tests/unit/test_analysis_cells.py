"""analysis/cells/cells.py and baseline.py: grouping, headline metric, cache kept apart, above raw."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.cells import baseline  # noqa: E402
from strata.analysis.cells.cells import build_cells, throughput, trial_steady  # noqa: E402
from strata.results.result import Result  # noqa: E402


def test_headline_metric_per_workload_kind():
    assert throughput(Result.from_stored(make_result(rw="randread", value=5000)))[1] == "IOPS"
    v, unit = throughput(Result.from_stored(make_result(rw="read", bs=131072, value=800)))
    assert unit == "MB/s" and v == pytest.approx(800, rel=1e-3)
    assert throughput(Result.from_stored(make_result(kind="filebench", value=42.0))) == (42.0, "MB/s")


def test_repetitions_group_into_one_cell_and_cache_is_kept_apart():
    rs = [make_result(rep=i, value=v) for i, v in enumerate((100, 110, 105))]
    rs.append(make_result(rep=3, value=900, cache=True))
    (c,) = build_cells(rs)
    assert c.values == [100, 110, 105] and c.cached_values == [900]
    assert c.summary.mean == pytest.approx(105)


def test_failed_and_unsupported():
    rs = [make_result(rep=0), make_result(rep=1, status="failed"), make_result(rep=2, status="unsupported")]
    (c,) = build_cells(rs)
    assert c.reps == 1 and len(c.failed) == 1


def test_above_raw_beyond_the_intervals_is_drawn_apart_as_unconfirmed():
    raw = [make_result(fs="raw", rep=i, value=v) for i, v in enumerate((100, 102, 98))]
    fast = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((150, 152, 148))]
    near = [make_result(fs="ext4", rep=i, value=v) for i, v in enumerate((104, 99, 101))]
    cells = build_cells(raw + fast + near)
    moved = baseline.apply_above_raw(cells)
    assert [c.fs_type for c in moved] == ["xfs"]
    assert moved[0].values == [] and len(moved[0].unconfirmed_values) == 3 and moved[0].cached_values == []
    assert "unconfirmed" in moved[0].above_raw.reason
    index = baseline.raw_index(cells)
    ext4 = next(c for c in cells if c.fs_type == "ext4")
    assert baseline.ratio_to_raw(ext4, index).value == pytest.approx(1.013, abs=1e-3)


def test_steady_from_flags_or_from_the_series(tmp_path):
    r = make_result(steady={"steady": True, "reason": "runner"})
    assert trial_steady(Result.from_stored(r)).reason == "runner"
    r = make_result()
    d = tmp_path / "trials" / r["trial_id"]
    d.mkdir(parents=True)
    (d / "workload-series.json").write_text(json.dumps({"fio_iops": [[t, 100 + t * 10] for t in range(8)]}))
    s = trial_steady(Result.from_stored(r, str(tmp_path / "trials" / f"{r['trial_id']}.json")))
    assert s.judged and not s.steady


def test_same_labels_different_parameters_are_told_apart():
    a = make_result(experiment="one", size=1 << 30)
    b = make_result(experiment="two", size=2 << 30)
    names = sorted(c.name for c in build_cells([a, b]))
    assert names[0].endswith("[one]") and names[1].endswith("[two]")


def test_real_results_load():
    from strata.analysis.cells.load import load

    root = Path(__file__).resolve().parents[1] / "data" / "results"
    rs = load(root / "small")
    assert len(rs) == 16 and all(r.file.endswith(".json") for r in rs)
    sets = ("fs-compare", "sweeps", "bs-sweep", "quick-a", "quick-b", "pgbench-ee1f538")
    assert len(load(root)) == len(rs) + sum(len(load(root / d)) for d in sets)


def test_load_skips_attempts_and_checks_the_schema(tmp_path):
    from strata.analysis.cells.load import load

    r = make_result()
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / f"{r['trial_id']}.json").write_text(json.dumps(r))
    (tmp_path / "trials" / f"{r['trial_id']}.attempt-1.json").write_text(json.dumps({**r, "status": "failed"}))
    assert [x.status for x in load(tmp_path)] == ["ok"]
    (tmp_path / "trials" / "future.json").write_text(json.dumps({**r, "schema_version": 99}))
    with pytest.raises(ValueError, match="upgrade strata"):
        load(tmp_path)


def test_only_failed_trials_make_an_empty_but_valid_report():
    from strata.analysis.analyse import analyse
    from strata.report import generate
    from strata.report.model import build

    rs = [make_result(rep=i, status="failed") for i in range(2)]
    files = generate(build(analyse(rs), "t"), jobs=1)
    assert b"No figure" in files["report.html"]
    assert b"2 failed" in files["summary.txt"]


def test_single_trial_above_raw_flags_are_rejudged_by_the_intervals():
    """Issue 12: a trial flagged against one raw trial returns to the device numbers once the intervals of
    repetitions say the stack is not above the raw device; one the bytes show cached stays cached."""
    raw = [make_result(fs="raw", rep=i, value=v) for i, v in enumerate((100, 102, 98))]
    xfs = [make_result(fs="xfs", rep=i, value=v) for i, v in enumerate((99, 101, 97))]
    xfs.append(make_result(fs="xfs", rep=3, value=160))
    xfs[-1]["flags"]["above_raw"] = {"suspect": True, "reason": "1.60x a single raw trial", "evidence": {}}
    cells = build_cells(raw + xfs)
    x = next(c for c in cells if c.fs_type == "xfs")
    assert len(x.unconfirmed) == 1 and x.reps == 3
    assert baseline.apply_above_raw(cells) == []
    assert x.unconfirmed == [] and x.reps == 4 and x.above_raw is None
    cached = make_result(fs="xfs", rep=4, value=900, cache=True)
    cells = build_cells(raw + xfs + [cached])
    baseline.apply_above_raw(cells)
    assert next(c for c in cells if c.fs_type == "xfs").cached_values == [900]
