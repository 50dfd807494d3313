"""bench/pgbench_overhead.py reads pgbench's own tps by hand: an output without it is a clear error, not a
traceback (issue 33: the type checker found the unchecked match)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import pgbench_overhead  # noqa: E402

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
