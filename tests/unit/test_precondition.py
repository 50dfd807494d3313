"""`precondition:` (stack/precondition.py): its parameters bounded, SNIA PTS's steady-state window, the plan's
words and times, the purge refusal, and trials stored before it keep their ids."""

import pytest
from pydantic import ValidationError

from strata.core.errors import SpecErrors
from strata.experiment.load import parse_spec
from strata.experiment.plan import resolve
from strata.stack import precondition
from strata.stack.devices.block import BlockParams
from strata.stack.devices.loop import LoopParams
from strata.stack.devices.zram import ZramParams
from strata.stack.precondition import Precondition, Steady, discard_refusal, plan_text, window

HOST = {"cpus": 2, "memory_bytes": 8 << 30}
BASE = {"name": "t", "filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"], "workloads": ["rr"]}


def test_fill_true_is_ptss_two_passes_and_every_number_is_bounded():
    assert Precondition(fill=True).fill == 2 and Precondition(fill=False).fill == 0
    assert Precondition().empty and not Precondition(purge=True).empty
    assert Precondition(steady=True).steady_rounds == Steady()
    assert Precondition(steady={"round": "2m", "block_size": "128KiB"}).steady_rounds == Steady(
        round=120, block_size=128 << 10
    )
    for bad in (
        {"fill": 11},
        {"fill": -1},
        {"steady": {"round": 4}},
        {"steady": {"round": "2h"}},
        {"steady": {"round": [1]}},
        {"steady": {"max_rounds": 4}},
        {"steady": {"max_rounds": 101}},
        {"steady": {"block_size": "1000"}},
        {"steady": {"block_size": "32MiB"}},
        {"steady": {"queue_depth": 0}},
        {"steady": {"pattern": "randread"}},
        {"wipe": True},
    ):
        with pytest.raises(ValidationError):
            Precondition.model_validate(bad)


def test_the_window_holds_on_a_flat_series_and_not_on_a_drift_or_a_spread():
    assert window([100.0] * 4) is None  # fewer than five rounds: no window yet
    flat = window([500.0, 120.0, 101.0, 99.0, 100.0, 102.0, 98.0])
    assert flat is not None and flat["holds"] and flat["rounds"] == [3, 7], flat
    # a drift: every round 4% below the one before: range 16% of the mean (within 20%) but the fit's
    # excursion over the window 16% (beyond 10%)
    drift = window([100.0, 96.0, 92.0, 88.0, 84.0])
    assert drift is not None and not drift["holds"]
    assert drift["excursion"] == pytest.approx(16 / 92, abs=1e-4)
    assert drift["slope_excursion"] == pytest.approx(16 / 92, abs=1e-4)
    spread = window([80.0, 120.0, 100.0, 120.0, 80.0])  # no slope, a range of 40% of the mean
    assert spread is not None and not spread["holds"] and spread["slope_excursion"] == pytest.approx(0.0, abs=1e-9)
    idle = window([0.0] * 5)  # a device that did nothing is not steady
    assert idle is not None and not idle["holds"]


def test_steady_rounds_stop_once_the_window_holds_and_at_max_rounds(monkeypatch):
    def rounds(values):
        it = iter(values)
        monkeypatch.setattr(precondition, "_fio", lambda *a, **k: {"write": {"iops": next(it)}})

    rounds([300.0, 150.0, 101.0, 100.0, 99.0, 100.0, 100.0, 55.0])
    done = precondition._steady(Steady(round=5, max_rounds=25), "/dev/null")
    assert done["reached"] and len(done["rounds"]) == 7, done  # rounds 3..7 hold
    rounds([100.0, 50.0] * 10)
    done = precondition._steady(Steady(round=5, max_rounds=6), "/dev/null")
    assert not done["reached"] and len(done["rounds"]) == 6 and done["window"]["rounds"] == [2, 6]


def test_the_plan_says_each_part_and_its_time():
    text = plan_text(Precondition(purge=True, fill=2, steady=True), 2 << 30)
    assert "purge: blkdiscard" in text
    assert "fill: 2 × 2,048 MiB = 4,096 MiB of sequential writes (41 s at 100 MiB/s, 8 s at 500 MiB/s)" in text
    assert "steady: 5 to 25 rounds of 60 s of randwrite 4096 B at QD16 (300 to 1,500 s)" in text
    assert plan_text(Precondition(fill=1), None) == "fill: 1 sequential pass(es) of the whole device"


def test_validate_lists_the_preconditions():
    dev = {"type": "loop", "size": "2GiB", "precondition": {"fill": True}}
    plan = resolve(*parse_spec({**BASE, "devices": [dev, "zram"]}), HOST)
    assert plan.preconditions == [
        "loop: fill: 2 × 2,048 MiB = 4,096 MiB of sequential writes (41 s at 100 MiB/s, 8 s at 500 MiB/s)"
    ]


def test_purge_of_a_device_without_discard_is_refused_at_validate(monkeypatch):
    monkeypatch.setattr("strata.experiment.plan.discard_refusal", lambda k: f"{k} takes no discard")
    monkeypatch.setattr("strata.stack.devices.block.write_problems", lambda p, d: [])
    exp, wls = parse_spec({**BASE, "devices": [{"type": "block", "path": "/dev/vdz", "precondition": {"purge": True}}]})
    with pytest.raises(SpecErrors) as e:
        resolve(exp, wls, HOST)
    assert any(p == "devices[0].precondition.purge" and "vdz takes no discard" in why for p, why, _ in e.value.errors)


def test_discard_refusal_names_what_it_cannot_read():
    assert "not a block device" in (discard_refusal("no-such-disk") or "")


def test_the_new_keys_stay_out_of_a_dump_at_their_default():
    """A stored trial's resolved device is what it was before `sparse` and `precondition` existed."""
    assert set(LoopParams().model_dump()) == {"type", "name", "size", "direct_io", "backing_file"}
    assert "precondition" not in ZramParams().model_dump_json()
    assert "precondition" not in BlockParams(path="/dev/vdb").model_dump()
    dumped = LoopParams(sparse=True, precondition={"fill": 1}).model_dump()
    assert dumped["sparse"] is True and dumped["precondition"] == {"purge": False, "fill": 1, "steady": False}
