"""bench/abba.py's spread alone (`--hand-only`: the side by hand at several client counts, alternated, and the sd
of its log tps, what a design's client count and number of pairs rest on) and the bounds of every number its
command line takes (issue 45)."""

import math
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import abba  # noqa: E402


def test_the_spread_alternates_the_client_counts_within_each_round(capsys):
    calls: list[tuple[str, int]] = []
    tps = iter([100.0, 200.0, 110.0, 190.0, 90.0, 210.0])

    def hand(script: str, clients: int) -> float:
        calls.append((script, clients))
        return next(tps)

    runs = abba.spread(3, ["oltp_point_select"], [8, 2], hand)
    assert calls == [("oltp_point_select", 8), ("oltp_point_select", 2)] * 3
    assert runs == {("oltp_point_select", 8): [100.0, 110.0, 90.0], ("oltp_point_select", 2): [200.0, 190.0, 210.0]}
    assert "round 2 oltp_point_select at 2 clients: by hand 190 tx/s" in capsys.readouterr().out


def test_the_spread_report_gives_the_geometric_mean_and_the_sd_of_log_tps(capsys):
    runs = {("select-only", 8): [100.0, 110.0, 90.0], ("select-only", 2): [200.0]}
    abba.spread_report(runs)
    out = capsys.readouterr().out
    sd = statistics.stdev(math.log(t) for t in (100.0, 110.0, 90.0))
    mean = math.exp(statistics.mean(math.log(t) for t in (100.0, 110.0, 90.0)))
    assert f"select-only at 8 clients by hand: {mean:,.0f} tx/s, geometric mean of 3 fresh servers; " in out
    assert f"sd of log tps {sd:.3f}" in out
    assert "select-only at 2 clients by hand: 200 tx/s, geometric mean of 1 fresh servers; sd of log tps none" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--pairs", "0"], "0 is out of range: give 1 to 1000"),
        (["--pairs", "10000000000"], "out of range: give 1 to 1000"),
        (["--runtime", "ten"], "'ten' is not a whole number: give 1 to 86400"),
        (["--clients", "1001"], "1001 is out of range: give 1 to 1000"),
        (["--hand-only", "8,8"], "names a client count twice"),
        (["--hand-only", ","], "give 1 to 8 client counts"),
        (["--hand-only", "1,2,3,4,5,6,7,8,9"], "give 1 to 8 client counts"),
        (["--hand-only", "2,0"], "0 is out of range"),
    ],
)
def test_every_number_the_command_line_takes_is_bounded_with_a_clear_error(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        abba.arguments(warmup=10, scripts="x").parse_args(argv)
    assert e.value.code == 2  # argparse's usage error, naming the option, not a traceback
    err = capsys.readouterr().err
    assert message in err and argv[0] in err


def test_the_spread_needs_three_fresh_servers_and_the_pairs_ten(monkeypatch):
    monkeypatch.delenv("STRATA_BENCH_TINY", raising=False)
    ap = abba.arguments(warmup=10, scripts="a,b")
    assert abba.scripts_of(ap.parse_args(["--hand-only", "8,2", "--pairs", "3"])) == ["a", "b"]
    with pytest.raises(SystemExit, match="at least 3 fresh servers give the spread"):
        abba.scripts_of(ap.parse_args(["--hand-only", "8,2", "--pairs", "2"]))
    with pytest.raises(SystemExit, match="at least 10 pairs give the interval"):
        abba.scripts_of(ap.parse_args(["--pairs", "9"]))
    assert ap.parse_args(["--hand-only", " 8, 2 "]).hand_only == [8, 2]


@pytest.mark.parametrize("size", ["3X", "0G", "100G", "511M", "G", "9" * 50])
def test_the_loop_device_size_is_bounded_with_a_clear_error(size, capsys):
    with pytest.raises(SystemExit):
        abba.arguments(warmup=10, scripts="x").parse_args(["--size", size])
    assert "give 512M to 64G, a whole number of G or M (3G)" in capsys.readouterr().err


def test_a_loop_device_size_in_bounds_is_taken_as_written():
    ap = abba.arguments(warmup=10, scripts="x")
    assert ap.parse_args(["--size", "512M"]).size == "512M"
    assert ap.parse_args(["--size", "64G"]).size == "64G"
