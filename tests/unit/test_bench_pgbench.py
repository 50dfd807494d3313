"""bench/pgbench_overhead.py reads pgbench's own tps by hand (an output without it is a clear error, not a
traceback: issue 33, the type checker found the unchecked match), and its headline is the geometric mean of the
paired ratios with a 95% interval (issue 43)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import pgbench_overhead  # noqa: E402
from abba import paired  # noqa: E402  (the ABBA benches' paired ratio, bench/abba.py)

OUTPUT = """pgbench (15.5)
transaction type: <builtin: TPC-B (sort of)>
number of transactions actually processed: 24018
latency average = 3.330 ms
initial connection time = 6.204 ms
tps = 1201.038419 (without initial connection time)
"""


def test_tps_is_read_from_pgbench_output():
    assert pgbench_overhead.tps_of(OUTPUT) == pytest.approx(1201.038419)


def test_output_without_tps_is_a_clear_error():
    cut = OUTPUT.replace("tps = 1201.038419 (without initial connection time)\n", "")
    with pytest.raises(SystemExit, match="pgbench printed no `tps = ` line") as e:
        pgbench_overhead.tps_of(cut)
    assert "latency average = 3.330 ms" in str(e.value)  # what it printed instead, to see why


def test_the_paired_ratio_is_a_geometric_mean_with_its_95_percent_interval():
    mean, low, high = paired([1.0, 0.98, 1.02, 0.99, 1.01, 1.0, 0.97, 1.03, 1.0, 1.0])
    assert mean == pytest.approx(1.0, abs=1e-3) and 0.98 < low < 1.0 < high < 1.02
    assert paired([2.0, 0.5])[0] == pytest.approx(1.0)  # logs: a halving offsets a doubling
    assert paired([1.1])[1:] == (None, None)  # one pair: no interval
