"""What Cassandra's own counters say of a measured run (server.observe reads them), and what follows from them.

- `summary`: per node of this host, from its counters before and after the run (Counters.java): the memtable
  flushes and compactions during the run, the compactions pending after it, the table's SSTables on disk (whole
  MiB), its local reads and writes, the key and row caches' hits, the SSTables each of a few traced reads looked
  into after the run (0: its memtables alone), and the durability settings in force; beside them, the flush of
  every memtable before the run (`flushed`).
- `memory`: the data set beside the memory that can cache it, for the cache check (`Parsed.memory`). The data
  set is the table's SSTables on this host's nodes after that flush, by Cassandra's own count (the rows' size by
  strata's estimate where a node did not say, or said less than 1 MiB); the memory is what the nodes may use
  (their heaps, where the memtables and the key cache live, and the page cache: the host's, or their memory
  limits). A data set that fits is read from memory once warm. A run whose writes each wait on a commit-log
  sync (commitlog_sync batch or group) is write-bound: it stays compared, and the flush check judges it.
- `syncs`: those writes' syncs, at least: each waits on a sync that starts after it, and a database's client
  threads have at most one operation each in flight, so a node syncs at least once for every `threads` writes
  it acknowledged to a waiting client, and each write is acknowledged by as many replicas as its consistency
  level waits for. Cassandra 5.0 counts its syncs only over JMX, which strata leaves off: this bound is what
  the flush check judges (a lower bound never makes a stack that keeps its syncs look short of flushes).
"""

from __future__ import annotations

import math

from strata.core.jsondoc import JsonObject, JsonValue
from strata.workloads.base import Syncs
from strata.workloads.server import memory
from strata.workloads.ycsb.params import RECORD_BYTES, YcsbParams

MiB = 1 << 20
LONG = 1 << 63  # Counters.java writes Java longs
POOLS = {"flushes": "MemtableFlushWriter", "compactions": "CompactionExecutor"}
WAITED = {"ONE": 1, "LOCAL_ONE": 1, "TWO": 2, "THREE": 3}  # replicas a write waits for; quorums and ALL below


def summary(record: JsonObject) -> JsonObject | None:
    """The nodes' counters of the measured run, or None when the record holds none (older results)."""
    observed = record.get("observed")
    if not isinstance(observed, dict):
        return None
    before, after = _list(observed.get("before")), _list(observed.get("after"))
    nodes: list[JsonValue] = []
    for i, a in enumerate(after):
        b = before[i] if i < len(before) else {}
        nodes.append(_node(b, a))
    return {"flushed": record.get("flushed"), "nodes": nodes}


def _list(v: object) -> list[JsonObject]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _node(b: JsonObject, a: JsonObject) -> JsonObject:
    if "error" in a:
        return {"address": a.get("address"), "error": a["error"]}
    out: JsonObject = {"address": a.get("address")}
    for key, pool in POOLS.items():
        out[f"{key}_in_run"] = _delta(_pool(b, pool, "completed"), _pool(a, pool, "completed"))
    out["compactions_pending_after"] = _pool(a, POOLS["compactions"], "pending")
    out["sstable_mib"] = _int(a.get("sstable_mib"))
    out["local_reads_in_run"] = _delta(_int(b.get("local_reads")), _int(a.get("local_reads")))
    out["local_writes_in_run"] = _delta(_int(b.get("local_writes")), _int(a.get("local_writes")))
    caches, before = _obj(a, "caches"), _obj(b, "caches")
    for name in ("keys", "rows"):
        now, then = _obj(caches, name), _obj(before, name)
        hits, asks = (
            _delta(_int(then.get("hits")), _int(now.get("hits"))),
            _delta(_int(then.get("requests")), _int(now.get("requests"))),
        )
        out[f"{name[:-1]}_cache"] = {
            "hits_in_run": hits,
            "requests_in_run": asks,
            "hit_ratio_in_run": round(hits / asks, 4) if hits is not None and asks else None,
            "size_bytes": _int(now.get("size_bytes")),
        }
    probe = _obj(a, "probe")
    read = probe.get("sstables_read")
    out["sstables_read_after"] = [x for x in read if isinstance(x, int)] if isinstance(read, list) else None
    out["settings"] = dict(_obj(a, "settings"))
    return out


def settings_of(summary: JsonObject | None) -> JsonObject:
    """The settings in force of the first node that said them ({}: none did, or an older result)."""
    nodes = (summary or {}).get("nodes")
    said = [_obj(n, "settings") for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []
    return next((s for s in said if s), {})


def _obj(d: JsonObject, key: str) -> JsonObject:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _int(v: object) -> int | None:
    """A counter as Counters wrote it (a Java long); anything else is unknown, never a number beyond a float's range
    that a ratio or a size would then overflow on."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -LONG <= v < LONG else None


def _pool(d: JsonObject, pool: str, key: str) -> int | None:
    return _int(_obj(d, pool).get(key))


def _delta(before: int | None, after: int | None) -> int | None:
    return after - before if before is not None and after is not None else None


def sstable_bytes(counters: JsonObject | None) -> int | None:
    """The table's SSTables on every node of this host after the run, or None when a node did not say."""
    nodes = _list((counters or {}).get("nodes"))
    sizes = [_int(n.get("sstable_mib")) for n in nodes]
    if not nodes or any(s is None for s in sizes):
        return None
    return sum(s or 0 for s in sizes) * MiB


def rows_bytes(params: YcsbParams, databases: int) -> int:
    """strata's estimate of the rows on this host: every database's records with their replicas."""
    return params.records * RECORD_BYTES * params.cluster.replication_factor * databases


def memory_judged(
    params: YcsbParams, record: JsonObject, counters: JsonObject | None, databases: int, writes: int
) -> JsonObject | None:
    """What the cache rule judges (`Parsed.memory`): this host's data set beside the memory its nodes can use."""
    mem = _obj(record, "memory")
    on_disk, rows = sstable_bytes(counters), rows_bytes(params, databases)
    counted = on_disk is not None and on_disk >= MiB
    data = on_disk if counted and on_disk is not None else rows
    out = memory.data_set(data, _int(mem.get("bytes")), str(mem.get("of") or ""))
    if out is None:
        return None
    out["data_set_of"] = (
        "the table's SSTables on the nodes after a flush (Cassandra's disk_usage)"
        if counted
        else "the rows (records x 1,100 bytes x replicas: Cassandra counted less than 1 MiB on disk, or did not say)"
    )
    mem_bytes = out["memory_bytes"]
    if isinstance(mem_bytes, int) and data:
        need = int(2 * mem_bytes / (data / params.records)) + 1
        out["fix"] = (
            f"for the device, a data set beyond that memory: records of {need:,} or more (now {params.records:,}; "
            "twice the memory), or in a container a memory limit (limits.memory) below half the data set"
        )
    if writes and params.durable:
        out["write_bound"] = True
        out["write_bound_words"] = (
            f"each write waits on its commit log's sync: commitlog_sync {params.settings.get('commitlog_sync')}"
        )
    return out


def syncs(params: YcsbParams, writes: int, nodes: int) -> Syncs | None:
    """The commit-log syncs the run's writes waited on, at least (see the module's words); None: its writes did
    not wait on one (commitlog_sync periodic, consistency ANY), or its nodes are not all on this host."""
    if not params.durable or not writes or params.cluster.hosts or params.cluster.consistency == "ANY":
        return None
    c = params.cluster
    quorum = c.replication_factor if c.consistency == "ALL" else c.replication_factor // 2 + 1
    waited = WAITED.get(c.consistency, quorum)
    threads = params.clients * max(1, params.threads // params.clients)
    return Syncs(
        math.ceil(writes * min(waited, c.replication_factor) / threads),
        max(1, nodes),
        f"commit-log syncs (at least: each of the {writes:,} writes waited on one, {threads} client threads a "
        f"database, commitlog_sync {params.settings.get('commitlog_sync')})",
    )
