"""The metrics of one pgbench trial, from pgbench's own output (parse.py) and the servers' counters.

- `primary`: the transactions per second of every server together: the sum of each pgbench's
  `tps` (without the initial connection time, pgbench's own figure), with the per-second series
  (`pgbench_tps`: the servers' `--progress 1` figures added second by second) for the steady check.
- `read` or `write`: the same rate (`tps`) and the latency of a transaction (`lat_ns`: mean, p50, p90, p95,
  p99, p99.9 ... in ns; `n` the transactions logged) from every transaction in every server's logs (or the
  share `log_sampling` logs), one HdrHistogram, never an average
  of percentiles; `write` when a script writes, `read` when they only read (so the report's latency
  figures read it as they read fio's).
- `log`: what the latency figures rest on (sampling.py): the share of the transactions the logs hold
  (`sampling_rate`, `log_sampling`'s choice), the transactions logged, the samples beyond each percentile,
  and the percentiles of a sample withheld (None in `lat_ns`) for fewer than 20 samples beyond them.
- `transactions`: processed, failed, retried, the retries, and those above `latency_limit` (late) or
  skipped under it (pgbench's summaries, checked against the logs); `lag_ns` the schedule lag under an
  offered rate, and `offered` the rate each server was offered (the advice then compares latency).
- `wal`, `blocks`, `checkpoints`: what the measured run made the servers do, from their counters before
  and after it (pg_stat_wal, pg_stat_database, pg_stat_bgwriter): the WAL, the blocks read from outside
  their cache and found in it, the checkpoints (timed and requested, each counted as it starts) and the
  buffers written by checkpoints, the background writer and the backends.
- `server`: what the started server said of itself: its version (the image's, in a container), its block
  size and the settings in force. `cache`: the data set beside the memory the servers can use (the host's
  MemTotal, or each container's or pod's memory limit), and whether it fits.

The bytes the workload says it moved (`Parsed.moved_bytes`), which the cache rule compares with the bytes
each disk below moved (results/validity/disks.py, the rule of every workload), are the servers' own: the
blocks they read from outside their cache (blks_read x block_size: every one the kernel answered, from the
device or from its page cache), and the WAL they wrote (every byte of it must reach the device when
commits are forced to it). Beside them (`Parsed.memory`) the data set and the memory its servers can use:
a data set that fits in that memory is read from it once warm, whatever the device, and the cache rule
flags it for its reads, with the scale that would not fit.
"""

from __future__ import annotations

from pathlib import Path

from strata.core.jsondoc import JsonObject, JsonValue, as_obj, obj
from strata.workloads import hdr
from strata.workloads.base import Parsed, Syncs, headline
from strata.workloads.latency import figure
from strata.workloads.pgbench import parse as pp
from strata.workloads.pgbench import sampling
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.pgbench.postgres import BLOCK_BYTES, COUNTERS
from strata.workloads.server import latency, memory, records
from strata.workloads.server.durability import Durability, Setting, value_of

CLIENTS_DIR = "pgbench"
SERIES = "pgbench_tps"
US_NS = 1000.0


def summary_ns(h: hdr.Histogram | None) -> JsonObject:
    """A latency summary in ns from a histogram in us."""
    return latency.of_hdr(h, US_NS)


def parse_trial(params: PgbenchParams, arts: list[Path]) -> Parsed:
    recs, dirs = records.of_trial(arts, CLIENTS_DIR, "pgbench")
    rates = [_sampling_rate(r) for a, r in zip(arts, recs) for _ in records.client_dirs([a], [r])]
    lag, retries = params.rate is not None, params.max_tries > 1
    runs = [pp.read_run(d, lag=lag, retries=retries, sampling_rate=k) for d, k in zip(dirs, rates)]
    tps = sum(r.summary.tps or 0.0 for r in runs)
    merged, weighted = sampling.merge((r.logs.latency, r.sampling_rate) for r in runs)
    latency = summary_ns(merged)
    sampled = any(r.sampling_rate < 1.0 for r in runs)
    log = _log(runs, recs, merged, latency, weighted, sampled)
    done: JsonObject = {"tps": tps, "lat_ns": latency}
    wal, blocks, checkpoints = _deltas(recs)
    server = next((as_obj(r["server"], "server") for r in recs if r.get("server")), None)
    block_bytes = _block_bytes(server)
    if blocks is not None:
        blocks["read_bytes"] = blocks["read"] * block_bytes
    data = records.data_set_bytes(recs, "database_bytes")
    mem, of = records.usable_memory(recs)
    cache = _cache(params, recs, data, mem, of)
    metrics: JsonObject = {
        "kind": "pgbench",
        "primary": headline(tps, "tx/s", "tps", SERIES, series_unit="tx/s", tps=tps),
        "tps": tps,
        "servers": [_server(r) for r in runs],
        "transactions": _transactions(runs),
        "log": log,
        "read": {"tps": 0.0} if params.writes else done,
        "write": done if params.writes else {"tps": 0.0},
        "wal": dict(wal) if wal is not None else None,
        "blocks": dict(blocks) if blocks is not None else None,
        "checkpoints": _checkpoints(checkpoints, params, recs, _started(runs)),
        "server": server,
        "durability": durability(params, server).to_json(),
        "cache": cache,
        "clients": records.phases(recs),
        "node_ready_s": list(records.ready_s(recs)),
        "pgbench": {
            "version": runs[0].summary.version if runs else None,
            "transaction_type": runs[0].summary.transaction_type if runs else None,
            "threads": params.effective_threads,
        },
    }
    if params.rate is not None:
        lags = sampling.merge((r.logs.lag, r.sampling_rate) for r in runs)[0]
        lag_ns = summary_ns(lags)
        log["lag_withheld"] = list(sampling.withhold(lag_ns, sampling.beyond(lags), sampled))
        metrics["lag_ns"] = lag_ns
        metrics["offered"] = {"rate_tx_s": params.rate, "servers": records.servers(recs)}
    moved = {"read": (blocks or {}).get("read_bytes") or 0, "write": (wal or {}).get("bytes") or 0}
    series = _series(runs)
    windows = [_window(r.logs) for r in runs]
    servers = sum(max(1, records.servers([r])) for r in recs)
    syncs = _syncs(wal, servers, _sync_method(params, server))
    return Parsed(
        metrics,
        moved,
        {SERIES: series} if series else {},
        windows,
        dirs,
        moved_basis=BASIS,
        memory=_memory(params, data, mem, of),
        syncs=syncs,
    )


# What the bytes the workload says it moved are, in the cache judgement's message.
BASIS = "by the servers' own counters (blocks read from outside their cache, WAL written)"


def _window(logs: pp.Logs) -> tuple[float, float] | None:
    """The wall-clock seconds in which a run did transactions, from its own logs."""
    if logs.first_start_s is None or logs.last_end_s is None:
        return None
    return logs.first_start_s, logs.last_end_s


def _server(run: pp.Run) -> JsonObject:
    s, logs = run.summary, run.logs
    logged = logs.completed + logs.failed + logs.skipped
    return {
        "tps": s.tps,
        "processed": s.processed,
        "failed": s.failed,
        "retried": s.retried,
        "logged": logged,
        "sampling_rate": run.sampling_rate,
    }


def _sampling_rate(record: JsonObject) -> float:
    """The share of the transactions a host's logs hold: its record's (1.0 in an older strata's: no `log`)."""
    rate = obj(record, "log").get("sampling_rate")
    return float(rate) if isinstance(rate, (int, float)) and 0 < rate <= 1 else 1.0


def _log(
    runs: list[pp.Run],
    recs: list[JsonObject],
    merged: hdr.Histogram | None,
    lat: JsonObject,
    weighted: bool,
    sampled: bool,
) -> JsonObject:
    """What the latency figures rest on: the logs' sampling rate (one, or each host's), the transactions they
    hold, the samples beyond each percentile, and the percentiles withheld from `lat` for too few of them."""
    rates: list[JsonValue] = [*sorted({r.sampling_rate for r in runs})]
    beyond = sampling.beyond(merged)
    chosen: list[JsonValue] = [r["log"] for r in recs if isinstance(r.get("log"), dict)]
    return {
        "sampling_rate": rates[0] if len(rates) == 1 else rates,
        "sampled": sampled,
        "logged": sum(r.logs.completed + r.logs.failed + r.logs.skipped for r in runs),
        "samples_beyond": dict(beyond),
        "min_beyond": sampling.MIN_BEYOND,
        "withheld": list(sampling.withhold(lat, beyond, sampled)),
        "weighted": weighted,  # hosts that sampled at different rates, merged weighted (sampling.merge)
        "chosen": chosen[0] if len(chosen) == 1 else chosen or None,
    }


def _transactions(runs: list[pp.Run]) -> JsonObject:
    counts = ("processed", "failed", "retried", "retries", "skipped", "late")
    n = {k: sum(getattr(r.summary, k) or 0 for r in runs) for k in counts}
    ended = n["processed"] + n["failed"]
    return {**n, "failed_share": round(n["failed"] / ended, 6) if ended else None}


def _series(runs: list[pp.Run]) -> list[list[float]]:
    """The servers' per-second tps added second by second, over the seconds every one of them reported."""
    return [[i, v] for i, v in enumerate(records.added([[p.tps for p in r.progress] for r in runs]))]


def _deltas(
    recs: list[JsonObject],
) -> tuple[dict[str, int] | None, dict[str, int] | None, dict[str, float] | None]:
    """The WAL, the blocks and the checkpoints of the measured run: each server's counters after it less before."""
    before, after = records.observed(recs, "before"), records.observed(recs, "after")
    if not before or len(before) != len(after) or any("error" in c for c in before + after):
        return None, None, None
    # counters a server of an older strata did not read (stored results before pg_stat_bgwriter) are absent
    names = [k for k in COUNTERS if k != "database_bytes" and all(k in c for c in before + after)]
    d = {k: sum(figure(a, k) - figure(b, k) for a, b in zip(after, before)) for k in names}
    wal = {
        "bytes": int(d["wal_bytes"]),
        "records": int(d["wal_records"]),
        "fpi": int(d["wal_fpi"]),
        "writes": int(d["wal_write"]),
        "syncs": int(d["wal_sync"]),
    }
    blocks = {"read": int(d["blks_read"]), "hit": int(d["blks_hit"])}
    if "checkpoints_timed" not in d:
        return wal, blocks, None
    cp: dict[str, float] = {
        "timed": d["checkpoints_timed"],
        "requested": d["checkpoints_req"],
        "write_ms": round(d["checkpoint_write_time"], 3),
        "sync_ms": round(d["checkpoint_sync_time"], 3),
        "buffers_checkpoint": d["buffers_checkpoint"],
        "buffers_clean": d["buffers_clean"],
        "buffers_backend": d["buffers_backend"],
        "buffers_backend_fsync": d["buffers_backend_fsync"],
        "buffers_alloc": d["buffers_alloc"],
    }
    return wal, blocks, cp


def _started(runs: list[pp.Run]) -> float | None:
    """When the first transaction of the measured run started (wall clock), from the logs."""
    starts = [r.logs.first_start_s for r in runs if r.logs.first_start_s is not None]
    return min(starts) if starts else None


def _checkpoints(
    cp: dict[str, float] | None, params: PgbenchParams, recs: list[JsonObject], started: float | None
) -> JsonObject | None:
    """The checkpoints inside the measured run (`count`: timed and requested, of every server), and when they
    fall: the run started `phase_s` seconds into a checkpoint_timeout counted from the clock's CHECKPOINT."""
    if cp is None:
        return None
    out: JsonObject = {"count": cp["timed"] + cp["requested"], **cp, "timeout_s": params.checkpoint_timeout}
    out["max_wal_size_bytes"] = params.max_wal_size
    clock = next((r.get("checkpoint_clock_s") for r in recs if r.get("checkpoint_clock_s")), None)
    if isinstance(clock, (int, float)) and isinstance(started, (int, float)):
        out["phase_s"] = round((started - clock) % params.checkpoint_timeout, 3)
    return out


def _sync_method(params: PgbenchParams, server: JsonObject | None) -> str:
    """The server's wal_sync_method: as it said it was in force, else as the spec set it (else the default)."""
    said = as_obj((server or {}).get("settings") or {}, "settings").get("wal_sync_method")
    return str(said or params.settings.get("wal_sync_method") or "fdatasync")


def durability(params: PgbenchParams, server: JsonObject | None) -> Durability:
    """PostgreSQL's durability settings in force (the server's own, else the spec's): synchronous_commit and fsync
    decide whether a commit waits on its WAL's flush; full_page_writes and wal_sync_method what the device sees."""
    said = as_obj((server or {}).get("settings") or {}, "settings")
    spec = {
        "synchronous_commit": params.synchronous_commit,
        "fsync": "on" if params.fsync else "off",
        "full_page_writes": "on" if params.full_page_writes else "off",
    }

    def of(name: str, default: str) -> str:
        return value_of(name, said, params.settings, spec, default=default)

    sc, fsync, fpw, method = (
        of("synchronous_commit", "on"),
        of("fsync", "on"),
        of("full_page_writes", "on"),
        _sync_method(params, server),
    )
    return Durability(
        (
            Setting(
                "synchronous_commit",
                sc,
                f"sc={sc}",
                "a commit returns before its WAL is flushed" if sc == "off" else "",
            ),
            Setting(
                "fsync", fsync, f"fsync={fsync}", "PostgreSQL never asks the device to flush" if fsync == "off" else ""
            ),
            Setting("full_page_writes", fpw, f"fpw={fpw}"),
            Setting("wal_sync_method", method, method),
        )
    )


def _syncs(wal: dict[str, int] | None, servers: int, method: str) -> Syncs | None:
    """The syncs the servers asked for, one stream a server (they wait one at a time on its WALWriteLock):
    pg_stat_wal.wal_sync under fsync or fdatasync; under open_datasync and open_sync (O_DSYNC, O_SYNC) that
    counter stays 0 and every WAL write is synced itself, so they are its writes (`wal_write`, which counts
    XLogWrite calls: at most as many as its synced writes, so the flushes owed are not overstated)."""
    if not wal:
        return None
    if method.startswith("open_"):
        return Syncs(wal["writes"], servers, f"WAL writes ({method}: each one synced)", by_writes=True)
    return Syncs(wal["syncs"], servers, "WAL syncs") if wal.get("syncs") is not None else None


def _block_bytes(server: JsonObject | None) -> int:
    block = (server or {}).get("block_bytes")
    return block if isinstance(block, int) and block > 0 else BLOCK_BYTES


def _cache(params: PgbenchParams, recs: list[JsonObject], data: int | None, mem: int | None, of: str) -> JsonObject:
    """The data set (`data`) beside the memory the servers can use (`mem`, bounded by `of`): it fits when it is no
    larger (the cache rule reads it)."""
    cached = [c for c in (r.get("page_cache_bytes") for r in recs) if isinstance(c, int)]
    return {
        "data_set_bytes": data,
        "memory_bytes": mem,
        "memory_of": of,
        "shared_buffers_bytes": params.shared_buffers * records.servers(recs),
        "page_cache_bytes": sum(cached) if cached and len(cached) == len(recs) else None,
        "fits_in_memory": (data <= mem) if data is not None and mem is not None else None,
        "note": "PostgreSQL reads through its shared buffers and the page cache, both in the memory it may use: a "
        "data set that fits in it is read from memory once warm",
    }


def _memory(params: PgbenchParams, data: int | None, mem: int | None, of: str) -> JsonObject | None:
    """What the cache rule judges: the data set and the memory (memory.data_set), with the scale that would
    not fit in it (twice the memory: then most reads must reach the device)."""
    out = memory.data_set(data, mem, of)
    if out is None or not data or mem is None:
        return out
    if params.writes and params.fsync and params.synchronous_commit != "off":
        out["write_bound"] = True
        out["write_bound_words"] = (
            f"its commits wait on the WAL's flush: synchronous_commit {params.synchronous_commit}"
        )
    per_scale = data / params.scale
    need = int(2 * mem // per_scale) + 1
    out["fix"] = (
        f"for the device, a data set beyond that memory: scale {need} or more ({need * per_scale / 2**30:.1f} GiB, "
        "twice the memory), or in a container a memory limit (limits.memory) below half the data set"
    )
    return out
