"""The metrics of one ycsb trial, from the clients' own output (parse.py, workloads/hdr.py).

- `primary`: the aggregate ops/s of the measured run over the seconds in which every client ran
  (the sum of their per-second series), with that series (`ycsb_ops`) for the steady check.
- `databases`: each database's ops/s (its clients together): the per-instance throughput.
- `latency`: per operation type, mean, p50, p90, p95, p99, p99.9 (us) from the HdrHistogram logs of
  every client merged, never averaged percentiles; `read`/`write` carry the same in the shape
  every workload's results have (`iops`, `lat_ns`), so the analysis's latency findings apply.
- `clients`: each phase's client wall and CPU time (the client runs outside the stack under test).
- `offered` (a relative target, `target: 40%`): the share, the peak the clients reached flat out just
  before the run, and the rate offered to each database (server.py).
- `cache`: the page cache at the end of the run against the data set (Cassandra does buffered I/O).

Across hosts (hosts/merge.py) the instances' outputs come from one artifact directory per host:
every host's clients are parsed together (throughput summed, histograms merged, databases listed
host after host); merge.py keeps each host's own metrics beside them. A host that only serves nodes
of clusters spanning hosts ran no client: its part reports its nodes (`role: nodes`, no headline),
and the merged result counts its nodes' ready times and page cache with the clients'; a host that
runs only the clients reports their directory as its one output (server.py), and its page cache is
not the data's.
"""

from __future__ import annotations

from pathlib import Path

from strata.core.errors import TrialFailure
from strata.core.jsondoc import JsonObject, JsonValue, obj, whole
from strata.workloads import hdr
from strata.workloads.base import Parsed, headline
from strata.workloads.latency import figure
from strata.workloads.server import records as server_records
from strata.workloads.ycsb import conf, counters
from strata.workloads.ycsb import parse as yp
from strata.workloads.ycsb.params import RECORD_BYTES, YcsbParams
from strata.workloads.ycsb.server import CLIENTS_DIR

SERIES = "ycsb_ops"
READS = ("READ", "SCAN")
WRITES = ("UPDATE", "INSERT", "READ-MODIFY-WRITE", "DELETE")


def parse_trial(params: YcsbParams, art: Path | list[Path]) -> Parsed:
    arts = art if isinstance(art, list) else [art]
    every = [server_records.read(a, CLIENTS_DIR, "ycsb") for a in arts]
    drove = [i for i, r in enumerate(every) if "run" in obj(r, "phases")]
    if not drove:
        return serving(params, every[0])
    arts, records = [arts[i] for i in drove], [every[i] for i in drove]
    record = records[0] if len(records) == 1 else merged_record(records, arts)
    if len(every) > len(records):  # nodes on hosts without clients: their ready times and page cache count too
        cached = [r.get("page_cache_bytes") for r in every if r.get("node_ready_s")]  # hosts with nodes
        record = {
            **record,
            "node_ready_s": list(server_records.ready_s(every)),
            "page_cache_bytes": _total(cached),
        }
    dirs = server_records.client_dirs(arts, records)
    outs = [yp.client_output(d) for d in dirs]
    agg = yp.aggregate(outs)
    if not agg["series_ops_s"] and not agg["throughput_ops_s"]:
        raise TrialFailure("parse", "the YCSB clients reported no operations", outs[0].stderr[-4000:] if outs else "")
    value = agg["window_ops_s"] if agg["window_ops_s"] is not None else agg["throughput_ops_s"]
    hists = yp.merged_histograms([d / "hdr" for d in dirs])
    intended = any(op.startswith(yp.INTENDED) for op in hists)
    per_db = [v for a, r in zip(arts, records) for v in _per_database(*_clients_of(a, r, dirs, outs))]
    unexpected = sum(codes.get("UNEXPECTED_STATE", 0) for codes in agg["returns"].values())
    if params.data_integrity and unexpected:
        raise TrialFailure("tool_error", f"YCSB's data-integrity check failed on {unexpected} reads", "")
    metrics: JsonObject = {
        "kind": "ycsb",
        "primary": headline(value, "ops/s", "throughput_ops_s", SERIES, series_unit="ops/s"),
        "throughput_ops_s": value,
        "overall_ops_s": agg["throughput_ops_s"],
        "databases": list(per_db),
        "instances": [{"throughput_ops_s": v} for v in per_db],
        "operations": dict(agg["operations"]),
        "returns": {op: dict(codes) for op, codes in agg["returns"].items()},
        "errors": agg["errors"],
        "latency": dict(agg["latency"]),
        "start_skew_s": agg["start_skew_s"],
        "read": _direction(agg, hists, READS, intended),
        "write": _direction(agg, hists, WRITES, intended),
        # under a target each operation is timed from its intended start (YCSB's measurement.interval=both),
        # so a throttled client's queueing is in its latency (coordinated omission); flat out from its send
        "latency_timed_from": "intended" if intended else "sent",
        "clients": dict(obj(record, "phases")),
        "node_ready_s": record.get("node_ready_s"),
        "cache": _cache(params, record),
    }
    if record.get("offered"):
        metrics["offered"] = record["offered"]
    seen = counters.summary(record)
    if seen is not None:
        metrics["cassandra"] = seen
    metrics["durability"] = conf.durability(counters.settings_of(seen), params.settings).to_json()
    writes = sum(agg["operations"].get(op, 0) for op in WRITES)
    dbs, nodes = _databases(record), whole(record, "servers") or 0
    series = [[i, v] for i, v in enumerate(agg["series_ops_s"])]
    return Parsed(
        metrics,
        {"read": 0, "write": 0},
        {SERIES: series} if series else {},
        _windows(outs),
        dirs,
        syncs=counters.syncs(params, writes, nodes),
        memory=counters.memory_judged(params, record, seen, dbs, writes),
    )


def serving(params: YcsbParams, record: JsonObject) -> Parsed:
    """A part that only served nodes (clusters spanning hosts, clients elsewhere): no headline of its own."""
    metrics: JsonObject = {
        "kind": "ycsb",
        "role": "nodes",
        "primary": headline(None, "ops/s", "throughput_ops_s", SERIES, series_unit="ops/s"),
        "node_ready_s": record.get("node_ready_s"),
        "served_s": record.get("served_s"),
        "cache": _cache(params, record),
    }
    return Parsed(metrics, {"read": 0, "write": 0})


def merged_record(records: list[JsonObject], arts: list[Path]) -> JsonObject:
    """The clients.json of several hosts' parts as one: databases and ready times summed or listed,
    each phase's clients and CPU listed host after host (named by their host's directory), its wall
    time the longest (each host's own stays in its part's metrics: `metrics.hosts` of the merged result)."""
    cached = [r.get("page_cache_bytes") for r in records]
    return {
        **_offered([obj(r, "offered") for r in records if r.get("offered")]),
        "databases": sum(_databases(r) for r in records),
        "nodes": records[0].get("nodes"),
        "phases": server_records.phases(records, [a.name for a in arts]),
        "node_ready_s": list(server_records.ready_s(records)),
        "page_cache_bytes": _total(cached),
    }


def _databases(record: JsonObject) -> int:
    """The databases a host's part ran (1 in a record that does not say)."""
    n = whole(record, "databases", 1)
    return 1 if n is None else n


def _total(sizes: list[JsonValue]) -> int | None:
    """Every host's byte count added up; None when one is unknown."""
    known = [s for s in sizes if isinstance(s, int)]
    return sum(known) if len(known) == len(sizes) else None


def _offered(parts: list[JsonObject]) -> JsonObject:
    """Each host's relative target as one: the peaks summed (every host measured its own databases),
    the rate offered to a database as their mean."""
    if not parts:
        return {}
    rates = [figure(p, "target_ops_s") for p in parts]
    merged: JsonObject = {"share": parts[0]["share"], "peak_ops_s": sum(figure(p, "peak_ops_s") for p in parts)}
    return {"offered": {**merged, "target_ops_s": round(sum(rates) / len(rates))}}


def _clients_of(
    art: Path, record: JsonObject, dirs: list[Path], outs: list[yp.ClientOutput]
) -> tuple[list[Path], list[yp.ClientOutput]]:
    """The client directories and outputs of one host's part (all of them on one host)."""
    mine = set(server_records.client_dirs([art], [record]))
    pairs = [(d, o) for d, o in zip(dirs, outs) if d in mine]
    return [d for d, _ in pairs], [o for _, o in pairs]


def _per_database(dirs: list[Path], outs: list[yp.ClientOutput]) -> list[float | None]:
    by_db: dict[str, list[yp.ClientOutput]] = {}
    for d, o in zip(dirs, outs):
        by_db.setdefault(d.name.split("-")[0], []).append(o)
    res: list[float | None] = []
    for key in sorted(by_db, key=lambda k: int(k[2:]) if k[2:].isdigit() else 0):
        a = yp.aggregate(by_db[key])
        res.append(a["window_ops_s"] if a["window_ops_s"] is not None else a["throughput_ops_s"])
    return res


def _direction(agg: yp.Aggregate, hists: dict[str, hdr.Histogram], ops: tuple[str, ...], intended: bool) -> JsonObject:
    """ops/s and merged latency (ns) of the reads or the writes, in the shape fio's results have: timed from each
    operation's intended start when the clients timed it so (`lat_ns`, with the time from its send beside it,
    `lat_ns_sent`), else from its send."""
    n = sum(agg["operations"].get(op, 0) for op in ops)
    total_ops = sum(n for op, n in agg["operations"].items() if op != "VERIFY") or 1
    iops = (agg["throughput_ops_s"] or 0) * n / total_ops
    sent = _ns(yp.latency(hdr.merge([h for op, h in hists.items() if op in ops])))
    if not intended:
        return {"iops": iops, "ops": n, "lat_ns": sent}
    timed = [h for op, h in hists.items() if op.startswith(yp.INTENDED) and op.removeprefix(yp.INTENDED) in ops]
    from_intended = _ns(yp.latency(hdr.merge(timed)))
    return {"iops": iops, "ops": n, "lat_ns": from_intended, "lat_ns_sent": sent}


def _ns(lat: JsonObject) -> JsonObject:
    """YCSB's microseconds (latency()) as ns, with the count."""
    ns: JsonObject = {
        k.removesuffix("_us"): (figure(lat, k) * 1000 if v is not None else None) for k, v in lat.items() if k != "n"
    }
    return {"n": lat["n"], **ns}


def _windows(outs: list[yp.ClientOutput]) -> list[tuple[float, float] | None]:
    wins = []
    for o in outs:
        pts = yp.measured_points(yp.parse_status(o.stderr))
        wins.append((pts[0].time_s - 1.0, pts[-1].time_s) if pts else None)
    return wins


def _cache(params: YcsbParams, record: JsonObject) -> JsonObject:
    data = params.records * RECORD_BYTES * params.cluster.replication_factor * _databases(record)
    cached = whole(record, "page_cache_bytes")
    return {
        "data_set_bytes": data,
        "page_cache_bytes": cached,
        "page_cache_over_data_set": round(cached / data, 3) if cached and data else None,
        "note": "Cassandra does buffered I/O: the page cache is part of what is measured",
    }
