"""What counts as having run a key (tests/coverage.py): a trial's status, a command's exit code, the ledger's
events (tests/integration/ledger.py); and what the integration fixture then holds against a declaration."""

import subprocess

from tests import coverage
from tests.integration import ledger

TRIAL = {
    "device": {"type": "loop"},
    "filesystem": {"type": "xfs"},
    "runtime": {"type": "podman", "storage_driver": "zfs"},
    "path": "layer",
    "workload": {"type": "fio"},
}
LAYERS = {
    "device:loop",
    "filesystem:xfs",
    "runtime:podman",
    "runtime:podman:zfs",
    "path:podman/layer",
    "workload:fio",
    "workload:fio@podman",
}


def test_an_ok_trial_runs_its_keys():
    assert coverage.keys_of_trial(TRIAL) == LAYERS


def test_a_refused_trial_runs_nothing_and_gives_refusal_keys():
    keys = coverage.keys_of_trial(TRIAL, "unsupported")
    assert keys == {f"refused:{k}" for k in LAYERS} | {"fault:unsupported"}
    missing, _ = coverage.mismatch(frozenset({"runtime:podman:zfs"}), keys, keys)
    assert missing == {"runtime:podman:zfs"}  # a refusal covers nothing
    assert coverage.mismatch(frozenset({"refused:runtime:podman:zfs", "fault:unsupported"}), keys, keys) == (
        set(),
        set(),
    )


def test_a_failed_build_runs_only_its_failure_and_an_unstarted_trial_no_workload():
    assert coverage.keys_of_trial(TRIAL, "provision") == {"fault:provision"}
    started = coverage.keys_of_trial(TRIAL, "container_start")
    assert "workload:fio" not in started and "path:podman/layer" in started and "fault:container_start" in started
    died = coverage.keys_of_trial({**TRIAL, "runtime": {"type": "docker", "storage_driver": "overlay2"}}, "oom")
    assert {"workload:fio@docker", "fault:oom", "fault:oom@docker"} <= died


def test_a_declared_refusal_holds_where_the_host_runs_the_cell():
    ran = coverage.keys_of_trial(TRIAL)
    declared = frozenset({"refused:runtime:podman:zfs"} | LAYERS - {"runtime:podman:zfs"})
    assert coverage.mismatch(declared, ran, ran) == (set(), set())


def test_a_stored_key_not_declared_and_a_declared_key_not_run_both_fail():
    missing, extra = coverage.mismatch(frozenset({"device:loop", "workload:ycsb@docker"}), LAYERS, LAYERS)
    assert missing == {"workload:ycsb@docker"}
    assert extra == LAYERS - {"device:loop"}


def test_what_the_ledger_alone_shows_is_not_held_against_an_undeclaring_test():
    """A module's shared fixture built a stack that this test (a probe, a jar cache) does not use."""
    assert coverage.mismatch(frozenset(), LAYERS, set()) == (set(), set())


def _command(*argv, rc):
    return {"kind": "command", "argv": list(argv), "rc": rc}


def test_commands_count_when_they_ran_to_their_end():
    keys = coverage.keys_of_events(
        [
            _command("validate", "/tmp/x/quick.yaml", rc=0),
            _command("run", "s.yaml", rc=1),  # a trial failed: the command ran
            _command("compare", "a", "b", rc=2),  # refused
            _command("report", "out", rc=None),  # still running when the test ended
            _command("doctor", "--hosts", "h.yaml", rc=0),
            _command("cleanup", "--hosts", "h.yaml", rc=1),
            _command("testbed", "kubernetes", "up", rc=0),
        ]
    )
    assert keys == {
        "command:validate",
        "example:quick.yaml",
        "command:run",
        "refused:command:compare",
        "command:doctor",
        "hosts:doctor-on-every-host",
        "command:cleanup",  # but not hosts:cleanup-on-every-host: it exited 1
        "command:testbed",
        "runtime:kubernetes:testbed",
    }


def test_kill9_needs_the_kill_and_a_cleanup_after_it():
    killed = _command("run", "s.yaml", rc=-9)
    assert "fault:kill9" in coverage.keys_of_events([killed, _command("cleanup", rc=0)])
    assert "fault:kill9" not in coverage.keys_of_events([_command("cleanup", rc=0), killed])
    assert "fault:kill9" not in coverage.keys_of_events([killed, _command("cleanup", rc=2)])
    assert "fault:kill9" not in coverage.keys_of_events([_command("run", "s.yaml", rc=0), _command("cleanup", rc=0)])
    assert coverage.keys_of_events([{"kind": "kill9", "rc": -9, "undone": 6}]) == {"fault:kill9"}
    assert coverage.keys_of_events([{"kind": "kill9", "rc": 0, "undone": 6}]) == set()  # it was not killed
    assert coverage.keys_of_events([{"kind": "kill9", "rc": -9, "undone": 0}]) == set()  # nothing was undone


def test_a_signal_is_a_run_that_ended_on_it():
    assert "fault:signal" in coverage.keys_of_events([_command("run", "s.yaml", rc=130)])
    assert "fault:signal" not in coverage.keys_of_events([_command("run", "s.yaml", rc=0)])


def test_library_events_and_benches():
    events = [
        {"kind": "built", "keys": ["device:remote", "device:remote:nbd"]},
        {"kind": "failed", "category": "oom", "runtime": "docker"},
        {"kind": "failed", "category": "remote_lost", "runtime": "native"},
        {"kind": "bench", "name": "a.py", "rc": 0},
        {"kind": "bench", "name": "b.py", "rc": 1},
    ]
    assert coverage.keys_of_events(events) == {
        "device:remote",
        "device:remote:nbd",
        "fault:oom",
        "fault:oom@docker",
        "fault:remote_lost",
        "bench:a.py",
    }


def test_the_ledger_keeps_a_shared_fixtures_records_for_its_module_and_reads_exit_codes_at_the_end():
    ledger.enter("mod_a")
    ledger.built("device:loop")  # a module fixture's set-up, before the test's list begins
    ledger.begin()
    ledger.built("filesystem:xfs")
    proc = subprocess.Popen(["true"])
    ledger.started(["run", "s.yaml"], proc)
    proc.wait()
    assert [e.get("keys") or e.get("rc") for e in ledger.events()] == [["device:loop"], ["filesystem:xfs"], 0]
    ledger.enter("mod_b")
    ledger.begin()
    assert ledger.events() == []  # another module's fixtures are not this test's
