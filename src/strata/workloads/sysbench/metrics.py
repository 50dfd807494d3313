"""The metrics of one sysbench trial, from sysbench's own output (parse.py) and the servers' counters.

- `primary`: the transactions per second of every server together (the sum of each sysbench's rate), with
  its queries per second beside it, and the per-second series (`sysbench_tps`: the servers' reports added
  second by second) for the steady check.
- `read` or `write`: the same rate (`tps`) and the latency of a transaction (`lat_ns`: mean, min, max, p50,
  p90, p95, p99, p99.9 in ns) from every event of every server, their histograms added bucket by bucket
  (latency.py), never an average of percentiles; `write` when the script writes, `read` when it only reads.
- `transactions`: processed, the errors sysbench ignored (deadlocks, lock wait timeouts) and the reconnects,
  each summed over the servers; `queries` by kind; `queue` the longest queue under an offered rate.
- `innodb`: what the measured run made the servers do (SHOW GLOBAL STATUS after it less before it): the
  bytes InnoDB read from its files and the pages its buffer pool did not hold, the redo log it wrote, its
  data and doublewrite pages; `cache`: the data set beside the memory that can cache it (the buffer pool
  under O_DIRECT, which bypasses the page cache; else the memory the servers can use), `server`: its
  version and the settings in force, from the running server.

The bytes the workload says it moved (`Parsed.moved_bytes`), which the cache rule compares with the bytes
each disk below moved (the rule of every workload): the bytes InnoDB read from its data files (each one a
read of the device unless a cache below InnoDB answered: the page cache under `fsync`) and the redo log it
wrote (each byte of it must reach the device when commits flush it). A run whose data set the buffer pool
holds reads nothing from its files: its reads measure memory, which `cache.fits` says.
"""

from __future__ import annotations

from pathlib import Path

from strata.core.jsondoc import JsonObject, arr, as_obj
from strata.workloads.base import Parsed, Syncs, headline
from strata.workloads.server import latency, memory, records
from strata.workloads.server.durability import Durability, Setting, value_of
from strata.workloads.sysbench import parse as sp
from strata.workloads.sysbench.mariadb import STATUS
from strata.workloads.sysbench.params import SysbenchParams

CLIENTS_DIR = "sysbench"
SERIES = "sysbench_tps"
MS_NS = 1e6
DIRECT = ("O_DIRECT", "O_DIRECT_NO_FSYNC")  # InnoDB's data files bypass the page cache


def parse_trial(params: SysbenchParams, arts: list[Path]) -> Parsed:
    recs, dirs = records.of_trial(arts, CLIENTS_DIR, "sysbench")
    runs = [sp.read_run(d) for d in dirs]
    tps = sum(r.summary.tps or 0.0 for r in runs)
    qps = sum(r.summary.qps or 0.0 for r in runs)
    done: JsonObject = {"tps": tps, "lat_ns": _latency(runs)}
    innodb = records.deltas(recs, tuple(s.lower() for s in STATUS))
    cache = _cache(params, recs)
    metrics: JsonObject = {
        "kind": "sysbench",
        "primary": headline(tps, "tx/s", "tps", SERIES, series_unit="tx/s", tps=tps, qps=qps),
        "tps": tps,
        "qps": qps,
        "servers": [_server(r) for r in runs],
        "transactions": _transactions(runs),
        "queries": {k: sum(r.summary.queries.get(k, 0) for r in runs) for k in ("read", "write", "other", "total")},
        "read": {"tps": 0.0} if params.writes else done,
        "write": done if params.writes else {"tps": 0.0},
        "innodb": _innodb(innodb, recs),
        "cache": cache,
        "server": recs[0].get("server") or {},
        "durability": durability(params, as_obj(recs[0].get("server") or {}, "server")).to_json(),
        "flushed": [f for r in recs for f in arr(r, "flushed")],
        "clients": records.phases(recs),
        "node_ready_s": list(records.ready_s(recs)),
        "sysbench": {
            "version": runs[0].summary.version if runs else None,
            "script": params.script,
            "clients": params.clients,
            "tables": params.tables,
            "table_size": params.table_size,
        },
    }
    if params.rate is not None:
        queues = [i.queue for r in runs for i in r.intervals if i.queue is not None]
        metrics["queue"] = {"max_length": max(queues, default=None), "seconds": len(queues)}
        metrics["offered"] = {"rate_tx_s": params.rate, "servers": records.servers(recs)}
    moved = {"read": (innodb or {}).get("innodb_data_read", 0), "write": (innodb or {}).get("innodb_os_log_written", 0)}
    series = _series(runs)
    # MariaDB 10.11 counts its redo log's fsyncs with its data files' (Innodb_data_fsyncs: 215 for 200 commits at
    # innodb_flush_log_at_trx_commit=1, measured): a server's log flushes one at a time, its data files beside it
    syncs = Syncs(innodb["innodb_data_fsyncs"], 2 * records.servers(recs), "InnoDB's fsyncs") if innodb else None
    return Parsed(
        metrics,
        moved,
        {SERIES: series} if series else {},
        [r.window for r in runs],
        dirs,
        moved_basis="as InnoDB's reads from its files and its redo log",
        memory=_memory(params, cache),
        syncs=syncs,
    )


def _latency(runs: list[sp.Run]) -> JsonObject:
    """Every server's transactions in one summary: the histograms added, the mean from sysbench's exact sums."""
    events = sum(r.summary.events or 0 for r in runs)
    total_ms = sum(r.summary.lat_ms.get("sum", 0.0) for r in runs)
    lows = [r.summary.lat_ms["min"] for r in runs if "min" in r.summary.lat_ms]
    highs = [r.summary.lat_ms["max"] for r in runs if "max" in r.summary.lat_ms]
    return latency.of_buckets(
        latency.merge(r.histogram for r in runs),
        sp.percentile_ms,
        MS_NS,
        total_ms / events if events else None,
        min(lows, default=None),
        max(highs, default=None),
    )


def _server(run: sp.Run) -> JsonObject:
    s = run.summary
    return {"tps": s.tps, "qps": s.qps, "transactions": s.transactions, "errors": s.errors, "reconnects": s.reconnects}


def _transactions(runs: list[sp.Run]) -> JsonObject:
    processed = sum(r.summary.transactions or 0 for r in runs)
    errors = sum(r.summary.errors for r in runs)
    return {
        "processed": processed,
        "errors": errors,
        "reconnects": sum(r.summary.reconnects for r in runs),
        "error_share": round(errors / (processed + errors), 6) if processed + errors else None,
    }


def _series(runs: list[sp.Run]) -> list[list[float]]:
    """The servers' per-second tps added second by second, over the seconds every one of them reported."""
    return [[i, v] for i, v in enumerate(records.added([[i.tps for i in r.intervals] for r in runs]))]


def _innodb(d: dict[str, int] | None, recs: list[JsonObject]) -> JsonObject | None:
    if d is None:
        return None
    after = records.observed(recs, "after")
    page = after[0].get("page_bytes") if after else None
    return {
        "read_bytes": d["innodb_data_read"],
        "reads": d["innodb_data_reads"],
        "buffer_pool_reads": d["innodb_buffer_pool_reads"],
        "buffer_pool_read_bytes": d["innodb_buffer_pool_reads"] * page if isinstance(page, int) else None,
        "read_requests": d["innodb_buffer_pool_read_requests"],
        "redo_bytes": d["innodb_os_log_written"],
        "redo_writes": d["innodb_log_writes"],
        "written_bytes": d["innodb_data_written"],
        "pages_written": d["innodb_pages_written"],
        "doublewrite_pages": d["innodb_dblwr_pages_written"],
        "fsyncs": d["innodb_data_fsyncs"],
        "page_bytes": page,
    }


def _cache(params: SysbenchParams, recs: list[JsonObject]) -> JsonObject:
    """The data set beside the memory that can cache it: the servers' buffer pools when InnoDB bypasses the page
    cache (O_DIRECT), else the memory the servers can use (their buffer pools and the page cache live in it)."""
    data, servers = records.data_set_bytes(recs), records.servers(recs)
    if params.innodb_flush_method in DIRECT:
        mem: int | None = params.innodb_buffer_pool_size * servers
        of = f"the buffer pools of {servers} server(s) (innodb_buffer_pool_size; O_DIRECT bypasses the page cache)"
    else:
        mem, of = records.usable_memory(recs)
    judged = memory.data_set(data, mem, of)
    if judged is None or data is None or mem is None:
        return {"data_set_bytes": data, "memory_bytes": mem, "memory_of": of}
    rows = params.tables * params.table_size
    need = int(2 * mem / (data / (rows * servers)) / servers) + 1 if data else rows
    shrink = (
        "or a smaller innodb_buffer_pool_size"
        if params.innodb_flush_method in DIRECT
        else "or in a container a memory limit (limits.memory) below half the data set"
    )
    fix = (
        f"for the device, a data set beyond that memory: tables x table_size of {need:,} rows or more a server "
        f"(now {rows:,}; twice the memory), {shrink}"
    )
    return {**judged, "fits": data <= mem, "fix": fix}


def _memory(params: SysbenchParams, cache: JsonObject) -> JsonObject | None:
    """What the cache rule judges (`Parsed.memory`): the data set beside the memory that caches it, and whether
    the run is write-bound (its commits wait on the redo log's flush, which is storage)."""
    data, mem = cache.get("data_set_bytes"), cache.get("memory_bytes")
    out = memory.data_set(
        data if isinstance(data, int) else None,
        mem if isinstance(mem, int) else None,
        str(cache.get("memory_of") or ""),
    )
    if out is None:
        return None
    out["fix"] = cache.get("fix")
    if params.writes and params.durable:
        out["write_bound"] = True
        out["write_bound_words"] = (
            f"its commits wait on the redo log's flush: innodb_flush_log_at_trx_commit "
            f"{params.innodb_flush_log_at_trx_commit}"
        )
    return out


# innodb_flush_log_at_trx_commit: why a commit under each value returns before its redo log reaches the device
LAX_TRX_COMMIT = {
    "0": "a commit returns before its redo log is written; the log is flushed once a second",
    "2": "a commit returns once its redo log is written to the page cache; it is flushed once a second",
}


def durability(params: SysbenchParams, server: JsonObject) -> Durability:
    """InnoDB's durability settings in force (the server's own, else the spec's, else MariaDB's defaults): the
    redo log's flush at commit, the binary log and its syncs, the doublewrite buffer and the data files' method."""
    said = as_obj(server.get("settings") or {}, "settings")
    spec = {
        "innodb_flush_log_at_trx_commit": str(params.innodb_flush_log_at_trx_commit),
        "innodb_doublewrite": "ON" if params.innodb_doublewrite else "OFF",
        "innodb_flush_method": params.innodb_flush_method,
    }

    def of(name: str, default: str) -> str:
        return value_of(name, said, params.settings, spec, default=default)

    trx, binlog, sync_binlog = of("innodb_flush_log_at_trx_commit", "1"), of("log_bin", "OFF"), of("sync_binlog", "0")
    doublewrite, method = of("innodb_doublewrite", "ON"), of("innodb_flush_method", "O_DIRECT")
    return Durability(
        (
            Setting("innodb_flush_log_at_trx_commit", trx, f"trx_commit={trx}", LAX_TRX_COMMIT.get(trx, "")),
            Setting("log_bin", binlog, f"binlog={binlog}"),
            Setting("sync_binlog", sync_binlog, f"sync_binlog={sync_binlog}"),
            Setting("innodb_doublewrite", doublewrite, f"doublewrite={doublewrite}"),
            Setting(
                "innodb_flush_method",
                method,
                method,
                "InnoDB never flushes its data files" if method == "nosync" else "",
            ),
        )
    )
