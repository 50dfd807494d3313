import re
from pathlib import Path

from strata.results import validity
from strata.results.validity import above_raw


def cache_flag(*a):
    return validity.cache(*a).to_json()


def sync_flag(starts, runtime_s):
    return validity.sync([], starts, runtime_s).to_json()


MiB = 1 << 20


def test_honest_direct_io_is_not_flagged():
    f = cache_flag(
        {"read": 500 * MiB, "write": 0},
        {"loop0": {"read_bytes": 500 * MiB}, "vda": {"read_bytes": 510 * MiB}},
        True,
        "bind",
    )
    assert not f["suspect"] and f["evidence"]["read_disk_share"] == 1.0


def test_cache_answering_reads_is_flagged_with_evidence():
    f = cache_flag(
        {"read": 2000 * MiB, "write": 0}, {"loop0": {"read_bytes": 3 * MiB, "write_bytes": 0}}, True, "layer"
    )
    assert f["suspect"] and "cache answered" in f["reason"]
    assert f["evidence"]["read_workload_bytes"] == 2000 * MiB and f["evidence"]["read_disk_bytes"] == 3 * MiB


def test_a_shortfall_at_any_layer_is_a_cache():
    # a busy shared disk below cannot hide that the device under test moved nothing
    f = cache_flag(
        {"read": 800 * MiB}, {"loop0": {"read_bytes": 10 * MiB}, "vda": {"read_bytes": 900 * MiB}}, True, "layer"
    )
    assert f["suspect"] and "loop0" in f["reason"] and "vda" not in f["reason"]
    # a buffered loop device: the loop device sees every request, the disk behind it does not
    f = cache_flag(
        {"read": 800 * MiB}, {"loop0": {"read_bytes": 800 * MiB}, "vda": {"read_bytes": 5 * MiB}}, True, "device"
    )
    assert f["suspect"] and "vda" in f["reason"]


def test_buffered_and_tmpfs_are_expected_not_errors():
    assert cache_flag({"read": MiB}, {}, False, "bind")["expected"]
    assert cache_flag({"read": MiB}, {}, True, "tmpfs")["expected"]


def test_small_transfers_are_not_judged():
    f = cache_flag({"read": 4 * MiB, "write": 0}, {"vda": {"read_bytes": 0, "write_bytes": 0}}, True, "bind")
    assert not f["suspect"]


def test_above_raw():
    assert above_raw(200_000, 12_000, "abc", None).evidence["ratio"] > 16
    assert "a cache answered" in above_raw(200_000, 12_000, "abc", None).reason
    moved = above_raw(20_000, 12_000, "abc", True)
    assert "disturbed" in moved.reason and "unconfirmed" in moved.reason
    assert above_raw(12_500, 12_000, "abc", None) is None
    assert above_raw(1, None, None, None) is None


def test_sync_judged_on_the_workloads_own_windows():
    """Wrappers that started together say nothing when the I/O itself started 2 s apart (issue 14)."""
    s = validity.sync([(10.0, 15.0), (12.0, 17.0)], [9.0, 9.05], 5).to_json()
    assert s["suspect"] and s["basis"] == "workload" and s["skew_s"] == 2.0 and s["overlap"] == 0.6
    assert s["wrapper_skew_s"] < 0.1
    ok = validity.sync([(10.0, 15.0), (10.2, 15.1)], [9.0, 9.0], 5).to_json()
    assert not ok["suspect"] and ok["overlap"] > 0.9
    # one instance without a window: the wrappers' start times decide
    assert validity.sync([(10.0, 15.0), None], [9.0, 14.0], 5).to_json()["basis"] == "wrapper"


def test_the_partial_last_second_never_counts():
    series = [[1, 100], [2, 100], [3, 100], [4, 100], [5, 100], [6, 100], [7, 3]]
    assert validity.steady(series).steady
    assert validity.full_seconds(series)[-1] == 100


def test_sync_skew():
    assert not sync_flag([10.0, 10.2, 10.1], 30)["suspect"]
    s = sync_flag([10.0, 14.0], 30)
    assert s["suspect"] and s["skew_s"] == 4.0
    assert not sync_flag([None], 30)["suspect"]


def test_final_cgroup_counters():
    from strata.collectors.cgroup import final_counters

    text = (
        "== cpuacct/cpuacct.usage\n123456\n== memory/memory.max_usage_in_bytes\n4096\n"
        "== blkio/blkio.throttle.io_service_bytes\n7:0 Read 1000\n7:0 Write 24\n7:0 Total 1024\nTotal 1024\n"
        "== memory/memory.oom_control\noom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
    )
    c = final_counters(text)
    assert c["cpu_ns"] == 123456 and c["memory_max_bytes"] == 4096
    assert (c["read_bytes"], c["write_bytes"], c["oom_kills"]) == (1000, 24, 1)


def test_sync_of_a_server_workload_is_judged_on_its_clients_windows():
    """Cassandra nodes started 3 s apart by design (one joins after the other, across hosts): their
    clients' windows decide, however many nodes serve them."""
    one = validity.sync([(10.0, 18.0)], [0.0, 3.15], 8).to_json()
    assert not one["suspect"] and one["reason"] == "one measured window" and one["wrapper_skew_s"] == 3.15
    two = validity.sync([(10.0, 18.0), (10.1, 18.0)], [0.0, 3.15, 3.2], 8).to_json()
    assert not two["suspect"] and two["basis"] == "workload" and two["instances"] == 3
    late = validity.sync([(10.0, 18.0), (16.0, 24.0)], [0.0, 0.0, 0.0], 8).to_json()
    assert late["suspect"] and late["basis"] == "workload"


CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]+)\s*(?::[^=\n]+)?=", re.M)


def test_a_flags_threshold_is_defined_only_in_validity():
    """Issue 33: the analysis had its own MIN_ABOVE (above_raw by intervals) and MAX_CV (spread). Every
    threshold of a flag is defined in results/validity/, beside its judgement, and read from there."""
    src = Path(__file__).resolve().parents[2] / "src" / "strata"
    home = src / "results" / "validity"
    names = {n for p in home.glob("*.py") for n in CONSTANT.findall(p.read_text())}
    assert {"MIN_ABOVE", "MAX_CV", "ABOVE_RAW_TOLERANCE", "MIN_DEVICE_SHARE", "MIN_OVERLAP", "STEADY_WINDOW_S"} <= names
    again = {
        (str(p.relative_to(src)), n)
        for p in src.rglob("*.py")
        if home not in p.parents
        for n in CONSTANT.findall(p.read_text())
        if n in names
    }
    assert not again
