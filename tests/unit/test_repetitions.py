"""repeat.py: `repetitions: auto` driven round by round with fabricated results (issue 34's bugs)."""

import random

from strata.analysis.cells.cells import build_cells
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.results.result import Result
from strata.run.repeat import Repetitions
from strata.workloads.base import headline


def _exp(tmp_path, **over):
    spec = {
        "name": "unit",
        "workdir": str(tmp_path / "work"),
        "devices": ["loop"],
        "filesystems": ["xfs", "ext4", "btrfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"null": {"iops": 500}}],
        "loads": ["low"],
        "repetitions": "auto",
        "max_repetitions": 10,
    }
    spec.update(over)
    exp, wls = parse_spec(spec)
    return exp, expand(exp, wls)[0]


def _result(exp, t, value):
    """A stored result of trial t: ok with headline `value`, or failed when value is None."""
    r = {
        "trial_id": t.id,
        "trial": t.resolved(),
        "design": exp.design(t.workload.name),
        "labels": {
            "device": t.device.name,
            "filesystem": t.filesystem.name,
            "runtime": t.runtime.name,
            "path": t.path,
            "workload": t.workload.name,
            "load": t.load.name,
            "repetition": t.repetition,
        },
        "status": "ok" if value is not None else "failed",
    }
    if value is not None:
        r["metrics"] = {"kind": "null", "primary": headline(value, "IOPS", "iops", iops=value)}
    return Result.from_json(r)


def _drive(exp, trials, value_of):
    """Run the rounds, each trial's value from value_of(filesystem, repetition); the repetitions each got."""
    reps = Repetitions(exp, trials)
    count: dict[str, int] = {}
    for round_ in reps.rounds():
        for t in round_:
            reps.record(_result(exp, t, value_of(t.filesystem.name, t.repetition)))
            count[t.filesystem.name] = count.get(t.filesystem.name, 0) + 1
    return reps, count


def test_a_stack_with_one_successful_trial_does_not_hold_its_group_to_max(tmp_path):
    """Issue 34 (racing.py): btrfs fails every trial but one; xfs leads ext4 by a factor of two. Before, the
    group was not raced while one member had fewer than 2 trials, so xfs and ext4 ran to max_repetitions (10);
    now ext4 is eliminated at the first look and xfs stops once its comparisons are decided."""
    exp, trials = _exp(tmp_path)
    rng = random.Random(1)

    def value(fs, rep):
        if fs == "btrfs":
            return 480.0 if rep == 0 else None
        return (1000.0 if fs == "xfs" else 500.0) * (1 + rng.gauss(0, 0.01))

    reps, count = _drive(exp, trials, value)
    stops = {k.split("/")[1]: v["stopped"] for k, v in reps.report().items()}
    assert stops["ext4"] == "eliminated" and count["ext4"] == 3
    assert stops["xfs"] == "decided" and count["xfs"] == 3
    assert count["btrfs"] == 10  # it goes on, on its own, for an interval of its own


def test_precise_is_judged_at_the_planned_looks_at_the_level_the_report_shows(tmp_path):
    """Issue 34 (repeat.py): a configuration compared with none stopped as `precise` when a plain 95% interval
    was within `precision` at any round, and stored that interval's half-width, which is not the one the
    report shows (auto's intervals are wider). Now it is judged at the looks (3, 6, 10), on the interval the
    report shows, and the stored half-width is that interval's."""
    exp, trials = _exp(tmp_path, filesystems=["xfs"], precision="4%")
    values = [1000, 1040, 960, 1010, 990, 1005, 995, 1002, 998, 1001]
    reps, count = _drive(exp, trials, lambda fs, rep: float(values[rep]))
    # a plain 95% interval is within 4% at 5 trials (the old rule stopped there, storing 3.6% where the report
    # shows 3.9%); auto's interval at the look of 6
    (p,) = reps.report().values()
    assert p["stopped"] == "precise" and count["xfs"] == 6
    (cell,) = build_cells(reps.results, judge_steady=False)
    assert p["half_width"] == cell.summary.half_width / cell.summary.mean


def test_the_looks_are_those_the_budget_pays_for(tmp_path):
    """Issue 41: the quickstart's budget paid for 3 rounds, yet its intervals were priced for a look at 6 as
    well. The looks are planned before the first trial from the budget and each round's estimated trial time
    (the null workload's estimate: its sleep plus 0.1 s), and stored in every result's design."""
    exp, trials = _exp(tmp_path, max_repetitions=6)
    assert Repetitions(exp, trials).looks == (3, 6)  # no budget: min..max
    per_round = sum(1 for t in trials if t.repetition == 0) * 0.1  # 3 configurations of the null workload
    exp, trials = _exp(tmp_path, max_repetitions=6, budget=per_round * 3.5)
    reps = Repetitions(exp, trials)
    assert reps.looks == (3,) and reps.design.final == 3 and not reps.design.sequential
    assert reps.design_doc("null")["looks"] == [3] and reps.design_doc("null")["max"] == 6
    exp, trials = _exp(tmp_path, max_repetitions=10, budget=per_round * 6.5)
    assert Repetitions(exp, trials).looks == (3, 6)


def test_a_run_stops_at_its_last_planned_look_and_set_up_is_not_budget(tmp_path, monkeypatch):
    """No configuration repeats beyond the last look the budget pays for; building stacks and loading images
    (each result's `setup_s`) are not counted against the budget."""
    exp, trials = _exp(tmp_path, max_repetitions=6, budget=10_000.0)
    clock = {"t": 0.0}
    monkeypatch.setattr("strata.run.repeat.time.monotonic", lambda: clock["t"])
    reps = Repetitions(exp, trials, run_id="r")
    assert reps.looks == (3, 6)
    rng = random.Random(2)
    for round_ in reps.rounds():
        for t in round_:
            r = _result(exp, t, 1000 * (1 + rng.gauss(0, 0.2)))
            r.run_id, r.setup_s = "r", 3000.0
            clock["t"] += 3001.0  # a minute of trial, 50 of set-up
            reps.record(r)
    stops = {v["stopped"] for v in reps.report().values()}
    assert reps.setup_s > 10_000 and stops <= {"max_repetitions", "undecidable", "eliminated", "equivalent", "decided"}
    assert max(v["repetitions"] for v in reps.report().values()) <= 6
