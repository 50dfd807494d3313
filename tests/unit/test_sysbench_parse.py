"""sysbench 1.0.20's output as strata reads it, on outputs captured from real runs (tests/data/sysbench/1.0.20):
the summaries of the four OLTP scripts, the per-second reports (with the queue under an offered rate), the
latency histogram and sysbench's own percentile rule, histograms of several servers merged bucket by bucket;
refused connections, bad options, a Lua error, SQL the server rejected, a server that died, a crashed and a
cut-short client each a failure with its category and sysbench's own words; the trial's metrics and the bytes
the cache rule compares; a seeded fuzz of the parser."""

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput
from strata.workloads import REGISTRY
from strata.workloads.server import latency
from strata.workloads.sysbench import parse
from strata.workloads.sysbench.mariadb import COUNTERS
from strata.workloads.sysbench.params import SysbenchParams

DATA = Path(__file__).parents[1] / "data" / "sysbench" / "1.0.20"
SYSBENCH = REGISTRY["sysbench"]
GOOD = ("read_write", "read_only", "write_only", "point_select", "point_select_12s", "rate", "deadlocks")


def output(case: str) -> str:
    """What strata's client holds in its stderr.txt: sysbench's stdout, then anything it wrote on stderr."""
    return (DATA / case / "stdout.txt").read_text() + (DATA / case / "stderr.txt").read_text()


def rc(case: str) -> int:
    return int((DATA / case / "rc.txt").read_text())


def client_dir(tmp_path: Path, case: str, name: str = "server-0") -> Path:
    d = tmp_path / name
    d.mkdir(parents=True)
    (d / "stderr.txt").write_text(output(case))
    (d / "stdout.txt").write_text("")
    return d


# ---- one run ------------------------------------------------------------------------------


def test_the_summary_of_a_read_write_run():
    s = parse.parse_summary(output("read_write"))
    assert (s.version, s.threads, s.transactions, s.tps, s.qps) == ("1.0.20", 4, 3237, 646.39, 12927.86)
    assert s.queries == {"read": 45318, "write": 12948, "other": 6474, "total": 64740}
    assert (s.errors, s.reconnects, s.total_time_s, s.events) == (0, 0, 5.0075, 3237)
    assert s.lat_ms == {"min": 1.08, "avg": 6.17, "max": 32.77, "sum": 19985.37} and s.lat_pct == (95, 13.70)


def test_a_summary_whose_rates_fill_their_column():
    """`transactions: 152451 (30470.71 per sec.)`: no space left between the count and its rate."""
    s = parse.parse_summary(output("point_select"))
    assert (s.transactions, s.tps, s.qps, s.queries["write"]) == (152451, 30470.71, 30470.71, 0)


def test_ignored_errors_are_counted():
    s = parse.parse_summary(output("deadlocks"))
    assert (s.errors, s.reconnects, s.transactions) == (1286, 0, 1471)
    assert [round(i.errors_s) for i in parse.parse_intervals(output("deadlocks"))] == [245, 163, 330, 239, 302]


def test_the_per_second_reports_and_the_queue_under_an_offered_rate():
    rw = parse.parse_intervals(output("read_write"))
    assert [i.tps for i in rw] == [599.80, 646.27, 645.90, 628.05, 711.53] and rw[0].queue is None
    assert (rw[0].threads, rw[0].qps, rw[0].lat_pct_ms) == (4, 12043.94, 13.95)
    rated = parse.parse_intervals(output("rate"))
    assert [(i.t_s, i.queue, i.concurrency) for i in rated] == [(1, 0, 1), (2, 0, 0), (3, 0, 2), (4, 0, 1), (5, 0, 1)]
    assert [i.t_s for i in parse.parse_intervals(output("point_select_12s"))] == list(range(1, 12))


@pytest.mark.parametrize("case", GOOD)
def test_the_histogram_holds_every_event_and_gives_sysbenchs_own_percentile(case):
    s = parse.parse_summary(output(case))
    h = parse.parse_histogram(output(case))
    assert sum(h.values()) == s.events
    pct, printed = s.lat_pct
    assert round(parse.percentile_ms(h, pct), 2) == printed  # sysbench prints its percentile to 0.01 ms


def test_buckets_that_print_alike_are_one_value():
    """Below 0.06 ms two neighbouring buckets can print the same three decimals; they count as one value."""
    text = output("point_select")
    lines = [ln for ln in text.splitlines() if parse.BUCKET.match(ln)]
    h = parse.parse_histogram(text)
    assert len(lines) > len(h) and sum(h.values()) == 152451


def test_histograms_of_several_servers_add_bucket_by_bucket():
    a, b = (parse.parse_histogram(output(c)) for c in ("read_write", "rate"))
    merged = latency.merge([a, b])
    assert sum(merged.values()) == 3237 + 1001
    values = sorted(v for v, n in merged.items() for _ in range(n))  # every event, by brute force
    for pct in (50, 95, 99, 99.9):
        rank = int(len(values) * pct / 100 + 0.5)
        assert parse.percentile_ms(merged, pct) == values[rank - 1]
    assert parse.percentile_ms(Counter(), 50) is None


def test_a_run_read_whole_from_its_client_directory(tmp_path):
    run = parse.read_run(client_dir(tmp_path, "read_write"))
    assert run.summary.transactions == 3237 and sum(run.histogram.values()) == 3237 and len(run.intervals) == 5
    start, end = run.window
    assert end - start == pytest.approx(5.0075)


# ---- what goes wrong ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case,category,says",
    [
        ("refused", "tool_error", "unable to connect to MySQL server on host '127.0.0.2', port 19299"),
        ("bad_option", "bad_input", "invalid option: --no-such-option=1"),
        ("bad_value", "bad_input", "Invalid value for the 'threads' option: 'abc'"),
        ("no_script", "bad_input", "Cannot find benchmark 'oltp_no_such_script'"),
        ("no_tables", "bad_input", "Table 'sbsmall.sbtest1' doesn't exist"),
        ("lua_error", "bad_input", "broken.lua:10: attempt to call global 'no_such_function'"),
        ("sql_error", "bad_input", "Table 'sbtest.no_such_table' doesn't exist"),
        ("server_died", "tool_error", "error 2013 (Lost connection to server during query)"),
        ("segfault", "tool_error", "was killed by signal 11"),
        ("truncated", "tool_error", "was killed by signal 9"),
    ],
)
def test_a_failed_client_in_sysbenchs_own_words(case, category, says):
    f = parse.failure("run", rc(case), output(case))
    assert f.category == category and says in str(f), str(f)
    assert str(f).startswith("sysbench (run) ")
    assert "Running the test with following options" not in str(f)  # its ordinary output is not its words


def test_through_the_shell_a_signal_is_still_a_signal():
    """The client runs `sh -c 'exec sysbench ...'`: the exec keeps sysbench's own exit status."""
    assert "killed by signal 11" in str(parse.failure("run", 139, "")) and "(it said nothing)" in str(
        parse.failure("run", -11, "")
    )


def test_a_disk_that_filled_up_is_disk_full():
    said = "FATAL: mysql_stmt_execute() returned error 1114 (The table 'sbtest1' is full) for query 'INSERT'\n"
    assert parse.failure("load", 1, said).category == "disk_full"


@pytest.mark.parametrize("case", ["truncated", "segfault", "server_died", "refused"])
def test_an_output_cut_short_is_a_parse_failure_naming_the_file(tmp_path, case):
    with pytest.raises(TrialFailure) as e:
        parse.read_run(client_dir(tmp_path, case))
    assert e.value.category == "parse" and "stderr.txt" in str(e.value) and "cut short" in str(e.value)


def test_a_histogram_short_of_the_summarys_events_is_a_parse_failure(tmp_path):
    d = client_dir(tmp_path, "read_write")
    text = (d / "stderr.txt").read_text().replace("       1.082 |                                         1\n", "")
    (d / "stderr.txt").write_text(text)
    with pytest.raises(TrialFailure, match="holds 3236 events, its summary 3237"):
        parse.read_run(d)


def test_a_run_without_its_histogram_is_a_parse_failure(tmp_path):
    d = client_dir(tmp_path, "read_write")
    text = (d / "stderr.txt").read_text()
    (d / "stderr.txt").write_text(text.replace(parse.HISTOGRAM, "no histogram here"))
    with pytest.raises(TrialFailure, match="holds no latency histogram"):
        parse.read_run(d)


# ---- the trial ----------------------------------------------------------------------------


def _counters(read: int, redo: int, data_set: int = 40 << 20) -> dict:
    c = {k: 0 for k in COUNTERS}
    c.update(innodb_data_read=read, innodb_buffer_pool_reads=read // 16384, innodb_data_reads=read // 16384)
    c.update(innodb_os_log_written=redo, data_set_bytes=data_set, page_bytes=16384)
    return c


def _trial(tmp_path: Path, cases: list[str], read: int = 0, redo: int = 0, data_set: int = 40 << 20) -> Path:
    art = tmp_path / "art"
    clients = []
    for k, case in enumerate(cases):
        shutil.copytree(DATA / case, art / "sysbench" / "run" / f"server-{k}")
        d = art / "sysbench" / "run" / f"server-{k}"
        (d / "stderr.txt").write_text(output(case))
        clients.append(f"sysbench/run/server-{k}")
        (art / f"inst-{k}").mkdir(parents=True)
    record = {
        "servers": len(cases),
        "phases": {"run": {"wall_s": 6.0, "clients": clients, "client_cpu_s": [1.0] * len(cases)}},
        "memory": {"bytes": 24 << 30, "of": "MemTotal, the host's memory"},
        "observed": {
            "before": [_counters(0, 0, data_set) for _ in cases],
            "after": [_counters(read, redo, data_set) for _ in cases],
        },
        "server": {"version": "10.11.19-MariaDB-0+deb12u1", "settings": {"innodb_flush_method": "O_DIRECT"}},
        "node_ready_s": [2.0] * len(cases),
    }
    (art / "sysbench" / "clients.json").write_text(json.dumps(record))
    return art


def test_a_trial_of_two_servers_sums_their_rates_and_merges_their_latencies(tmp_path):
    art = _trial(tmp_path, ["read_write", "rate"], read=64 << 20, redo=20 << 20)
    p = SysbenchParams()
    parsed = SYSBENCH.parse(p, [InstanceOutput(k, art / f"inst-{k}", 0, "") for k in (0, 1)])
    m = parsed.metrics
    assert m["tps"] == pytest.approx(646.39 + 199.68) and m["primary"]["value"] == m["tps"]
    assert m["qps"] == pytest.approx(12927.86 + 3993.67) and m["primary"]["qps"] == m["qps"]
    lat = m["write"]["lat_ns"]  # oltp_read_write writes
    assert lat["n"] == 3237 + 1001 and lat["min"] == 1.08e6 and lat["max"] == 79.25e6
    assert lat["mean"] == pytest.approx((19985.37 + 5640.47) / (3237 + 1001) * 1e6)
    assert lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    assert m["read"] == {"tps": 0.0} and m["transactions"]["processed"] == 3237 + 1001
    assert m["queries"]["total"] == 64740 + 20020 and len(m["servers"]) == 2
    assert m["server"]["version"].startswith("10.11") and m["node_ready_s"] == [2.0, 2.0]
    # the bytes the cache rule compares: InnoDB's reads from its files and its redo log, both servers'
    assert parsed.moved_bytes == {"read": 2 * (64 << 20), "write": 2 * (20 << 20)}
    assert "redo log" in parsed.moved_basis
    assert m["innodb"]["buffer_pool_read_bytes"] == 2 * (64 << 20) and m["innodb"]["page_bytes"] == 16384
    series = parsed.series["sysbench_tps"]
    assert series[0] == [0, pytest.approx(599.80 + 186.36)] and len(series) == 5
    assert len(parsed.windows) == 2 and all(w is not None for w in parsed.windows)


def test_a_data_set_the_buffer_pools_hold_is_said_to_fit(tmp_path):
    """Under O_DIRECT the page cache holds none of InnoDB's data: the buffer pools are the memory that caches it."""
    art = _trial(tmp_path, ["read_only"], data_set=40 << 20)
    m = SYSBENCH.parse(SysbenchParams(script="oltp_read_only"), [InstanceOutput(0, art / "inst-0", 0, "")]).metrics
    assert (
        m["cache"]["fits"] is True
        and m["cache"]["memory_bytes"] == 128 << 20
        and "buffer pool" in m["cache"]["memory_of"]
    )
    assert "table_size" in m["cache"]["fix"] and m["read"]["lat_ns"]["n"] == 6416
    big = SysbenchParams(script="oltp_read_only", innodb_buffer_pool_size="16MiB")
    assert SYSBENCH.parse(big, [InstanceOutput(0, art / "inst-0", 0, "")]).metrics["cache"]["fits"] is False
    # through the page cache (fsync), the memory the servers can use caches it: the host's here
    fsync = SysbenchParams(script="oltp_read_only", innodb_flush_method="fsync")
    c = SYSBENCH.parse(fsync, [InstanceOutput(0, art / "inst-0", 0, "")]).metrics["cache"]
    assert c["memory_bytes"] == 24 << 30 and c["memory_of"] == "MemTotal, the host's memory" and c["fits"]


def test_counters_a_server_could_not_give_leave_the_bytes_unknown_not_zero_by_mistake(tmp_path):
    art = _trial(tmp_path, ["read_write"])
    record = json.loads((art / "sysbench" / "clients.json").read_text())
    record["observed"]["after"] = [{"error": "Lost connection"}]
    (art / "sysbench" / "clients.json").write_text(json.dumps(record))
    parsed = SYSBENCH.parse(SysbenchParams(), [InstanceOutput(0, art / "inst-0", 0, "")])
    assert parsed.metrics["innodb"] is None and parsed.moved_bytes == {"read": 0, "write": 0}


def test_a_server_that_exited_badly_or_an_unreadable_record_fails_the_trial(tmp_path):
    art = _trial(tmp_path, ["read_write"])
    with pytest.raises(TrialFailure, match="exited 3 while stopping"):
        SYSBENCH.parse(SysbenchParams(), [InstanceOutput(0, art / "inst-0", 3, "")])
    (art / "sysbench" / "clients.json").write_text("{cut")
    with pytest.raises(TrialFailure) as e:
        SYSBENCH.parse(SysbenchParams(), [InstanceOutput(0, art / "inst-0", 0, "")])
    assert e.value.category == "parse" and "clients.json" in str(e.value)


# ---- fuzz ---------------------------------------------------------------------------------


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        if not lines:
            break
        i = rng.randrange(len(lines))
        if op == 0:
            lines = lines[:i]  # cut short
        elif op == 1:
            del lines[i]
        elif op == 2:
            lines.insert(i, lines[rng.randrange(len(lines))])  # a line twice
        elif op == 3:
            ln = lines[i]
            j = rng.randrange(max(len(ln), 1))
            lines[i] = ln[:j] + rng.choice("0123456789.|:* xq\t-") + ln[j + 1 :]
        else:
            lines[i] = "".join(rng.choice("[]0s |*.:9FATAL: \n") for _ in range(rng.randint(0, 40)))
    return "".join(lines)


def test_fuzz_the_parser_never_raises_anything_but_a_trial_failure(tmp_path):
    rng = random.Random(45)
    cases = [c.name for c in DATA.iterdir() if c.is_dir()]
    for n in range(600):
        text = _mutate(rng, output(rng.choice(cases)))
        d = tmp_path / f"c{n}"
        d.mkdir()
        (d / "stderr.txt").write_text(text)
        try:
            run = parse.read_run(d)
        except TrialFailure as e:
            assert e.category == "parse", (n, e)
        else:
            assert sum(run.histogram.values()) == run.summary.events
        f = parse.failure("run", rng.choice([1, 2, -9, 139]), text)
        assert f.category in ("bad_input", "tool_error", "disk_full") and len(str(f)) < 1000


def _judged(parsed, disk_read: int, disk_write: int):
    from strata.results import validity

    disks = {"loop7": {"read_bytes": disk_read, "write_bytes": disk_write}}
    return validity.cache(
        parsed.moved_bytes, disks, SYSBENCH.direct_io(None), "bind", parsed.moved_basis, parsed.memory
    )


def test_a_read_only_run_its_buffer_pool_holds_is_flagged_with_the_rows_that_would_not_fit(tmp_path):
    """40 MiB of data beside a 128 MiB buffer pool (O_DIRECT): its reads come from memory, whatever the device
    read; the fix names the rows a server needs (2 x 128 MiB / 40 MiB x 10,000 rows) and the pool."""
    art = _trial(tmp_path, ["read_only"], read=8 << 20, data_set=40 << 20)
    p = SysbenchParams(script="oltp_read_only", tables=1, table_size=10_000)
    parsed = SYSBENCH.parse(p, [InstanceOutput(0, art / "inst-0", 0, "")])
    j = _judged(parsed, disk_read=8 << 20, disk_write=0)
    assert j.warns and "its reads come from memory" in j.reason and "write-bound" not in j.reason, j.reason
    assert "tables x table_size of 64,001 rows or more a server (now 10,000" in j.reason
    assert "a smaller innodb_buffer_pool_size" in j.reason
    beyond = SysbenchParams(script="oltp_read_only", innodb_buffer_pool_size="16MiB")
    parsed = SYSBENCH.parse(beyond, [InstanceOutput(0, art / "inst-0", 0, "")])
    assert not _judged(parsed, disk_read=8 << 20, disk_write=0).suspect  # beyond the pool: read from its files


def test_a_durable_write_run_says_its_reads_and_declares_innodbs_fsyncs(tmp_path):
    art = _trial(tmp_path, ["read_write"], redo=40 << 20, data_set=40 << 20)
    record = json.loads((art / "sysbench" / "clients.json").read_text())
    record["observed"]["after"][0]["innodb_data_fsyncs"] = 3000
    (art / "sysbench" / "clients.json").write_text(json.dumps(record))
    parsed = SYSBENCH.parse(SysbenchParams(), [InstanceOutput(0, art / "inst-0", 0, "")])
    assert (parsed.syncs.count, parsed.syncs.streams, parsed.syncs.what) == (3000, 2, "InnoDB's fsyncs")
    j = _judged(parsed, disk_read=0, disk_write=60 << 20)
    assert j.suspect and j.expected and not j.warns and "innodb_flush_log_at_trx_commit 1" in j.reason
    lax = SysbenchParams(innodb_flush_log_at_trx_commit=2)
    parsed = SYSBENCH.parse(lax, [InstanceOutput(0, art / "inst-0", 0, "")])
    assert _judged(parsed, disk_read=0, disk_write=60 << 20).warns  # commits that do not wait: memory decides
    three = SysbenchParams(innodb_flush_log_at_trx_commit=3)
    parsed = SYSBENCH.parse(three, [InstanceOutput(0, art / "inst-0", 0, "")])
    assert parsed.memory["write_bound"] is True


def test_under_an_offered_rate_the_rate_is_stored_as_offered(tmp_path):
    art = _trial(tmp_path, ["rate"])
    m = SYSBENCH.parse(SysbenchParams(rate=200), [InstanceOutput(0, art / "inst-0", 0, "")]).metrics
    assert m["offered"] == {"rate_tx_s": 200, "servers": 1}
    assert SYSBENCH.metrics.offered is not None and SYSBENCH.metrics.offered.absolute({"rate": 200}) == 200
