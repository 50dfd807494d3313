from strata.analysis.validity import above_raw, cache_flag, sync_flag

MiB = 1 << 20


def test_honest_direct_io_is_not_flagged():
    f = cache_flag({"read": 500 * MiB, "write": 0}, {"read_bytes": 510 * MiB, "write_bytes": 0}, True, "vda", "bind")
    assert not f["suspect"] and f["evidence"]["read_disk_share"] > 1


def test_cache_answering_reads_is_flagged_with_evidence():
    f = cache_flag({"read": 2000 * MiB, "write": 0}, {"read_bytes": 3 * MiB, "write_bytes": 0}, True, "vda", "layer")
    assert f["suspect"] and "cache answered" in f["reason"]
    assert f["evidence"]["read_workload_bytes"] == 2000 * MiB and f["evidence"]["read_disk_bytes"] == 3 * MiB


def test_buffered_and_tmpfs_are_expected_not_errors():
    assert cache_flag({"read": MiB}, {}, False, "vda", "bind")["expected"]
    assert cache_flag({"read": MiB}, {}, True, "vda", "tmpfs")["expected"]


def test_small_transfers_are_not_judged():
    f = cache_flag({"read": 4 * MiB, "write": 0}, {"read_bytes": 0, "write_bytes": 0}, True, "vda", "bind")
    assert not f["suspect"]


def test_above_raw():
    assert above_raw(200_000, 12_000, "abc")["ratio"] > 16
    assert above_raw(12_500, 12_000, "abc") is None
    assert above_raw(1, None, None) is None


def test_sync_skew():
    assert not sync_flag([10.0, 10.2, 10.1], 30)["suspect"]
    s = sync_flag([10.0, 14.0], 30)
    assert s["suspect"] and s["skew_s"] == 4.0
    assert not sync_flag([None], 30)["suspect"]
