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
