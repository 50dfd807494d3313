"""bench/chaos.py's judgement of each fault against the stored attempt it ended (no machine needed)."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import chaos  # noqa: E402


def _attempt(
    trials: Path, name: str, start: str, end: str, workload: str, category: str | None, runtime: str = "docker:overlay2"
) -> None:
    failed = {"category": category, "message": "m"} if category else None
    doc = {
        "trial_id": name.split(".")[0],
        "stack": f"loop/xfs/{runtime}/bind",
        "labels": {"workload": workload},
        "status": "failed" if category else "ok",
        "started_at": f"2026-12-02T10:00:{start}+00:00",
        "finished_at": f"2026-12-02T10:00:{end}+00:00",
        "flags": {"failed": failed},
    }
    (trials / name).write_text(json.dumps(doc))


def test_each_fault_is_judged_by_the_attempt_it_ended(tmp_path):
    trials = tmp_path / "c1" / "trials"
    trials.mkdir(parents=True)
    t0 = chaos._t("2026-12-02T10:00:00+00:00")
    _attempt(trials, "a.attempt-1.json", "00", "10", "pgbench-tpcb", "instance_died")  # a container of pgbench
    _attempt(trials, "a.json", "30", "40", "pgbench-tpcb", None)
    _attempt(trials, "b.json", "12", "20", "rr", "tool_error")  # fio, but a dockerd fault: wrong
    _attempt(trials, "c.json", "50", "58", "rr", None)  # stood though its fio was killed: wrong
    _attempt(trials, "d.json", "41", "48", "rr", "tool_error", "podman:overlay")  # its container killed
    c = chaos.Campaign(tmp_path / "c1")
    c.faults = [
        chaos.Fault(t0 + 9.6, "container", 1, "container init sh"),
        chaos.Fault(t0 + 15, "dockerd", 2, "dockerd"),
        chaos.Fault(t0 + 25, "server", 3, "postgres"),  # in no trial
        chaos.Fault(t0 + 55, "fio", 4, "fio"),
        chaos.Fault(t0 + 35, "strata", 5, "strata run"),
        chaos.Fault(t0 + 42, "dockerd", 6, "dockerd"),  # the docker stack's, torn down as Podman's trial began
        chaos.Fault(t0 + 46, "container", 7, "container init sh"),
    ]
    chaos.judge(c, 0)
    verdicts = [f.verdict.split(":")[0] for f in c.faults]
    assert verdicts == ["ok", "miscategorised", "between", "miscategorised", "ok", "between", "ok"], [
        f.verdict for f in c.faults
    ]
    assert chaos.unexplained(c, t0) == ([], 0)  # every failure has its fault


def test_a_fio_killed_while_it_laid_out_its_files_is_the_prepare_step(tmp_path):
    trials = tmp_path / "c1" / "trials"
    trials.mkdir(parents=True)
    t0 = chaos._t("2026-12-02T10:00:00+00:00")
    _attempt(trials, "a.json", "00", "10", "rr", "prepare", "native")
    _attempt(trials, "b.json", "20", "30", "rr", "prepare", "native")
    c = chaos.Campaign(tmp_path / "c1")
    c.faults = [chaos.Fault(t0 + 5, "fio", 1, "fio (prepare step)"), chaos.Fault(t0 + 25, "fio", 2, "fio")]
    chaos.judge(c, 0)
    assert [f.verdict.split(":")[0] for f in c.faults] == ["ok", "miscategorised"], [f.verdict for f in c.faults]


def test_a_fio_trials_container_killed_in_its_prepare_step_is_the_prepare_step(tmp_path):
    trials = tmp_path / "c1" / "trials"
    trials.mkdir(parents=True)
    t0 = chaos._t("2026-12-02T10:00:00+00:00")
    _attempt(trials, "a.json", "00", "10", "rr", "prepare")  # exited 137 before the start
    _attempt(trials, "b.json", "20", "30", "pgbench-tpcb", "prepare")
    c = chaos.Campaign(tmp_path / "c1")
    c.faults = [chaos.Fault(t0 + 5, "container", 1, "container init sh"), chaos.Fault(t0 + 25, "container", 2, "sh")]
    chaos.judge(c, 0)
    assert [f.verdict.split(":")[0] for f in c.faults] == ["ok", "miscategorised"], [f.verdict for f in c.faults]


def test_a_fault_just_after_a_trial_was_stored_or_before_it_began_is_between(tmp_path):
    """Seed 7: a dockerd killed 0.1 s after a trial's result was written, and a fio killed 0.5 s before the next
    trial began, were each judged against that trial through its whole-second times. The result file's write
    time, less the trial's exact duration, places it to within the write's delay."""
    trials = tmp_path / "c1" / "trials"
    trials.mkdir(parents=True)
    t0 = chaos._t("2026-12-02T10:00:00+00:00")
    _attempt(trials, "a.json", "15", "20", "rr", None)  # stood: stored at 20.2 after 4.7 s
    _attempt(trials, "b.json", "30", "34", "pgbench-tpcb", "daemon_died")  # began at 30.6, for 3.6 s
    _attempt(trials, "c.json", "40", "45", "rr", None)  # its file copied later: the whole seconds are all there is
    for name, written, took in (("a.json", 20.2, 4.7), ("b.json", 34.2, 3.6), ("c.json", 90.0, 5.0)):
        doc = json.loads((trials / name).read_text())
        (trials / name).write_text(json.dumps({**doc, "duration_s": took}))
        os.utime(trials / name, (t0 + written, t0 + written))
    c = chaos.Campaign(tmp_path / "c1")
    c.faults = [
        chaos.Fault(t0 + 20.3, "dockerd", 1, "dockerd"),  # after a.json was written
        chaos.Fault(t0 + 29.5, "fio", 2, "fio"),  # before b began, within its whole second's edge
        chaos.Fault(t0 + 19.9, "fio", 3, "fio"),  # inside a, which stood: wrong
        chaos.Fault(t0 + 33.0, "dockerd", 4, "dockerd"),  # inside b
        chaos.Fault(t0 + 39.5, "fio", 5, "fio"),  # c's whole second, widened: inside, and c stood: wrong
    ]
    chaos.judge(c, 0)
    verdicts = [f.verdict.split(":")[0] for f in c.faults]
    assert verdicts == ["between", "between", "miscategorised", "ok", "miscategorised"], [f.verdict for f in c.faults]
