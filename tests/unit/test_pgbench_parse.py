"""pgbench 15's output as strata reads it, on outputs captured from real runs (tests/data/pgbench/15):
summaries, progress series, per-transaction logs merged as HdrHistograms, failed and retried
transactions; aborted, cut and garbled output a failure with its category and pgbench's own words;
the trial's metrics (the checkpoints, the server's facts, an older strata's record) and the cache rule's
planted cases (a data set that fits in the servers' memory, blocks read from the page cache, a write run
whose WAL did or did not reach the device); a seeded fuzz of the parser."""

import json
import random
import shutil
from pathlib import Path

import pytest

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput
from strata.results import validity
from strata.workloads import REGISTRY, hdr
from strata.workloads.pgbench import metrics, parse
from strata.workloads.pgbench.params import PgbenchParams

DATA = Path(__file__).parents[1] / "data" / "pgbench" / "15"
PGBENCH = REGISTRY["pgbench"]
MiB = 1 << 20


def _rc(name: str) -> int:
    return int((DATA / name / "rc.txt").read_text())


# ---- one run ------------------------------------------------------------------------------


def test_the_summary_of_a_tpcb_like_run():
    s = parse.parse_summary((DATA / "tpcb" / "stdout.txt").read_text())
    assert s.version == "15.18 (Debian 15.18-0+deb12u1)" and s.transaction_type == "<builtin: TPC-B (sort of)>"
    assert (s.processed, s.failed, s.retried, s.retries) == (1464, 0, 0, 0)
    assert s.tps == pytest.approx(357.783327)


def test_progress_lines_are_the_per_second_series_with_lag_and_retries():
    tpcb = parse.parse_progress((DATA / "tpcb" / "stderr.txt").read_text())
    assert [p.tps for p in tpcb] == [744.0, 307.0, 175.8, 230.5] and tpcb[0].lag_ms is None
    rated = parse.parse_progress((DATA / "select" / "stderr.txt").read_text())
    assert [p.lag_ms for p in rated] == [1.799, 10.576, 2.039]
    retried = parse.parse_progress((DATA / "retries" / "stderr.txt").read_text())
    assert [(p.failed, p.retried) for p in retried] == [(96, 418), (115, 482), (57, 284)]


def test_every_threads_log_goes_into_one_histogram():
    run = parse.read_run(DATA / "tpcb", lag=False, retries=False)
    logs = run.logs
    assert logs.completed == 1464 and logs.latency.total == 1464 and logs.failed == 0
    assert len(parse.log_files(DATA / "tpcb")) == 2  # thread 0 and thread 1
    # pgbench's own mean (11.140 ms) from the same transactions, to the histogram's resolution
    assert logs.latency.mean() / 1000 == pytest.approx(11.140, rel=0.01)
    assert logs.first_start_s < logs.last_end_s and logs.last_end_s - logs.first_start_s == pytest.approx(4, abs=0.5)


def test_an_offered_rate_keeps_its_lag_and_latency_from_the_scheduled_start():
    run = parse.read_run(DATA / "select", lag=True, retries=False)
    assert run.logs.lag.total == run.logs.completed == 5953
    assert run.logs.latency.mean() / 1000 == pytest.approx(5.153, rel=0.02)  # pgbench: latency average
    assert run.logs.lag.mean() / 1000 == pytest.approx(4.759, rel=0.02)  # pgbench: schedule lag avg


def test_failed_and_retried_transactions_are_counted_from_the_logs_as_pgbench_counts_them():
    run = parse.read_run(DATA / "retries", lag=False, retries=True)
    s, logs = run.summary, run.logs
    assert (s.processed, s.failed, s.retried, s.retries) == (2121, 268, 1184, 1750)
    assert (logs.completed, logs.failed, logs.retried, logs.retries) == (2121, 268, 1184, 1750)
    assert logs.latency.total == 2121  # a failed transaction has no latency


def test_an_aborted_run_fails_in_pgbenchs_words_although_its_summary_looks_complete():
    stdout = (DATA / "aborted" / "stdout.txt").read_text()
    assert parse.parse_summary(stdout).tps is not None  # it does look complete
    stderr = (DATA / "aborted" / "stderr.txt").read_text()
    f = parse.failure("run", _rc("aborted"), stderr)
    assert f.category == "tool_error" and "exited with 2" in str(f)
    assert "aborted in command" in str(f) and "Run was aborted" in f.stderr
    with pytest.raises(TrialFailure, match="pgbench aborted its run"):
        parse.read_run(DATA / "aborted", lag=False, retries=False)


@pytest.mark.parametrize(
    "case,category,says",
    [
        ("refused", "tool_error", "Connection refused"),
        ("badscript", "bad_input", 'syntax error in command "set"'),
        ("badsql", "bad_input", 'syntax error at or near "SELEC"'),
    ],
)
def test_a_pgbench_that_exits_non_zero_is_a_failure_with_its_category_and_words(case, category, says):
    f = parse.failure("run", _rc(case), (DATA / case / "stderr.txt").read_text())
    assert f.category == category and f.stderr
    assert says in str(f) or says in f.stderr, (str(f), f.stderr)


def test_a_disk_full_in_the_load_is_disk_full():
    err = 'pgbench: error: query failed: ERROR:  could not extend file "base/5/16398": No space left on device\n'
    assert parse.failure("load", 1, err).category == "disk_full"


def test_a_summary_without_its_tps_line_is_a_parse_failure_not_a_traceback():
    with pytest.raises(TrialFailure) as e:
        parse.read_run(DATA / "badsql", lag=False, retries=False)  # processed 0, NaN%, no tps line
    assert e.value.category in ("parse", "tool_error")
    with pytest.raises(TrialFailure) as e:
        parse.read_run(DATA / "truncated", lag=False, retries=False)
    assert e.value.category == "parse" and "cut short" in str(e.value)


def test_a_cut_log_line_names_its_file_and_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "tpcb", run)
    (run / "tx.6863").write_text((DATA / "truncated" / "tx.6863").read_text())  # cut mid-line
    with pytest.raises(TrialFailure) as e:
        parse.read_run(run, lag=False, retries=False)
    assert e.value.category == "parse" and "tx.6863, line 170" in str(e.value)


def test_logs_that_hold_fewer_transactions_than_the_summary_are_cut_short(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "tpcb", run)
    (run / "tx.6863.1").unlink()
    with pytest.raises(TrialFailure, match="hold 882 transactions, its summary 1464"):
        parse.read_run(run, lag=False, retries=False)


def test_no_log_at_all_is_a_parse_failure(tmp_path):
    shutil.copytree(DATA / "refused", tmp_path / "run")
    (tmp_path / "run" / "stdout.txt").write_text((DATA / "tpcb" / "stdout.txt").read_text())
    with pytest.raises(TrialFailure, match="no per-transaction log"):
        parse.read_run(tmp_path / "run", lag=False, retries=False)


def test_seeded_mutants_of_the_captured_outputs_never_raise_anything_but_a_trial_failure(tmp_path):
    """The parser's fuzz (docs/style.md, item 12): bytes dropped, duplicated, flipped or cut in every file
    of a captured run; each answer is a run or a TrialFailure."""
    rng = random.Random(20261126)
    cases = [("tpcb", False, False), ("select", True, False), ("retries", False, True), ("rate", True, True)]
    answers = {"ok": 0, "failure": 0}
    for i in range(300):
        name, lag, retries = rng.choice(cases)
        run = tmp_path / f"m{i}"
        shutil.copytree(DATA / name, run)
        for f in rng.sample(sorted(p for p in run.iterdir() if p.name != "rc.txt"), k=rng.randint(1, 2)):
            f.write_bytes(_mutate(rng, f.read_bytes()))
        try:
            parse.read_run(run, lag=lag, retries=retries)
            answers["ok"] += 1
        except TrialFailure as e:
            assert e.category in ("parse", "tool_error") and str(e)
            answers["failure"] += 1
        shutil.rmtree(run)
    assert answers["failure"] > 100 and answers["ok"] > 0, answers


def _mutate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    op = rng.randrange(5)
    if op == 0:
        return data[:i]  # cut
    if op == 1:
        return data[:i] + data[i + 1 :]  # a byte dropped
    if op == 2:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]  # a byte changed
    if op == 3:
        return data[:i] + data[i : i + 40] + data[i:]  # a stretch duplicated
    return data[:i] + rng.choice([b"failed", b"-1", b"\x00", b"99999999999999999999", b"\n\n"]) + data[i:]


# ---- one trial: the metrics ---------------------------------------------------------------------


def _trial(
    tmp_path: Path,
    runs: list[str],
    observed: dict | None = None,
    page_cache: int = 1 << 30,
    memory: int | None = 16 << 30,
    server: dict | None = None,
) -> Path:
    """A trial's artifact dir with captured real runs as its servers' measured runs (`memory` None: a record of
    an older strata, without the memory, the server's facts and the checkpoint clock)."""
    art = tmp_path / "art"
    dirs = []
    for k, name in enumerate(runs):
        d = art / "pgbench" / "run" / f"server-{k}"
        shutil.copytree(DATA / name, d)
        (art / f"inst-{k}").mkdir(parents=True)
        dirs.append(str(d.relative_to(art)))
    record = {
        "servers": len(runs),
        "phases": {"run": {"wall_s": 5.0, "clients": dirs, "client_cpu_s": [0.5] * len(runs), "client_cpu_share": 0.1}},
        "node_ready_s": [1.5] * len(runs),
        "page_cache_bytes": page_cache,
        "observed": observed or {},
    }
    if memory is not None:
        record["memory"] = {"bytes": memory, "of": "MemTotal, the host's memory"}
        record["server"] = server or {"version": "15.18", "block_bytes": 8192, "settings": {"fsync": "on"}}
        record["checkpoint_clock_s"] = 1.0
    (art / "pgbench" / "clients.json").write_text(json.dumps(record))
    return art


def _counters(wal_bytes: int, syncs: int = 100, size: int = 40 * MiB, reads: int = 5, checkpoints: int = 0) -> dict:
    return {
        "wal_records": wal_bytes // 100,
        "wal_fpi": 10,
        "wal_bytes": wal_bytes,
        "wal_write": syncs,
        "wal_sync": syncs,
        "blks_read": reads,
        "blks_hit": 1000,
        "checkpoints_timed": checkpoints,
        "checkpoints_req": 0,
        "checkpoint_write_time": 250.5 * checkpoints,
        "checkpoint_sync_time": 10.0 * checkpoints,
        "buffers_checkpoint": 300 * checkpoints,
        "buffers_clean": 7,
        "buffers_backend": 20,
        "buffers_backend_fsync": 0,
        "buffers_alloc": 50,
        "database_bytes": size,
    }


def _observed(n: int, wal_bytes: int, syncs: int = 100, reads: int = 5, checkpoints: int = 2) -> dict:
    before = _counters(0, 0, reads=0) | {"buffers_clean": 0, "buffers_backend": 0, "buffers_alloc": 0}
    return {"before": [before] * n, "after": [_counters(wal_bytes, syncs, reads=reads, checkpoints=checkpoints)] * n}


def _outputs(art: Path, n: int) -> list[InstanceOutput]:
    return [InstanceOutput(k, art / f"inst-{k}", 0, "") for k in range(n)]


def test_two_servers_add_their_tps_and_merge_their_latencies(tmp_path):
    p = PgbenchParams(clients=4, threads=2, runtime=4)
    one = PGBENCH.parse(p, _outputs(_trial(tmp_path / "one", ["tpcb"], _observed(1, 64 * MiB)), 1))
    two = PGBENCH.parse(p, _outputs(_trial(tmp_path / "two", ["tpcb", "tpcb"], _observed(2, 64 * MiB)), 2))
    m1, m2 = one.metrics, two.metrics
    assert m2["primary"]["value"] == pytest.approx(2 * 357.783327) and m2["primary"]["unit"] == "tx/s"
    assert m2["primary"]["tps"] == m2["tps"] == m2["write"]["tps"] and m2["read"] == {"tps": 0.0}
    lat1, lat2 = m1["write"]["lat_ns"], m2["write"]["lat_ns"]
    assert lat2["n"] == 2 * lat1["n"] == 2 * 1464  # the same histogram twice: twice the count, same percentiles
    assert lat2["p99"] == lat1["p99"] and lat1["p50"] <= lat1["p95"] <= lat1["p99"] <= lat1["max"]
    assert two.series[metrics.SERIES] == [[0, 1488.0], [1, 614.0], [2, 351.6], [3, 461.0]]
    assert len(two.windows) == 2 and two.windows[0][1] > two.windows[0][0] and two.window_dirs
    assert m2["transactions"]["processed"] == 2928 and m2["clients"]["run"]["client_cpu_share"] == 0.1
    assert m2["wal"]["bytes"] == 128 * MiB and two.moved_bytes == {"read": 2 * 5 * 8192, "write": 128 * MiB}
    assert m2["pgbench"]["version"].startswith("15.18") and "lag_ns" not in m2
    assert two.syncs is not None and (two.syncs.count, two.syncs.streams) == (200, 2)  # pg_stat_wal's wal_sync


def test_a_select_only_run_reads_the_blocks_its_server_read_and_its_latency_is_a_read(tmp_path):
    p = PgbenchParams(script="select-only", clients=2, threads=2, rate=2000, runtime=3)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["select"], _observed(1, 0, reads=6000)), 1))
    m = parsed.metrics
    assert m["read"]["tps"] == m["tps"] and m["write"] == {"tps": 0.0} and m["read"]["lat_ns"]["n"] == 5953
    # blks_read x the server's block size: every block it read from outside its own cache
    assert parsed.moved_bytes == {"read": 6000 * 8192, "write": 0} and m["blocks"]["read_bytes"] == 6000 * 8192
    assert parsed.moved_basis == metrics.BASIS and "blocks read" in metrics.BASIS
    assert m["lag_ns"]["mean"] == pytest.approx(4.759e6, rel=0.02)
    assert m["offered"] == {"rate_tx_s": 2000, "servers": 1}  # the rate it offered: the advice compares latency
    assert PGBENCH.metrics.direction({"metrics": m}) == "read"


def test_the_checkpoints_inside_the_run_and_the_buffers_written_are_stored(tmp_path):
    p = PgbenchParams(clients=4, threads=2, checkpoint_timeout="1m", max_wal_size="2GiB")
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["tpcb", "tpcb"], _observed(2, 64 * MiB, checkpoints=2)), 2))
    cp = parsed.metrics["checkpoints"]
    assert (cp["count"], cp["timed"], cp["requested"]) == (4, 4, 0)  # two servers, two each
    assert (cp["buffers_checkpoint"], cp["buffers_clean"], cp["buffers_backend"], cp["buffers_alloc"]) == (
        1200,
        14,
        40,
        100,
    )
    assert (cp["write_ms"], cp["sync_ms"], cp["timeout_s"], cp["max_wal_size_bytes"]) == (1002.0, 40.0, 60, 2 << 30)
    # the run started this far into a checkpoint interval counted from the CHECKPOINT that opened the warm-up
    assert 0 <= cp["phase_s"] < 60
    assert PGBENCH.metrics.events[0].count({"metrics": parsed.metrics}) == 4
    server = parsed.metrics["server"]
    assert server["version"] == "15.18" and server["settings"] == {"fsync": "on"}


def test_a_record_of_an_older_strata_still_parses_without_what_it_did_not_read(tmp_path):
    """Before checkpoints, memory and the server's facts were read: their counters are absent, not zero."""
    observed = _observed(1, 64 * MiB)
    for c in observed["before"] + observed["after"]:
        for k in ("checkpoints_timed", "checkpoints_req", "checkpoint_write_time", "checkpoint_sync_time"):
            c.pop(k)
        for k in ("buffers_checkpoint", "buffers_clean", "buffers_backend", "buffers_backend_fsync", "buffers_alloc"):
            c.pop(k)
    parsed = PGBENCH.parse(
        PgbenchParams(clients=4, threads=2), _outputs(_trial(tmp_path, ["tpcb"], observed, memory=None), 1)
    )
    m = parsed.metrics
    assert m["checkpoints"] is None and m["server"] is None and parsed.memory is None
    assert m["wal"]["bytes"] == 64 * MiB and m["cache"]["fits_in_memory"] is None


def test_a_run_without_its_counters_still_measures_and_claims_no_write_bytes(tmp_path):
    observed = {"before": [{"error": "psql: connection refused"}], "after": [_counters(1)]}
    parsed = PGBENCH.parse(PgbenchParams(clients=4, threads=2), _outputs(_trial(tmp_path, ["tpcb"], observed), 1))
    assert parsed.metrics["wal"] is None and parsed.moved_bytes["write"] == 0
    assert parsed.syncs is None  # its counters do not say


def test_a_server_that_exited_badly_while_stopping_is_instance_died(tmp_path):
    art = _trial(tmp_path, ["tpcb"], _observed(1, MiB))
    with pytest.raises(TrialFailure) as e:
        PGBENCH.parse(PgbenchParams(), [InstanceOutput(0, art / "inst-0", 3, "the PostgreSQL server exited")])
    assert e.value.category == "instance_died"


def test_a_missing_record_is_a_parse_failure(tmp_path):
    (tmp_path / "inst-0").mkdir()
    with pytest.raises(TrialFailure) as e:
        PGBENCH.parse(PgbenchParams(), _outputs(tmp_path, 1))
    assert e.value.category == "parse"


def test_pgbench_declares_what_its_parser_writes(tmp_path):
    p = PgbenchParams(script="select-only", clients=2, threads=2, rate=2000)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["select"], _observed(1, 0)), 1))
    result = {"trial": {"workload": p.model_dump()}, "metrics": parsed.metrics}
    for m in PGBENCH.metrics.fields:
        for stat in m.stats or (None,):
            assert m.value(result, "read", stat) is not None, m.name
    assert result["metrics"]["primary"]["metric"] in [m.name for m in PGBENCH.metrics.fields if m.headline]


# ---- validity: the cache rule of every workload, planted ------------------------------------------


def _judge(parsed, disk_read: int, disk_write: int):
    disks = {"loop7": {"read_bytes": disk_read, "write_bytes": disk_write}}
    return validity.cache(parsed.moved_bytes, disks, PGBENCH.direct_io(None), "bind", parsed.moved_basis, parsed.memory)


def test_a_data_set_that_fits_in_the_servers_memory_is_flagged_for_its_reads_with_the_scale_that_would_not(tmp_path):
    """40 MiB of data (scale 10) and 16 GiB the server can use: whatever the device read, its reads come from
    memory; the same data set beside a 20 MiB limit is judged by its bytes."""
    p = PgbenchParams(script="select-only", clients=2, threads=2, rate=2000)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path / "a", ["select"], _observed(1, 0, reads=6000)), 1))
    assert parsed.metrics["cache"]["fits_in_memory"] is True
    j = _judge(parsed, disk_read=60 * MiB, disk_write=0)
    assert j.suspect and "fits in the memory its servers can use (16,384 MiB: MemTotal" in j.reason
    assert "scale 8193 or more" in j.reason and j.evidence["memory"]["fits"] is True  # 2 x 16 GiB / 4 MiB a unit
    small = PGBENCH.parse(
        p, _outputs(_trial(tmp_path / "b", ["select"], _observed(1, 0, reads=6000), memory=20 * MiB), 1)
    )
    assert small.metrics["cache"]["fits_in_memory"] is False
    assert not _judge(small, disk_read=60 * MiB, disk_write=0).suspect  # beyond memory, read from the device


def test_blocks_read_from_the_page_cache_are_flagged_by_the_cache_rule(tmp_path):
    """6000 blocks (47 MiB) the server read from outside its cache; the device read 1 MiB: the page cache answered."""
    p = PgbenchParams(script="select-only", clients=2, threads=2, rate=2000)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["select"], _observed(1, 0, reads=6000), memory=MiB), 1))
    j = _judge(parsed, disk_read=MiB, disk_write=0)
    assert j.suspect and "read 47 MiB by the servers' own counters" in j.reason and "a cache answered" in j.reason
    assert j.evidence["basis"] == metrics.BASIS and j.evidence["read_disk_share"] < 0.5
    assert not _judge(parsed, disk_read=30 * MiB, disk_write=0).suspect  # read from the device: measured


def test_a_write_runs_wal_must_reach_the_device(tmp_path):
    """fsync on: the device wrote what the WAL holds (and more: the tables); fsync off: it stayed in the
    page cache, and the rule says so."""
    p = PgbenchParams(clients=4, threads=2)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["tpcb"], _observed(1, 200 * MiB), memory=MiB), 1))
    reached = _judge(parsed, disk_read=0, disk_write=260 * MiB)
    assert not reached.suspect and reached.evidence["write_disk_share"] > 1
    stayed = _judge(parsed, disk_read=0, disk_write=3 * MiB)
    assert (
        stayed.suspect
        and "200 MiB by the servers' own counters" in stayed.reason
        and "loop7 moved 3 MiB" in stayed.reason
    )


def test_a_tpcb_like_run_far_below_memory_says_its_reads_and_stays_compared_on_its_wal_flushes(tmp_path):
    """Its commits wait on the WAL's flush, which is storage: the reads from memory are said (raised, expected),
    the trial is not drawn apart; without the WAL reaching the device, or with commits that do not wait, it is."""
    p = PgbenchParams(clients=4, threads=2)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["tpcb"], _observed(1, 200 * MiB)), 1))
    assert parsed.memory["write_bound"] is True
    j = _judge(parsed, disk_read=0, disk_write=260 * MiB)
    assert j.suspect and j.expected and not j.warns and j.evidence["write_disk_share"] > 1
    assert "its reads come from memory" in j.reason and "write-bound (its commits wait on the WAL's flush" in j.reason
    short = _judge(parsed, disk_read=0, disk_write=3 * MiB)  # the WAL stayed in a cache: drawn apart
    assert short.warns and "its reads come from memory" in short.reason and "loop7 moved 3 MiB" in short.reason
    lax = PgbenchParams(clients=4, threads=2, synchronous_commit="off")
    parsed = PGBENCH.parse(lax, _outputs(_trial(tmp_path / "lax", ["tpcb"], _observed(1, 200 * MiB)), 1))
    assert "write_bound" not in parsed.memory and _judge(parsed, disk_read=0, disk_write=260 * MiB).warns


def test_a_write_bound_run_whose_reads_from_memory_cross_the_byte_rules_minimum_is_still_compared(tmp_path):
    """The full tier of 2026-12-07: a tpcb-like run (73 MiB of data, 24 GiB of memory) read 32.02 MiB from outside
    its server's own cache, just past the byte rule's 32 MiB, and the device read none of it. Those reads are what
    fitting in memory says already: the run stays compared (raised, expected) as long as its WAL reached the
    device; a WAL that did not still draws it apart."""
    p = PgbenchParams(clients=4, threads=2)
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path, ["tpcb"], _observed(1, 200 * MiB, reads=6000)), 1))
    assert parsed.memory["write_bound"] is True and parsed.moved_bytes["read"] >= 32 * MiB
    j = _judge(parsed, disk_read=0, disk_write=260 * MiB)
    assert j.suspect and j.expected and not j.warns, j.reason
    assert "its reads come from memory" in j.reason and "write-bound" in j.reason
    short = _judge(parsed, disk_read=0, disk_write=3 * MiB)
    assert short.warns and "loop7 moved 3 MiB" in short.reason


def test_fio_keeps_its_words_in_the_cache_rule():
    j = validity.cache({"read": 100 * MiB}, {"loop0": {"read_bytes": MiB}}, True, "bind")
    assert "100 MiB with O_DIRECT but loop0" in j.reason and "basis" not in j.evidence


def test_the_rule_applies_to_pgbench_whatever_its_params():
    assert PGBENCH.direct_io(PgbenchParams()) is True


def test_hdr_histograms_of_pgbench_and_ycsb_share_one_grid():
    h = hdr.Histogram()
    h.record(1234, 3)
    merged = hdr.merge([h, parse.read_run(DATA / "rate", lag=True, retries=True).logs.latency])
    assert merged.total == 3 + 407


def test_transactions_skipped_and_late_under_a_latency_limit_are_counted_apart():
    """pgbench 15 under --rate and --latency-limit: the skipped are not among those processed, and the logs hold
    them as `skipped` lines; those above the limit are counted among the processed."""
    run = parse.read_run(DATA / "latency-limit", lag=True, retries=False)
    s = run.summary
    assert (s.processed, s.skipped, s.late) == (5415, 4397, 1770)
    assert (run.logs.completed, run.logs.skipped, run.logs.latency.total) == (5415, 4397, 5415)


def test_under_an_open_sync_method_the_wal_writes_are_the_syncs(tmp_path):
    """Issue 56: under open_datasync pg_stat_wal.wal_sync stays 0 and every WAL write is an O_DSYNC write: the
    flush check is given the writes (by_writes), as the server said its method was, not nothing."""
    observed = _observed(1, 200 * MiB, syncs=300)
    for c in observed["after"]:
        c["wal_sync"] = 0
    server = {"version": "15.18", "block_bytes": 8192, "settings": {"wal_sync_method": "open_datasync"}}
    parsed = PGBENCH.parse(
        PgbenchParams(clients=4, threads=2), _outputs(_trial(tmp_path, ["tpcb"], observed, server=server), 1)
    )
    s = parsed.syncs
    assert (s.count, s.streams, s.by_writes) == (300, 1, True) and "open_datasync" in s.what
    # as the spec set it, when the server's facts are not there
    p = PgbenchParams(clients=4, threads=2, settings={"wal_sync_method": "open_sync"})
    parsed = PGBENCH.parse(p, _outputs(_trial(tmp_path / "b", ["tpcb"], observed, memory=None), 1))
    assert parsed.syncs.by_writes and "open_sync" in parsed.syncs.what
    parsed = PGBENCH.parse(
        PgbenchParams(clients=4, threads=2), _outputs(_trial(tmp_path / "c", ["tpcb"], _observed(1, MiB)), 1)
    )
    assert (parsed.syncs.what, parsed.syncs.by_writes, parsed.syncs.count) == ("WAL syncs", False, 100)
