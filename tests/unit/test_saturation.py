"""The saturated flag (issue 56): the host's CPU busy all through a trial, from the host collector's totals."""

from strata.results import validity
from strata.results.flags import Flag, Flags
from strata.results.validity.saturation import MIN_BUSY_PERCENT, saturated


def host(user, system, iowait, idle):
    return {"host": {"cpu_user_percent": user, "cpu_system_percent": system, "cpu_iowait_percent": iowait,
                     "cpu_idle_percent": idle}}  # fmt: skip


def test_a_busy_host_is_saturated_with_its_shares_and_a_quiet_or_waiting_one_not():
    j = saturated(host(80.0, 18.5, 0.5, 1.0), memory_by_design=False)
    assert j.flag is Flag.SATURATED and j.warns and j.evidence["cpu_busy_percent"] == 98.5
    assert "98% busy" in j.reason and "user 80%, system 18%" in j.reason and "measures the CPU" in j.reason
    assert not saturated(host(30.0, 10.0, 5.0, 55.0), False).suspect
    # waiting on the device is not busy: a host all in iowait is storage-bound
    assert not saturated(host(3.0, 2.0, 90.0, 5.0), False).suspect
    assert saturated(host(50.0, 45.0, 0.0, 5.0), False).suspect == (95.0 >= MIN_BUSY_PERCENT)


def test_a_run_that_measures_memory_by_design_is_said_not_warned():
    j = saturated(host(90.0, 9.0, 0.0, 1.0), memory_by_design=True)
    assert j.suspect and j.expected and not j.warns and "measures memory by design" in j.reason


def test_without_the_hosts_cpu_it_is_not_judged():
    assert saturated({}, False) is None and saturated({"host": {}}, False) is None
    assert saturated({"host": {"cpu_user_percent": "x", "cpu_system_percent": 1, "cpu_iowait_percent": 1,
                               "cpu_idle_percent": 1}}, False) is None  # fmt: skip


def test_it_is_judged_when_a_trial_ends_and_round_trips():
    ev = validity.TrialEvidence(windows=[], starts=[], runtime_s=10.0, collectors=host(70.0, 29.0, 0.0, 1.0))
    flags, warnings = validity.judge_trial(ev)
    assert flags.saturated is not None and flags.saturated.warns
    assert any(w.flag is Flag.SATURATED for w in warnings)
    doc = flags.to_json()
    assert Flags.from_json(doc).to_json() == doc and doc["saturated"]["evidence"]["threshold_percent"] == 95.0


def test_across_hosts_any_hosts_saturation_is_the_trials():
    busy = Flags({Flag.SATURATED: saturated(host(70.0, 29.0, 0.0, 1.0), False)})
    quiet = Flags({Flag.SATURATED: saturated(host(10.0, 5.0, 0.0, 85.0), False)})
    ev = validity.TrialEvidence(windows=[], starts=[], runtime_s=10.0, parts={"a": quiet, "b": busy})
    j = validity.judge_trial(ev)[0].saturated
    assert j.warns and "host b:" in j.reason and "host a" not in j.reason


def test_a_databases_buffered_run_warns_a_tools_does_not():
    """Cassandra does buffered I/O, yet its clients and servers share the CPU: it warns; buffered fio does not."""
    from strata.results.validity.evidence import MovedBytes

    busy = host(70.0, 29.0, 0.0, 1.0)
    buffered = MovedBytes({}, {}, False, "bind")
    tool = validity.TrialEvidence(windows=[], starts=[], runtime_s=1.0, collectors=busy, moved=buffered)
    db = validity.TrialEvidence(
        windows=[], starts=[], runtime_s=1.0, collectors=busy, moved=buffered, metrics={"clients": {"run": {}}}
    )
    assert not validity.judge_trial(tool)[0].saturated.warns
    assert validity.judge_trial(db)[0].saturated.warns
    tmpfs = validity.TrialEvidence(
        windows=[], starts=[], runtime_s=1.0, collectors=busy, moved=MovedBytes({}, {}, True, "tmpfs")
    )
    assert validity.judge_trial(tmpfs)[0].saturated.expected
