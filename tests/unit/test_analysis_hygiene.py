"""analysis/advice/hygiene.py: every warning says what is wrong and what to do (docs/style.md, item 10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_databases_cache_warning_says_what_a_database_needs():
    """A workload whose bytes are not O_DIRECT I/O says so in its cache evidence (`basis`); the fix then
    names what such a workload needs, and fio's fix stays as it was."""
    fio = [make_result(fs="xfs", rep=0, value=900, cache=True)]
    db = make_result(fs="ext4", rep=0, value=900, cache=True)
    db["flags"]["cache"]["evidence"]["basis"] = "as one 8 KiB block a transaction"
    assert "data set larger than the memory" not in kinds(fio)["cache"].fix
    fix = kinds(fio + [db])["cache"].fix
    assert fix.startswith("measure the device with O_DIRECT") and "data set larger than the memory" in fix


def test_a_data_set_in_memory_is_warned_with_its_own_fix():
    """A database flagged because its data set fits in memory (evidence.memory.fits) is warned in those words,
    with the data set its fix names; O_DIRECT is advised only for the trials whose bytes fell short."""
    db = make_result(fs="ext4", rep=0, value=900, cache=True)
    db["flags"]["cache"]["evidence"]["memory"] = {"fits": True, "fix": "records of 40,000 or more (now 5,000)"}
    alone = kinds([db])["cache"]
    assert "fits in the memory their servers can use" in alone.message and "disk moved" not in alone.message
    assert "O_DIRECT" not in alone.fix and "records of 40,000 or more" in alone.fix
    both = kinds([db, make_result(fs="xfs", rep=0, value=900, cache=True)])["cache"]
    assert "1 as their data set fits" in both.message and "1 as a disk moved" in both.message
    assert "O_DIRECT" in both.fix and "records of 40,000" in both.fix


def test_too_short_to_judge_is_its_own_warning():
    rs = [make_result(rep=i, steady={"steady": False, "judged": False}) for i in range(3)]
    w = kinds(rs)["steady"]
    assert "too short" in w.message and "runtime" in w.fix


def _steady(values, design):
    from strata.results import validity

    series = [[t, v] for t, v in enumerate([*values, 1])]
    return validity.steady(series, design=design).to_json()


def test_a_repeated_design_gets_no_advice_against_its_own_short_trials():
    """Issue 32: the quickstart (auto, 6 s trials) was told to run longer while the trial-length rule and
    docs/decisions.md say shorter trials decide sooner. A repeated design's noisy short trials are judged on
    what they show (a drift), and the trials too short to judge are said once, with nothing to do."""
    auto = {"repetitions": "auto", "min": 3, "max": 6, "margin": 0.05}
    noisy = [make_result(rep=i, value=100 + i, steady=_steady([80, 120, 100, 120, 80], auto), design=auto)
             for i in range(3)]  # fmt: skip
    short = [make_result(fs="ext4", rep=i, value=100, steady=_steady([100, 101], auto), design=auto) for i in range(3)]
    warnings = analyse(noisy + short, judge_steady=True).warnings
    steady = [w for w in warnings if w.kind == "steady"]
    assert len(steady) == 1 and steady[0].note and not steady[0].fix
    assert "not judged in 3 trial(s)" in steady[0].text() and "What to do" not in steady[0].text()
    assert not any("run longer" in w.fix or "runtime` to 10" in w.fix for w in warnings)


def test_a_drift_in_a_repeated_design_asks_for_a_ramp_not_longer_trials():
    auto = {"repetitions": "auto", "min": 3, "max": 6, "margin": 0.05}
    rs = [make_result(rep=i, value=100, steady=_steady([60, 75, 88, 97, 100], auto), design=auto) for i in range(3)]
    w = kinds(rs)["steady"]
    assert "drifted" in w.message and "ramp_time" in w.fix and "run longer" not in w.fix


def test_a_single_trial_is_still_held_to_snias_criterion():
    one = {"repetitions": 1, "margin": 0.05}
    rs = [make_result(rep=0, value=100, steady=_steady([80, 120, 100, 120, 80], one), design=one)]
    w = kinds(rs)["steady"]
    assert "did not reach steady state" in w.message and "run longer" in w.fix


def test_a_failed_result_without_status_or_category_is_counted_beside_the_others():
    """Regression: a failed result that stores neither a status nor a failure category (a result cut short
    while written) was counted under None, and sorting None beside a category's name raised TypeError."""
    rs = [make_result(fs="ext4", rep=0, status="failed"), make_result(fs="ext4", rep=1, status="failed")]
    rs[0]["flags"]["failed"] = {"category": "disk_full", "message": "no space"}
    del rs[1]["status"]
    w = kinds(rs)["failed"]
    assert "1 disk_full" in w.message and "1 None" in w.message


AUTO = {"repetitions": "auto", "min": 3, "max": 6, "looks": [3], "margin": 0.05}


def test_a_raw_baseline_auto_ran_twice_on_purpose_is_not_warned_about():
    """Issue 54: `strata report` of the quickstart's results said the raw baseline had too few repetitions and
    told a spec of `repetitions: auto` to set `repetitions: 3`, while auto runs the raw baseline in two rounds
    on purpose (experiment/expand.py BASELINE_ROUNDS). No warning may contradict the stored design."""
    from strata.analysis.cells.load import load

    warnings = analyse(load(ROOT / "tests" / "data" / "results" / "quick-a"), judge_steady=True).warnings
    assert not [w for w in warnings if w.kind == "repetitions"]
    assert not [w for w in warnings if "`repetitions: 3`" in w.fix]
    rs = [make_result(fs="raw", rep=i, value=100, design=AUTO) for i in range(2)]
    rs += [make_result(fs="xfs", rep=i, value=90 + i, design=AUTO) for i in range(3)]
    assert "repetitions" not in kinds(rs)


def test_a_real_shortfall_still_warns_with_a_fix_that_fits_its_design():
    """A fixed design of one repetition is told to repeat; an auto raw baseline whose second trial failed, or a
    configuration the budget stopped below `min_repetitions`, has fewer than its own design plans, and is told
    to rerun what is missing, never to set `repetitions: 3`."""
    one = {"repetitions": 1, "margin": 0.05}
    w = kinds([make_result(fs="raw", value=100, design=one), make_result(fs="xfs", value=90, design=one)])
    assert "fewer than 3 repetitions" in w["repetitions"].message and "repetitions: 3" in w["repetitions"].fix
    rs = [make_result(fs="raw", rep=0, value=100, design=AUTO), make_result(fs="raw", rep=1, status="failed")]
    rs[-1]["design"] = AUTO
    rs += [make_result(fs="xfs", rep=i, value=90 + i, design=AUTO) for i in range(3)]
    rs += [make_result(fs="ext4", rep=i, value=80 + i, design=AUTO) for i in range(2)]  # the budget ended it
    (w,) = [x for x in analyse(rs, judge_steady=True).warnings if x.kind == "repetitions"]
    assert "loop/raw/native/device randread-4k j1xqd1 (n=1 of 2)" in w.items
    assert "loop/ext4/native/bind randread-4k j1xqd1 (n=2 of 3)" in w.items and len(w.items) == 2
    assert "--resume" in w.fix and "budget" in w.fix and "repetitions: 3" not in w.fix


def test_an_unconfirmed_trial_under_auto_is_not_told_to_set_repetitions():
    """The unconfirmed warning's fix fits the design too: a repeated design whose raw device kept one successful
    trial is told to rerun what failed; a single-trial design, to repeat."""
    raw = [make_result(fs="raw", rep=0, value=100, design=AUTO), make_result(fs="raw", rep=1, status="failed")]
    raw[-1]["design"] = AUTO
    xs = [make_result(fs="xfs", rep=i, value=v, design=AUTO) for i, v in enumerate((90, 95, 160))]
    xs[-1]["flags"]["above_raw"] = {"suspect": True, "reason": "1.60x a single raw trial", "evidence": {}}
    w = kinds(raw + xs)["unconfirmed"]
    assert w.items == ["loop/xfs/native/bind randread-4k j1xqd1 #2"]
    assert "repetitions: 3" not in w.fix and "fix what failed" in w.fix and "--resume" in w.fix
    one = {"repetitions": 1, "margin": 0.05}
    w = kinds([make_result(fs="raw", value=100, design=one), make_result(fs="xfs", value=300, design=one)])
    assert "beat a single raw-device trial" in w["unconfirmed"].message
    assert "beyond the intervals" not in w["unconfirmed"].message
    assert "`repetitions: 3` or `auto`" in w["unconfirmed"].fix


def test_a_tpcb_like_run_at_a_scale_below_its_clients_is_warned_with_the_fix():
    """Issue 56: tpcb-like's every transaction updates one of `scale` branch rows; more clients than rows queue on
    their locks, and pgbench's docs say so. select-only at the same shape, and tpcb-like at scale >= clients, not."""

    def run(fs: str, script: str, scale: int, clients: int) -> dict:
        r = make_result(fs=fs, rep=0, value=900, workload=f"pgbench-{script}")
        r["trial"]["workload"] = {"type": "pgbench", "script": script, "scale": scale, "clients": clients}
        return r

    w = kinds([run("xfs", "tpcb-like", 20, 32), run("ext4", "tpcb-like", 32, 32)])["scale"]
    assert "wait on row locks" in w.message and "scale to at least the number of clients" in w.fix
    assert [i.split()[0] for i in w.items] == ["loop/xfs/native/bind"]
    assert "scale" not in kinds([run("xfs", "select-only", 1, 32), run("ext4", "tpcb-like@9,select-only@1", 40, 32)])
