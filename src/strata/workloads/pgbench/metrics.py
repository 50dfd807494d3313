"""The metrics of one pgbench trial, from pgbench's own output (parse.py) and the servers' counters.

- `primary`: the transactions per second of every server together: the sum of each pgbench's
  `tps` (without the initial connection time, pgbench's own figure), with the per-second series
  (`pgbench_tps`: the servers' `--progress 1` figures added second by second) for the steady check.
- `read` or `write`: the same rate (`tps`) and the latency of a transaction (`lat_ns`: mean, p50, p95,
  p99, ... in ns) from every transaction in every server's logs, one HdrHistogram, never an average of
  percentiles; `write` when the script writes, `read` when it only reads (so the report's latency
  figures read it as they read fio's).
- `transactions`: processed, failed, retried and the retries (pgbench's summaries, checked against
  the logs); `lag_ns` the schedule lag under an offered rate.
- `wal` and `blocks`: what the measured run made the servers do, from their counters before and
  after it (pg_stat_wal, pg_stat_database); `cache`: the data set beside the servers' caches and the
  page cache.

The bytes the workload says it moved (`Parsed.moved_bytes`), which the cache rule compares with
the bytes each disk below moved (validity.py, the rule of every workload): the WAL the servers wrote
(every byte of it must reach the device when commits are forced to it), and, for a script that only
reads, one block (8 KiB) per transaction, the least a transaction reads when no cache holds the data.
A select-only run whose data set fits in memory moves almost nothing, and is flagged; a write run
whose WAL stayed in the page cache (`fsync: false`) likewise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput
from strata.workloads import hdr
from strata.workloads.base import Parsed, Syncs, headline
from strata.workloads.pgbench import parse as pp
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.pgbench.postgres import BLOCK_BYTES, COUNTERS
from strata.workloads.server.template import server_artifacts

CLIENTS_DIR = "pgbench"
SERIES = "pgbench_tps"
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}


def summary_ns(h: hdr.Histogram | None) -> dict[str, Any]:
    """A latency summary in ns (the shape workloads/latency.py gives fio's) from a histogram in us."""
    if h is None or h.total == 0:
        return {"n": 0, "mean": None, "min": None, "max": None, **{k: None for k in PERCENTILES}}
    out = {"n": h.total, "mean": h.mean() * 1000, "min": h.min() * 1000.0, "max": h.max() * 1000.0}
    return out | {k: h.value_at_percentile(pct) * 1000.0 for k, pct in PERCENTILES.items()}


def parse(params: PgbenchParams, outputs: list[InstanceOutput]) -> Parsed:
    arts = server_artifacts(outputs, "PostgreSQL server", "server")
    return parse_trial(params, arts)


def parse_trial(params: PgbenchParams, arts: list[Path]) -> Parsed:
    records = [_record(a) for a in arts]
    dirs = [a / c for a, r in zip(arts, records) for c in r["phases"]["run"]["clients"]]
    runs = [pp.read_run(d, lag=params.rate is not None, retries=params.max_tries > 1) for d in dirs]
    tps = sum(r.summary.tps or 0.0 for r in runs)
    latency = summary_ns(hdr.merge(r.logs.latency for r in runs))
    done = {"tps": tps, "lat_ns": latency}
    wal, blocks = _deltas(records)
    processed = sum(r.logs.completed for r in runs)
    metrics = {
        "kind": "pgbench",
        "primary": headline(tps, "tx/s", "tps", SERIES, series_unit="tx/s", tps=tps),
        "tps": tps,
        "servers": [_server(r) for r in runs],
        "transactions": _transactions(runs),
        "read": {"tps": 0.0} if params.writes else done,
        "write": done if params.writes else {"tps": 0.0},
        "wal": wal,
        "blocks": blocks,
        "cache": _cache(params, records),
        "clients": _phases(records),
        "node_ready_s": [s for r in records for s in (r.get("node_ready_s") or [])],
        "pgbench": {
            "version": runs[0].summary.version if runs else None,
            "transaction_type": runs[0].summary.transaction_type if runs else None,
            "threads": params.effective_threads,
        },
    }
    if params.rate is not None:
        metrics["lag_ns"] = summary_ns(hdr.merge(r.logs.lag for r in runs))
    moved = {
        "read": 0 if params.writes else processed * BLOCK_BYTES,
        "write": (wal or {}).get("bytes") or 0,
    }
    series = _series(runs)
    windows = [_window(r.logs) for r in runs]
    basis = "as one 8 KiB block a transaction" if not params.writes else "as WAL"
    # WAL syncs (pg_stat_wal.wal_sync) wait one at a time on each server's WALWriteLock: one stream a server
    servers = sum(r.get("servers") or 1 for r in records)
    syncs = Syncs(wal["syncs"], servers, "WAL syncs") if wal and wal.get("syncs") is not None else None
    return Parsed(metrics, moved, {SERIES: series} if series else {}, windows, dirs, moved_basis=basis, syncs=syncs)


def _window(logs: pp.Logs) -> tuple[float, float] | None:
    """The wall-clock seconds in which a run did transactions, from its own logs."""
    if logs.first_start_s is None or logs.last_end_s is None:
        return None
    return logs.first_start_s, logs.last_end_s


def _record(art: Path) -> dict[str, Any]:
    try:
        record: dict[str, Any] = json.loads((art / CLIENTS_DIR / "clients.json").read_text())
        return record
    except (OSError, ValueError) as e:
        raise TrialFailure("parse", f"the pgbench trial's record in {art / CLIENTS_DIR} cannot be read: {e}")


def _server(run: pp.Run) -> dict[str, Any]:
    s = run.summary
    return {"tps": s.tps, "processed": s.processed, "failed": s.failed, "retried": s.retried}


def _transactions(runs: list[pp.Run]) -> dict[str, Any]:
    processed = sum(r.summary.processed or 0 for r in runs)
    failed = sum(r.summary.failed for r in runs)
    return {
        "processed": processed,
        "failed": failed,
        "retried": sum(r.summary.retried for r in runs),
        "retries": sum(r.summary.retries for r in runs),
        "failed_share": round(failed / (processed + failed), 6) if processed + failed else None,
    }


def _series(runs: list[pp.Run]) -> list[list[float]]:
    """The servers' per-second tps added second by second, over the seconds every one of them reported."""
    per = [[p.tps for p in r.progress] for r in runs]
    seconds = min((len(x) for x in per), default=0)
    return [[i, sum(x[i] for x in per)] for i in range(seconds)]


def _deltas(records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The WAL and the blocks of the measured run: each server's counters after it less before it."""
    before = [c for r in records for c in (r.get("observed") or {}).get("before") or []]
    after = [c for r in records for c in (r.get("observed") or {}).get("after") or []]
    if not before or len(before) != len(after) or any("error" in c for c in before + after):
        return None, None
    d = {k: sum(a[k] - b[k] for a, b in zip(after, before)) for k in COUNTERS if k != "database_bytes"}
    wal = {
        "bytes": d["wal_bytes"],
        "records": d["wal_records"],
        "fpi": d["wal_fpi"],
        "writes": d["wal_write"],
        "syncs": d["wal_sync"],
    }
    return wal, {"read": d["blks_read"], "hit": d["blks_hit"]}


def _cache(params: PgbenchParams, records: list[dict[str, Any]]) -> dict[str, Any]:
    after = [c for r in records for c in (r.get("observed") or {}).get("after") or []]
    sizes = [c.get("database_bytes") for c in after]
    data = sum(s for s in sizes if isinstance(s, int)) if sizes and None not in sizes else None
    cached = [r["page_cache_bytes"] for r in records if isinstance(r.get("page_cache_bytes"), int)]
    page_cache = sum(cached) if cached and len(cached) == len(records) else None
    servers = sum(r.get("servers") or 0 for r in records)
    shared = params.shared_buffers * servers
    return {
        "data_set_bytes": data,
        "shared_buffers_bytes": shared,
        "page_cache_bytes": page_cache,
        "fits_in_memory": (data <= shared + page_cache) if data is not None and page_cache is not None else None,
        "note": "PostgreSQL reads through its shared buffers and the page cache: a data set that fits in "
        "them is read from memory",
    }


def _phases(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each phase's client wall and CPU time (the clients run outside the stack under test), host after host."""
    phases: dict[str, Any] = {}
    for name in records[0]["phases"]:
        ph = [r["phases"][name] for r in records if name in r["phases"]]
        shares = [p.get("client_cpu_share") for p in ph]
        phases[name] = {
            "wall_s": max(p["wall_s"] for p in ph),
            "clients": [c for p in ph for c in p["clients"]],
            "client_cpu_s": [c for p in ph for c in p["client_cpu_s"]],
            "client_cpu_share": max(shares) if None not in shares else None,
        }
    return phases
