"""Flat rows from stored results, and CSV / Parquet bytes from them (pure functions)."""

from __future__ import annotations

import csv
import io

COLUMNS = (
    "trial_id",
    "experiment",
    "status",
    "stack",
    "device",
    "filesystem",
    "runtime",
    "path",
    "workload",
    "load",
    "repetition",
    "numjobs",
    "iodepth",
    "containers",
    "rw",
    "bs",
    "direct",
    "iops",
    "bw_bytes",
    "ops_per_s",
    "mb_per_s",
    "read_iops",
    "write_iops",
    "read_bw_bytes",
    "write_bw_bytes",
    "read_clat_mean_ns",
    "read_clat_p99_ns",
    "read_lat_mean_ns",
    "read_lat_p99_ns",
    "read_slat_mean_ns",
    "write_clat_mean_ns",
    "write_clat_p99_ns",
    "write_lat_mean_ns",
    "write_lat_p99_ns",
    "write_slat_mean_ns",
    "cache_suspect",
    "sync_suspect",
    "failed_category",
    "failed_message",
    "duration_s",
    "started_at",
    "kernel",
    "hostname",
)


def flatten(r: dict) -> dict:
    t, m, f, lab = r.get("trial", {}), r.get("metrics", {}), r.get("flags", {}), r.get("labels", {})
    wl, load = t.get("workload", {}), t.get("load", {})
    row = {
        "trial_id": r.get("trial_id"),
        "experiment": r.get("experiment"),
        "status": r.get("status"),
        "stack": r.get("stack"),
        **{k: lab.get(k) for k in ("device", "filesystem", "runtime", "path", "workload", "load", "repetition")},
        "numjobs": load.get("numjobs"),
        "iodepth": load.get("iodepth"),
        "containers": load.get("containers"),
        "rw": wl.get("rw"),
        "bs": wl.get("bs"),
        "direct": wl.get("direct"),
        "cache_suspect": bool((f.get("cache") or {}).get("suspect")) and not (f.get("cache") or {}).get("expected"),
        "sync_suspect": bool((f.get("sync") or {}).get("suspect")),
        "failed_category": (f.get("failed") or {}).get("category"),
        "failed_message": (f.get("failed") or {}).get("message"),
        "duration_s": r.get("duration_s"),
        "started_at": r.get("started_at"),
        "kernel": r.get("host", {}).get("kernel"),
        "hostname": r.get("host", {}).get("hostname"),
    }
    p = m.get("primary", {})
    row.update(iops=p.get("iops"), bw_bytes=p.get("bw_bytes"), ops_per_s=p.get("ops_per_s"), mb_per_s=p.get("mb_per_s"))
    for d in ("read", "write"):
        x = m.get(d) or {}
        row[f"{d}_iops"], row[f"{d}_bw_bytes"] = x.get("iops"), x.get("bw_bytes")
        for lat in ("clat", "lat", "slat"):
            s = x.get(f"{lat}_ns") or {}
            row[f"{d}_{lat}_mean_ns"] = s.get("mean")
            if lat != "slat":
                row[f"{d}_{lat}_p99_ns"] = s.get("p99")
    return {c: row.get(c) for c in COLUMNS}


def to_csv(results: list[dict]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in results:
        w.writerow(flatten(r))
    return buf.getvalue().encode()


def to_parquet(results: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [flatten(r) for r in results]
    table = pa.Table.from_pylist(rows, schema=_schema(pa)) if rows else pa.Table.from_pylist([], schema=_schema(pa))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _schema(pa):
    ints = {"repetition", "numjobs", "iodepth", "containers", "bs", "direct"}
    bools = {"cache_suspect", "sync_suspect"}
    floats = {c for c in COLUMNS if c.endswith(("_ns", "_bytes", "iops", "_s", "ops_per_s", "mb_per_s"))} | {"iops"}
    fields = []
    for c in COLUMNS:
        typ = pa.int64() if c in ints else pa.bool_() if c in bools else pa.float64() if c in floats else pa.string()
        fields.append(pa.field(c, typ))
    return pa.schema(fields)
