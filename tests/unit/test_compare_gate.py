"""`strata compare A B --fail-on LEVEL`: a gate for a pipeline, on stored result sets (tests/data/results/fs-compare)
copied with one configuration made 30% slower."""

import json
import shutil
from pathlib import Path

import pytest

from strata.analysis.compare import compare
from strata.cli.main import main
from strata.results.store import load_results

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
SLOWED = {"filesystem": "btrfs", "path": "bind", "workload": "rw", "load": "high"}  # its interval: about +-20%
NAME = "loop/btrfs/native/bind rw high"


def _copy(tmp: Path, name: str, factor: float = 1.0) -> Path:
    """fs-compare copied, with the headline of SLOWED's trials times `factor`."""
    out = tmp / name
    shutil.copytree(DATA / "fs-compare", out)
    for p in (out / "trials").glob("*.json"):
        r = json.loads(p.read_text())
        if factor != 1.0 and all(r["labels"][k] == v for k, v in SLOWED.items()):
            primary = r["metrics"]["primary"]  # schema 1: iops and bw_bytes, migrated when loaded
            for k in ("value", "iops", "bw_bytes"):
                if k in primary:
                    primary[k] *= factor
            p.write_text(json.dumps(r))
    return out


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gate")
    return _copy(tmp, "a"), _copy(tmp, "b", 0.7)


def test_a_stack_30_percent_slower_fails_the_gate_and_is_named(sets, capsys):
    a, b = sets
    assert main(["compare", str(a), str(b), "--fail-on", "worse"]) == 1
    out = capsys.readouterr().out
    assert "gate --fail-on worse: FAILED, 1 configuration(s):" in out
    assert f"  {NAME}: worse, -30.0% [" in out


def test_reversed_or_equal_sets_pass(sets, capsys):
    a, b = sets
    assert main(["compare", str(b), str(a), "--fail-on", "worse"]) == 0  # B is faster than A there
    assert main(["compare", str(a), str(a), "--fail-on", "worse"]) == 0
    assert main(["compare", str(a), str(a), "--fail-on", "regression"]) == 0
    assert "gate --fail-on regression: passed" in capsys.readouterr().out


def test_levels_hold_each_other():
    """worse within regression within undecided, on every match of the slowed set and of a noisy pair."""
    a, b = load_results(str(DATA / "quick-a")), load_results(str(DATA / "quick-b"))
    for m in compare(a, b).matches:
        assert not m.fails("worse") or m.fails("regression")
        assert not m.fails("regression") or m.fails("undecided")
    # two equal sets: every match is undecided or the same, and `undecided` fails the undecided ones only
    same = compare(a, a).matches
    assert [m.fails("undecided") for m in same] == [m.better == "undecided" for m in same]


def test_the_margin_decides_worse_beyond_it(sets, capsys):
    a, b = sets
    # -30% [-42.0%, -15.5%]: at a margin of 60% it is worse (not within +-60%) but not beyond the margin
    # (its upper end is above -37.5%, 1/1.6 - 1); at 80% it is within the margin: the same
    assert main(["compare", str(a), str(b), "--fail-on", "worse", "--margin", "60%"]) == 0
    assert main(["compare", str(a), str(b), "--fail-on", "regression", "--margin", "60%"]) == 1
    assert "  loop/btrfs/native/bind rw high: worse, -30.0% [-42.0%, -15.5%] at +-60%" in capsys.readouterr().out
    assert main(["compare", str(a), str(b), "--fail-on", "regression", "--margin", "0.8"]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--json", "--margin", "80%"]) == 0
    (m,) = [m for m in json.loads(capsys.readouterr().out)["matches"] if m["configuration"] == NAME]
    assert m["b_is"] == "same" and m["margin"] == 0.8


@pytest.mark.parametrize("bad", ["0", "-5%", "150%", "abc", "nan%"])
def test_a_bad_margin_is_refused_with_exit_2(sets, bad, capsys):
    a, b = sets
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(b), f"--margin={bad}"])
    assert e.value.code == 2 and "is not a margin" in capsys.readouterr().err


def test_a_gate_over_nothing_in_common_is_an_error(sets, capsys):
    a, _ = sets
    assert main(["compare", str(a), str(DATA / "pgbench-ee1f538"), "--fail-on", "worse"]) == 2
    assert "no configuration in common" in capsys.readouterr().err


def test_the_gate_in_json(sets, capsys):
    a, b = sets
    assert main(["compare", str(a), str(b), "--fail-on", "worse", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["gate"] == {"fail_on": "worse", "failing": [NAME]}
    (m,) = [m for m in doc["matches"] if m["configuration"] == NAME]
    assert m["b_is"] == "worse" and m["status"] == "lower" and abs(m["change"] + 0.3) < 1e-9
    assert m["ci_high"] < -1 / 21  # beyond the 5% margin: B/A below 1/1.05
