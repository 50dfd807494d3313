"""The flush and absorbed flags at their thresholds (results/validity/flushes.py, absorbed.py), each threshold's
reason in docs/validity.md; and a trial's `writes` with each layer's write amplification (results/writes.py)."""

import pytest

from strata.results import writes
from strata.results.flags import Flag, Flags
from strata.results.result import Result
from strata.results.validity import TrialEvidence, judge_trial
from strata.results.validity.absorbed import (
    JOURNAL_MERGES_PER_SYNC,
    MAX_MERGED_SHARE,
    MIN_CHECKED_WRITES,
    MIN_WRITE_SHARE,
    absorbed,
)
from strata.results.validity.flushes import MIN_CHECKED_SYNCS, MIN_FLUSH_SHARE, across_hosts, fix_words, flush
from strata.workloads.base import DirectWrites, Parsed, Syncs

BACK = {"write_cache": "write back", "fua": False}
EXT4 = {"path": "bind", "filesystem": "ext4", "mount_options": []}


def disks(*flushes, cache=BACK):
    return {name: {"flush_ios": f, **cache} for name, f in zip(("loop0", "vda"), flushes)}


# ---- flush ----------------------------------------------------------------------------------------


def test_no_syncs_asked_for_is_no_flag():
    assert flush(None, disks(0, 0), EXT4) is None
    assert flush(Syncs(0, 0, "fsync"), disks(0, 0), EXT4) is None


def test_a_stack_that_flushes_once_a_sync_passes():
    j = flush(Syncs(8242, 1, "fsync"), disks(9187, 9187), EXT4)
    assert not j.suspect and "every layer saw 9187 or more of the 8242 flushes owed" in j.reason
    assert j.evidence["per_disk"]["loop0"] == {"flush_ios": 9187, **BACK} and j.evidence["owed"] == 8242


def test_the_owed_flushes_are_syncs_over_streams_and_half_of_them_must_show():
    syncs = Syncs(1000, 4, "fsync")  # 250 owed: a flush answers at most one sync of each of 4 jobs
    edge = MIN_FLUSH_SHARE * 250
    assert not flush(syncs, disks(edge, 1000), EXT4).suspect
    j = flush(syncs, disks(edge - 1, 1000), EXT4)
    assert j.suspect and "loop0 saw 124" in j.reason and "vda" not in j.reason
    # a layer below that saw fewer is a layer that dropped them, whatever the device under test saw
    assert "vda saw 3" in flush(syncs, disks(250, 3), EXT4).reason


def test_barrier_0_is_flagged_with_its_fix():
    stack = {**EXT4, "mount_options": ["barrier=0", "nobarrier"]}
    j = flush(Syncs(18534, 1, "fsync"), disks(1, 4), stack)
    assert j.suspect and j.warns
    assert "lost on a power failure" in j.reason and "mount ext4 without barrier=0 (nobarrier" in j.reason


def test_too_few_syncs_are_not_judged():
    assert not flush(Syncs(MIN_CHECKED_SYNCS - 1, 1, "fsync"), disks(0, 0), EXT4).suspect
    assert flush(Syncs(MIN_CHECKED_SYNCS, 1, "fsync"), disks(0, 0), EXT4).suspect


def test_tmpfs_is_flagged_whatever_the_disks_saw():
    j = flush(Syncs(5000, 1, "fsync"), disks(5000, 5000), {**EXT4, "path": "tmpfs"})
    assert j.warns and "tmpfs" in j.reason and "volume" in j.reason


def test_a_device_without_a_volatile_cache_says_so_instead_of_a_flag():
    j = flush(Syncs(5000, 1, "fsync"), {"zram0": {"flush_ios": 0, "write_cache": "write through", "fua": None}}, EXT4)
    assert not j.suspect and "write through" in j.reason and "no flush is owed" in j.reason


def test_synced_writes_on_a_disk_that_takes_fua_are_not_judged_there():
    fua = {"write_cache": "write back", "fua": True}
    assert not flush(Syncs(5000, 1, "O_DSYNC writes", by_writes=True), disks(0, cache=fua), EXT4).suspect
    assert flush(Syncs(5000, 1, "fsync"), disks(0, cache=fua), EXT4).suspect  # an fsync always flushes


def test_a_kernel_that_counts_no_flushes_is_not_judged():
    j = flush(Syncs(5000, 1, "fsync"), {"loop0": {"write_cache": "write back"}}, EXT4)
    assert not j.suspect and "not judged" in j.reason


def test_fix_words_in_the_users_terms():
    assert "disk_cache unsafe" in fix_words({"runtime": {"type": "vm", "disk_cache": "unsafe"}})
    assert "a mount without barriers" in fix_words(EXT4)


def test_across_hosts_a_host_that_dropped_them_flags_the_trial():
    ok = flush(Syncs(500, 1, "fsync"), disks(600), EXT4)
    bad = flush(Syncs(500, 1, "fsync"), disks(0), EXT4)
    j = across_hosts({"a": ok, "b": bad, "c": None}, Flag.FLUSH)
    assert j.suspect and j.reason.startswith("host b:") and set(j.evidence["hosts"]) == {"a", "b"}
    assert across_hosts({"a": None}, Flag.FLUSH) is None


# ---- absorbed -------------------------------------------------------------------------------------


def dut(ios, merges, nbytes=None):
    return {"loop0": {"write_ios": ios, "write_merges": merges, "write_bytes": nbytes or ios * 4096}}


RANDOM = DirectWrites(20000, 20000 * 4096, True)


def test_honest_o_direct_writes_pass():
    j = absorbed(RANDOM, dut(20000, 2), EXT4)
    assert not j.suspect and "each reached it as a write" in j.reason


def test_data_journal_merges_random_writes_and_is_flagged():
    # measured: 196,407 writes, 188,999 requests of 8 KiB, 189,477 merges (ext4 data=journal)
    j = absorbed(DirectWrites(196407, 196407 * 4096, True), dut(188999, 189477, 1564782212), EXT4)
    assert j.suspect and "merged into others" in j.reason
    stack = {**EXT4, "mount_options": ["data=journal"]}
    assert "without data=journal" in absorbed(RANDOM, dut(20000, 20000), stack).reason


def test_the_merged_share_threshold():
    edge = MAX_MERGED_SHARE * RANDOM.count
    assert not absorbed(RANDOM, dut(20000, edge), EXT4).suspect
    assert absorbed(RANDOM, dut(20000, edge + 1), EXT4).suspect


def test_merges_of_a_syncs_journal_commit_are_not_the_workloads():
    # measured: fsync=1 on plain ext4 merged 2.0 writes a fsync
    merges = 2 * RANDOM.count
    assert absorbed(RANDOM, dut(3 * RANDOM.count, merges), EXT4).suspect  # without syncs: absorbed
    assert not absorbed(RANDOM, dut(3 * RANDOM.count, merges), EXT4, syncs=RANDOM.count).suspect
    beyond = JOURNAL_MERGES_PER_SYNC * 100 + MAX_MERGED_SHARE * RANDOM.count + 1
    assert absorbed(RANDOM, dut(20000, beyond), EXT4, syncs=100).suspect


def test_sequential_writes_are_judged_on_their_count_only():
    seq = DirectWrites(20000, 20000 * 131072, False)
    assert not absorbed(seq, dut(10000, 10000), EXT4).suspect  # a scheduler merges adjacent O_DIRECT writes


def test_far_fewer_writes_within_the_trial_are_flagged():
    edge = MIN_WRITE_SHARE * RANDOM.count
    assert not absorbed(RANDOM, dut(edge, 0), EXT4).suspect
    j = absorbed(RANDOM, dut(edge - 1, 0), EXT4)
    assert j.suspect and "within the trial" in j.reason
    seq = DirectWrites(20000, 20000 * 131072, False)
    assert absorbed(seq, dut(3, 0), {**EXT4, "runtime": {"storage_driver": "fuse-overlayfs"}}).reason.endswith(
        "use a volume or a bind mount"
    )


def test_too_few_writes_tmpfs_and_no_counts():
    few = DirectWrites(MIN_CHECKED_WRITES - 1, 4096 * (MIN_CHECKED_WRITES - 1), True)
    assert not absorbed(few, dut(0, 0), EXT4).suspect
    assert absorbed(DirectWrites(MIN_CHECKED_WRITES, 4096 * MIN_CHECKED_WRITES, True), dut(0, 0), EXT4).suspect
    tmpfs = absorbed(RANDOM, dut(0, 0), {**EXT4, "path": "tmpfs"})
    assert tmpfs.expected and not tmpfs.warns
    assert not absorbed(RANDOM, {"loop0": {"write_bytes": 0}}, EXT4).suspect
    assert absorbed(None, dut(0, 0), EXT4) is None


# ---- both from a trial's evidence, and the trial's `writes` ---------------------------------------


def evidence(**kw):
    from strata.results.validity import MovedBytes

    totals = {"loop0": {"write_ios": 900, "write_merges": 1200, "flush_ios": 7, **BACK}}
    return TrialEvidence(
        windows=[],
        starts=[0.0],
        runtime_s=6,
        moved=MovedBytes({"write": 4096 * 1200}, totals, True, "bind"),
        stack=EXT4,
        **kw,
    )


def test_judged_on_the_measured_window_where_known_else_the_trial():
    ev = evidence(syncs=Syncs(100, 1, "fsync"), direct_writes=DirectWrites(1200, 4096 * 1200, True))
    flags, warnings = judge_trial(ev)
    assert flags.flush.suspect and flags.flush.evidence["window"] == "trial"  # 7 flushes for 100 fsyncs
    assert flags.absorbed.suspect  # 1200 merges of 1200 random writes, 400 of them the 100 syncs' commits
    assert {w.flag for w in warnings} >= {Flag.FLUSH, Flag.ABSORBED}
    measured = {"loop0": {"write_ios": 1200.0, "write_merges": 0.0, "flush_ios": 100.0}}
    flags, _ = judge_trial(evidence(syncs=ev.syncs, direct_writes=ev.direct_writes, measured=measured))
    assert not flags.flush.suspect and not flags.absorbed.suspect
    assert flags.flush.evidence["window"] == "measured" and flags.flush.evidence["per_disk"]["loop0"]["write_cache"]


def test_the_flags_round_trip_and_are_absent_when_not_judged():
    flags, _ = judge_trial(evidence())
    stored = {"flags": flags.to_json()}
    assert "flush" not in stored["flags"] and "absorbed" not in stored["flags"]
    flags, _ = judge_trial(evidence(syncs=Syncs(1000, 1, "fsync")))
    back = Flags.from_json(flags.to_json())
    assert back.flush.to_json() == flags.flush.to_json() and back.warns(Flag.FLUSH)


def test_writes_record_and_amplification():
    parsed = Parsed(
        {}, {"write": 100 << 20}, syncs=Syncs(10, 1, "fsync"), direct_writes=DirectWrites(5, 100 << 20, True)
    )
    rec = writes.record(parsed, {"loop0": {"write_bytes": 210 << 20}, "vda": {"write_bytes": 0}}, "measured")
    assert rec["amplification"] == {"loop0": 2.1, "vda": 0.0} and rec["syncs"]["count"] == 10
    assert rec["direct"] == {"count": 5, "bytes": 100 << 20, "random": True} and rec["window"] == "measured"
    assert writes.device(rec) == 2.1
    small = Parsed({}, {"write": writes.MIN_AMPLIFIED_BYTES - 1})
    assert writes.record(small, {"loop0": {"write_bytes": 1 << 30}}, "trial")["amplification"] is None
    assert writes.record(Parsed({}, {"write": writes.MIN_AMPLIFIED_BYTES}), {"loop0": {}}, "trial")[
        "amplification"
    ] == {"loop0": 0.0}


def test_older_results_have_no_write_amplification():
    older = Result.from_stored({"flags": {}, "collectors": {"diskstats": {"loop0": {"write_bytes": 1}}}})
    assert writes.amplification_of(older.writes) is None
    assert writes.device(None) is None


def test_across_hosts_each_hosts_layers():
    a = {"workload_bytes": 10, "amplification": {"loop0": 1.0}}
    b = {"workload_bytes": 20, "amplification": {"loop0": 3.0, "vda": 4.0}}
    rec = writes.across_hosts({"a": a, "b": b, "c": None})
    assert rec["workload_bytes"] == 30 and rec["amplification"] == {"a:loop0": 1.0, "b:loop0": 3.0, "b:vda": 4.0}
    assert writes.device(rec) == pytest.approx(1.0)
