"""Issue 56 item 3: each database's durability settings in force, stored with every trial, shown, and said in the
advice line that compares a non-durable run (workloads/server/durability.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.cli.show import table_text  # noqa: E402
from strata.workloads.pgbench.metrics import durability as pg  # noqa: E402
from strata.workloads.pgbench.params import PgbenchParams  # noqa: E402
from strata.workloads.server import durability  # noqa: E402
from strata.workloads.sysbench.metrics import durability as maria  # noqa: E402
from strata.workloads.sysbench.params import SysbenchParams  # noqa: E402
from strata.workloads.ycsb.conf import durability as cassandra  # noqa: E402


def test_postgresql_by_default_is_durable_and_every_setting_is_stored():
    d = pg(PgbenchParams(), None).to_json()
    assert d["durable"] is True and d["lax"] == {}
    assert d["settings"] == {
        "synchronous_commit": "on",
        "fsync": "on",
        "full_page_writes": "on",
        "wal_sync_method": "fdatasync",
    }
    assert d["shown"] == "sc=on fsync=on fpw=on fdatasync"


def test_postgresql_reads_the_servers_own_settings_before_the_spec():
    said = {"settings": {"synchronous_commit": "off", "wal_sync_method": "open_datasync", "fsync": "on"}}
    d = pg(PgbenchParams(), said).to_json()
    assert d["durable"] is False and set(d["lax"]) == {"synchronous_commit"}
    assert d["settings"]["wal_sync_method"] == "open_datasync"
    d = pg(PgbenchParams(fsync=False), None).to_json()
    assert d["lax"] == {"fsync": "PostgreSQL never asks the device to flush"}


def test_full_page_writes_off_is_shown_but_a_commit_still_waits():
    d = pg(PgbenchParams(full_page_writes=False), None).to_json()
    assert d["durable"] is True and "fpw=off" in d["shown"]


def test_innodb_commits_at_0_and_2_return_before_the_redo_log_is_flushed():
    for trx, durable in ((1, True), (3, True), (2, False), (0, False)):
        d = maria(SysbenchParams(innodb_flush_log_at_trx_commit=trx), {}).to_json()
        assert d["durable"] is durable and d["settings"]["innodb_flush_log_at_trx_commit"] == str(trx)
    d = maria(SysbenchParams(), {"settings": {"log_bin": "ON", "sync_binlog": "1"}}).to_json()
    assert d["shown"] == "trx_commit=1 binlog=ON sync_binlog=1 doublewrite=ON O_DIRECT"
    d = maria(SysbenchParams(innodb_flush_method="nosync"), {}).to_json()
    assert set(d["lax"]) == {"innodb_flush_method"}


def test_cassandra_periodic_is_not_durable_batch_and_group_are():
    assert cassandra({}, {}).to_json() == {
        "durable": False,
        "settings": {"commitlog_sync": "periodic", "commitlog_sync_period": "10000ms"},
        "lax": {"commitlog_sync": "a write is acknowledged before its commit log is synced"},
        "shown": "commitlog_sync=periodic every 10000ms",
    }
    assert cassandra({"commitlog_sync": "batch"}, {}).to_json()["durable"] is True
    group = cassandra({}, {"commitlog_sync": "group", "commitlog_sync_group_window": "15ms"}).to_json()
    assert group["durable"] is True and group["shown"] == "commitlog_sync=group every 15ms"
    # the node's own word wins over the spec's
    assert cassandra({"commitlog_sync": "batch"}, {"commitlog_sync": "periodic"}).to_json()["durable"] is True


def test_a_result_without_durability_reads_as_unstated():
    assert durability.shown({}) == "" and durability.lax_of({}) == {}
    assert durability.lax_of({"durability": {"settings": 3}}) == {}


def _pg_results(fs: str, values, sc: str = "on"):
    out = []
    for rep, v in enumerate(values):
        r = make_result(fs=fs, rep=rep, value=v, workload="pgbench-tpcb")
        r["metrics"]["durability"] = pg(PgbenchParams(synchronous_commit=sc), None).to_json()
        out.append(r)
    return out


def test_the_advice_line_says_a_non_durable_comparison_and_names_its_stacks():
    a = analyse(_pg_results("xfs", (1000, 1010, 990), sc="off") + _pg_results("ext4", (800, 805, 795)))
    (b,) = a.best
    text = b.text()
    assert "not durable: synchronous_commit=off (loop/xfs/native/bind)" in text, text
    assert "writes measure memory" in text
    a = analyse(_pg_results("xfs", (1000, 1010, 990)) + _pg_results("ext4", (800, 805, 795)))
    assert "durable" not in a.best[0].text()


def test_show_and_the_report_give_the_durability_column():
    rs = _pg_results("xfs", (1000, 1010, 990), sc="off")
    head, _, row, *_ = table_text(rs).splitlines()
    assert head.split()[-1] == "durability" and row.endswith("NOT durable: sc=off fsync=on fpw=on fdatasync")
    (c,) = [c for c in analyse(rs).cells]
    assert c.durability == "NOT durable: sc=off fsync=on fpw=on fdatasync"


def _synced(fs: str, p99s_ms, design: dict) -> list[dict]:
    """fio trials of etcd's job: their sync latency's p99 as given, each repetition its own."""
    out = []
    for rep, p99 in enumerate(p99s_ms):
        r = make_result(fs=fs, rep=rep, value=400.0, rw="write", workload="etcd", design=design)
        r["metrics"]["sync"] = {"total_ios": 1000, "lat_ns": {"n": 1000, "mean": p99 * 4e5, "p99": p99 * 1e6}}
        out.append(r)
    return out


def test_the_advice_compares_the_sync_latency_the_spec_names_and_judges_it_against_the_target():
    """Issue 58: `compare: sync_lat` and `latency_target: 10ms` (etcd's disk check): the advice compares the p99
    of the syncs, lower being better, and says of each stack whether its interval is below, above or about 10 ms."""
    design = {"repetitions": 3, "margin": 0.05, "compare": "sync_lat", "latency_target_ms": 10.0}
    a = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (4.0, 4.2, 3.8), design))
    (b,) = a.best
    assert "p99 sync (fsync, fdatasync) latency, lower is better, as the spec compares" in b.text()
    assert b.best.fs_type == "xfs" and "is best" in b.text(), b.text()
    assert b.target.startswith("etcd at load") and "against 10 ms: below it on every stack" in b.target, b.target
    assert "loop/ext4/native/bind 4.00 ms [" in b.target  # the highest, with its interval
    assert b.lines() == [b.text(), b.target]
    slow = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (14.0, 15.0, 13.0), design))
    assert "above it on loop/ext4/native/bind 14.00 ms [" in slow.best[0].target
    assert "below it on loop/xfs/native/bind" in slow.best[0].target
    wide = analyse(_synced("xfs", (2.0, 2.1, 1.9), design) + _synced("ext4", (5.0, 15.0, 10.0), design))
    assert "undecided on loop/ext4/native/bind" in wide.best[0].target and "more repetitions" in wide.best[0].target
    plain = analyse(
        _synced("xfs", (2.0, 2.1, 1.9), {"repetitions": 3, "margin": 0.05})
        + _synced("ext4", (4.0, 4.2, 3.8), {"repetitions": 3, "margin": 0.05})
    )
    assert plain.best[0].target == "" and "sync" not in plain.best[0].text()  # the headline, as before
