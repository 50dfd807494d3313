"""/proc/diskstats of every layer: flushes and discards where the kernel counts them, each disk's write cache,
and the counters over the workload's measured window (collectors/diskstats.py)."""

from pathlib import Path

import pytest

from strata.collectors.base import CollectContext
from strata.collectors.cgroup import final_counters, read_blkio
from strata.collectors.diskstats import DiskstatsCollector, parse_line, queue_facts, read_diskstats, within

# Three kernels' lines: 11 fields after the name (before 4.18), 15 (discards, 4.18), 17 (flushes, 5.5).
LINES = """   7       0 loop0 10 0 80 5 20 3 160 7 0 12 12
   7       1 loop1 10 0 80 5 20 3 160 7 0 12 12 4 0 64 1
 254       0 vda 10 0 80 5 20 3 160 7 0 12 12 4 0 64 1 9 2
"""


def test_every_kernels_line_gives_the_fields_it_has():
    old, discards, flushes = (parse_line(line) for line in LINES.splitlines())
    assert old[0] == "loop0" and "discard_ios" not in old[1] and "flush_ios" not in old[1]
    assert old[1]["write_merges"] == 3 and old[1]["write_sectors"] == 160
    assert discards[1]["discard_sectors"] == 64 and "flush_ios" not in discards[1]
    assert flushes[1]["flush_ios"] == 9 and flushes[1]["flush_ms"] == 2
    assert parse_line("   7 0 loop9 1 2 3") is None  # too short: not a disk line
    assert set(read_diskstats(["vda", "loop1"], LINES)) == {"vda", "loop1"}


def test_the_real_proc_diskstats_parses():
    rows = [parse_line(line) for line in open("/proc/diskstats").read().splitlines()]
    assert rows and all(r is not None and "write_merges" in r[1] for r in rows)


def test_queue_facts_of_a_disk_and_of_a_partition(tmp_path):
    (tmp_path / "vda" / "queue").mkdir(parents=True)
    (tmp_path / "vda" / "queue" / "write_cache").write_text("write back\n")
    (tmp_path / "vda" / "queue" / "fua").write_text("0\n")
    (tmp_path / "vda" / "vda1").mkdir()
    (tmp_path / "vda1").symlink_to(tmp_path / "vda" / "vda1")
    (tmp_path / "zram0" / "queue").mkdir(parents=True)
    (tmp_path / "zram0" / "queue" / "write_cache").write_text("write through\n")
    assert queue_facts("vda", tmp_path) == {"write_cache": "write back", "fua": False}
    assert queue_facts("vda1", tmp_path) == {"write_cache": "write back", "fua": False}
    assert queue_facts("zram0", tmp_path) == {"write_cache": "write through", "fua": None}
    assert queue_facts("gone", tmp_path) == {"write_cache": None, "fua": None}


def _collector(samples, times, names=("loop0",), queues=None):
    c = DiskstatsCollector(CollectContext(list(names), []), sysfs=Path("/nonexistent"))
    c.samples, c.times = samples, times
    if queues:
        c.queues = queues
    return c


def _row(writes, merges, sectors, flushes=None, discards=None):
    r = {k: 0 for k in ("read_ios", "read_merges", "read_sectors", "read_ms", "write_ms", "in_flight", "io_ms")}
    r.update(write_ios=writes, write_merges=merges, write_sectors=sectors, weighted_ms=0)
    if discards is not None:
        r.update(discard_ios=discards, discard_merges=0, discard_sectors=8 * discards, discard_ms=0)
    if flushes is not None:
        r.update(flush_ios=flushes, flush_ms=flushes)
    return r


def test_summary_and_series_hold_flushes_discards_and_merges_with_the_write_cache():
    rows = [_row(0, 0, 0, 0, 0), _row(100, 10, 800, 40, 2), _row(300, 10, 2400, 90, 2)]
    c = _collector([{"loop0": r} for r in rows], [0.0, 1.0, 2.0], queues={"loop0": {"write_cache": "write back"}})
    s = c.summary()["loop0"]
    assert s["flush_ios"] == 90 and s["discard_ios"] == 2 and s["discard_bytes"] == 16 * 512
    assert s["write_merges"] == 10 and s["write_bytes"] == 2400 * 512 and s["write_cache"] == "write back"
    series = c.series()["loop0"]
    assert series["flush_ios"] == [40, 50] and series["write_ios"] == [100, 200] and series["discard_ios"] == [2, 0]


def test_a_kernel_without_flush_counts_stores_none_rather_than_zero():
    rows = [_row(0, 0, 0), _row(100, 0, 800)]
    c = _collector([{"loop0": r} for r in rows], [0.0, 1.0])
    assert "flush_ios" not in c.summary()["loop0"] and "flush_ios" not in c.series()["loop0"]


def test_within_prorates_the_seconds_at_the_windows_edges():
    series = {
        "t": [10.0, 11.0, 12.0, 13.0],
        "diskstats": {"loop0": {"write_ios": [100, 200, 400], "flush_ios": [1, 2, 4]}},
    }
    got = within(series, 10.5, 12.5)
    assert got == {"loop0": {"write_ios": pytest.approx(50 + 200 + 200), "flush_ios": pytest.approx(0.5 + 2 + 2)}}
    assert within(series, 20.0, 30.0) is None  # the samples do not cover the window: another clock
    assert within(series, 12.0, 12.0) is None
    assert within({"t": [], "diskstats": {}}, 0.0, 1.0) is None


def test_a_containers_discards_are_its_own_view(tmp_path):
    f = tmp_path / "blkio.throttle.io_service_bytes"
    f.write_text("7:0 Read 4096\n7:0 Write 8192\n7:0 Discard 65536\n7:0 Total 77824\n7:1 Write 4096\nTotal 0\n")
    assert read_blkio(f) == {"read_bytes": 4096, "write_bytes": 12288, "discard_bytes": 65536}
    final = "== blkio/blkio.throttle.io_service_bytes\n7:0 Write 10\n7:0 Discard 20\n"
    assert final_counters(final)["discard_bytes"] == 20 and final_counters(final)["write_bytes"] == 10
