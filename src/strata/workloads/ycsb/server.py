"""Cassandra's part of the server template's lifecycle (workloads/server/lifecycle.py): its nodes
start one by one, its ring is checked, it warms up and measures a peak before its measured run.

1. The runtime has created the node instances; `go` starts every cluster's seed at once. Each
   further node of a cluster waits for its start file (written when the node before it is
   ready), as Cassandra wants nodes to join one at a time. Ready = the node's log says it
   listens for CQL clients and its port answers; with several nodes, RingCheck then sees every
   node Up and Normal from every node (`after_start`).
2. Load: one YCSB client per database inserts the records (not measured).
3. Warm-up: `warmup` seconds of the run's operations (not measured).
   With a relative target (`target: 40%`), the warm-up runs flat out and then the peak: the run's
   operations flat out for min(runtime, 30) s; the measured run offers that share of its throughput
   (`offered` in clients.json: the share, the peak and the rate offered to each database).
4. The measured run, inside the collectors' window: `clients` processes per database.
5. `<sync>/stop`: the nodes shut down, and the runtime's outputs are returned.

Clusters that span hosts: each host's part starts its own node of every database; node i of a
database starts once node i-1 answers at its address, on whichever host it runs (the nodes join
one by one across hosts, the network between them is the only channel). The host that runs the
clients (`clients_on`) checks the ring and runs the phases as above; every other host's part
serves until every part measured (the template's `serve`), so that its nodes serve the whole
measured run and its collectors see their disk's share of it.

The clients run on the host, outside the stack under test; each one's CPU time is recorded
(clients.json). A node that ends (killed, crashed) fails the trial as `instance_died`, an
OOM-killed one as `oom`, a node not up in time as `not_ready`, each with the tail of the node's log.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata.core.errors import TrialFailure
from strata.core.jsondoc import JsonObject, JsonValue, as_obj, obj, whole
from strata.core.params import Load
from strata.workloads.base import MeasureContext
from strata.workloads.latency import figure
from strata.workloads.server import lifecycle
from strata.workloads.server.clients import Client
from strata.workloads.server.records import client_dirs
from strata.workloads.server.template import ServerTemplate
from strata.workloads.ycsb import cassandra, client, jars
from strata.workloads.ycsb import parse as yp
from strata.workloads.ycsb.params import PROFILES, YcsbParams
from strata.workloads.ycsb.script import LOG_NAME, start_file

CLIENTS_DIR = "ycsb"  # the clients' outputs and clients.json, under a trial's artifacts
POLL_S = 0.5
RING_TIMEOUT_S = 180
COUNTERS_TIMEOUT_S = 90
FLUSH_TIMEOUT_S = 180  # Counters.java gives the flush 120 s
KEYSPACE = "ycsb"  # ClientRun's


@dataclass
class Db:
    index: int
    instances: list[int | None]  # node i's instance here; None: another host runs it
    hosts: list[str]  # node i's address
    port: int = cassandra.CQL_PORT


def databases(params: YcsbParams, load: Load) -> int:
    return load.containers * params.clusters


def span_addresses(params: YcsbParams) -> list[str]:
    """Node i's address: the node address of hosts[i] (every database's, on its own ports)."""
    addresses = params.span.addresses if params.span else {}
    return [addresses[h] for h in params.cluster.hosts]


def layout(params: YcsbParams, load: Load) -> list[Db]:
    n = params.cluster.nodes
    if params.span is not None:
        hosts, addresses = params.cluster.hosts, span_addresses(params)
        here = hosts.index(params.span.host) if params.span.host in hosts else None  # None: the clients' host
        return [
            Db(d, [d if i == here else None for i in range(n)], addresses, cassandra.span_ports(d)[1])
            for d in range(databases(params, load))
        ]
    return [
        Db(d, list(range(d * n, d * n + n)), [cassandra.node_address(d, i) for i in range(n)])
        for d in range(databases(params, load))
    ]


def start_nodes(wl: ServerTemplate[YcsbParams], params: YcsbParams, dbs: list[Db], ctx: MeasureContext) -> list[float]:
    """Seeds first (all at once), then node 1 of every cluster, and so on; seconds to ready of each node
    here (a node on another host is waited for until it answers, not timed: its host times it).

    Node i > 1 starts only once nodes 0..i-1 are Up and Normal from each other (the ring check on them):
    a node that listens for CQL may still be bootstrapping in the seed's gossip, and the next node,
    allocating its tokens against a ring without it, picks the same ones and exits ("Bootstrap Token
    collision", seen on this VM under load). Checked where this host runs every node before i; across
    hosts the next node waits only for the previous one to answer (a limit, docs/ycsb-mechanics.md)."""
    ready: dict[int, float] = {}
    for i in range(params.cluster.nodes):
        if i > 1:
            for db in dbs:
                if all(k is not None for k in db.instances[:i]):
                    ring_check(db, jars.ensure_ycsb() / "lib", ctx, db.hosts[:i])
        if i > 0:
            for db in dbs:
                k = db.instances[i]
                if k is not None:
                    lifecycle.signal(ctx, start_file(k))
        for db in dbs:
            k = db.instances[i]
            if k is None:
                wait_remote(wl, ctx, db, i, params)
            else:
                ready[k] = wait_node(ctx, k, db.hosts[i], params.start_timeout, db.port)
    return [round(ready[k], 2) for k in sorted(ready)]


def wait_remote(wl: ServerTemplate[YcsbParams], ctx: MeasureContext, db: Db, i: int, params: YcsbParams) -> None:
    """Node i of `db`, on another host, answering at its address; this host's nodes watched meanwhile."""
    host, address = params.cluster.hosts[i], db.hosts[i]
    deadline = time.monotonic() + params.start_timeout
    while not cassandra.cql_port_open(address, db.port):
        lifecycle.check_servers(wl, ctx)
        if time.monotonic() > deadline:
            raise TrialFailure(
                "not_ready",
                f"node {i} of database {db.index} (host {host}, {address}:{db.port}) did not answer within "
                f"{params.start_timeout} s: see host {host}'s part for its log",
            )
        time.sleep(POLL_S)


def wait_node(
    ctx: MeasureContext, instance: int, address: str, timeout_s: float, port: int = cassandra.CQL_PORT
) -> float:
    """Seconds from the node's launch until its log says it listens for CQL clients and its port answers."""
    line = f"{cassandra.READY_LINE} /{address}:{port}"

    def answers() -> bool:
        return line in lifecycle.server_log(ctx, instance, LOG_NAME) and cassandra.cql_port_open(address, port)

    return lifecycle.wait_ready(ctx, instance, answers, f"Cassandra node {instance} at {address}", timeout_s, LOG_NAME)


def ring_check(db: Db, lib: Path, ctx: MeasureContext, hosts: list[str] | None = None) -> None:
    """Every node of the cluster (or of `hosts`, its first nodes) Up and Normal from every one of them
    (RingCheck over CQL), retried briefly."""
    deadline = time.monotonic() + RING_TIMEOUT_S
    argv = client.ring_check_argv(db.hosts if hosts is None else hosts, lib, port=db.port)
    while True:
        ctx.running.check(ctx.watch)
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=RING_TIMEOUT_S)
        if cp.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TrialFailure(
                "not_ready", f"cluster {db.index}: not every node is Up and Normal", (cp.stdout + cp.stderr)[-4000:]
            )
        time.sleep(2)


def offered(params: YcsbParams, databases: int, peak_dirs: list[Path]) -> JsonObject:
    """The rate a relative target offers each database: its share of the peak the clients reached flat out
    (their throughput over the seconds all of them ran, as the measured run's headline is taken)."""
    agg = yp.aggregate([yp.client_output(d) for d in peak_dirs])
    peak = agg["window_ops_s"] if agg["window_ops_s"] is not None else agg["throughput_ops_s"]
    if not peak:
        raise TrialFailure("parse", "the flat-out run that measures the peak reported no operations", "")
    share = params.target_share or 1.0
    return {
        "share": share,
        "peak_ops_s": round(peak, 3),
        "target_ops_s": max(1, round(share * peak / databases)),
    }


def client_runs(phase: str, params: YcsbParams, db: Db, out: Path, rate: int | None = None) -> list[client.ClientRun]:
    """The clients of one database in one phase (one for the load, `clients` for the runs): the run at
    `rate` ops/s of the database when given (a relative target's), else at the spec's target; the
    warm-up and the peak of a relative target flat out."""
    extra = {**PROFILES.get(params.profile or "", {}), **params.properties}
    wl = Path(params.file) if params.file else client.workload_file(params.workload)
    c = params.cluster
    common: dict[str, Any] = dict(
        workload=wl,
        hosts=tuple(db.hosts),
        port=db.port,
        records=params.records,
        replication_factor=c.replication_factor,
        read_consistency=c.consistency,
        write_consistency=c.consistency,
        data_integrity=params.data_integrity,
        extra=extra,
    )
    if phase == "load":
        return [client.ClientRun("load", out_dir=out / f"db{db.index}-c0", threads=params.threads, **common)]
    n = params.clients
    threads = max(1, params.threads // n)
    rate = rate if rate is not None else params.target
    target = max(1, rate // n) if rate and phase != "peak" else None
    timed: dict[str, Any] = dict(runtime_s=params.warmup) if phase == "warmup" else dict(runtime_s=params.runtime)
    if phase == "peak":
        timed = dict(runtime_s=params.peak_s)
    if phase == "run" and params.operations:
        timed = dict(operations=max(1, params.operations // n))
    return [
        client.ClientRun(
            "run",
            out_dir=out / f"db{db.index}-c{j}",
            threads=threads,
            target_ops_s=target,
            create_schema=False,
            **timed,
            **common,
        )
        for j in range(n)
    ]


def phase_timeout_s(phase: str, params: YcsbParams) -> float:
    if phase == "load":
        return 300 + params.records / 200
    if phase == "warmup":
        return params.warmup + 180
    if phase == "peak":
        return params.peak_s + 180
    if params.runtime:
        return params.runtime + 180
    return 300 + (params.operations or 0) / 100


# ---- the template's hooks (plugin.py's methods call these) ----------------------------------------


def record(params: YcsbParams, load: Load) -> JsonObject:
    """clients.json's start: its databases, their nodes, and the nodes on this host (`servers`: the memory they
    can use together is judged against the data, memory.usable)."""
    local = sum(k is not None for db in layout(params, load) for k in db.instances)
    return {"databases": databases(params, load), "nodes": params.cluster.nodes, "servers": local, "phases": {}}


def table(params: YcsbParams) -> str:
    return params.properties.get("table", "usertable")  # YCSB's `table` property, as the binding reads it


def observe(point: str, params: YcsbParams, load: Load, ctx: MeasureContext, rec: JsonObject) -> None:
    """The nodes' own counters `before` and `after` the measured run (Counters.java, over CQL), one entry per
    node of this host in instance order, into the record (`observed`). Before the run every database's memtables
    are flushed first (`flushed`), so that its reads find the data in SSTables, as a node that has run for a while
    does, and the counters say what the reads then touched. A counter that cannot be read is said
    ({"error": ...}), never a failed trial: the run's own numbers stand without it."""
    lib = jars.ensure_ycsb() / "lib"
    dbs = layout(params, load)
    if point == "before":
        rec["flushed"] = [_counters("flush", db.hosts, lib, params, db.port, ctx, FLUSH_TIMEOUT_S) for db in dbs]
    mode = "probe" if point == "after" else "read"
    seen: list[JsonValue] = []
    for db in dbs:
        local = [db.hosts[i] for i, k in enumerate(db.instances) if k is not None]
        if not local:
            continue
        doc = _counters(mode, local, lib, params, db.port, ctx, COUNTERS_TIMEOUT_S)
        nodes = doc.get("nodes")
        seen += nodes if isinstance(nodes, list) else [{"address": a, **doc} for a in local]
    as_obj(rec.setdefault("observed", {}), "observed")[point] = seen


def _counters(
    mode: str, hosts: list[str], lib: Path, params: YcsbParams, port: int, ctx: MeasureContext, timeout_s: float
) -> JsonObject:
    ctx.running.check(ctx.watch)
    argv = client.counters_argv(mode, hosts, lib, KEYSPACE, table(params), port)
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"Counters {mode} did not answer within {timeout_s:.0f} s"}
    try:
        doc = json.loads(cp.stdout)
    except ValueError:
        return {"error": f"Counters {mode} exited with {cp.returncode}: {(cp.stderr or cp.stdout)[-300:]}"}
    return doc if isinstance(doc, dict) else {"error": f"Counters {mode} printed no object"}


def phases(params: YcsbParams) -> tuple[str, ...]:
    """The load, the warm-up, and the peak a relative target is a share of."""
    return ("load",) + (("warmup",) if params.warmup else ()) + (("peak",) if params.target_share else ())


def after_start(params: YcsbParams, load: Load, ctx: MeasureContext) -> None:
    if params.cluster.nodes > 1:
        lib = jars.ensure_ycsb() / "lib"
        for db in layout(params, load):
            ring_check(db, lib, ctx)


def after_phase(phase: str, params: YcsbParams, load: Load, ctx: MeasureContext, rec: JsonObject) -> None:
    if phase == "peak":
        peak = client_dirs([ctx.art], [rec], "peak")
        rec["offered"] = offered(params, int(figure(rec, "databases")), peak)


def clients(phase: str, params: YcsbParams, load: Load, out: Path, rec: JsonObject) -> list[Client]:
    """Every database's clients of one phase; the run at the rate a relative target offers, when one does."""
    lib = jars.ensure_ycsb() / "lib"
    rate = whole(obj(rec, "offered"), "target_ops_s") if phase == "run" and rec.get("offered") else None
    runs = [r for db in layout(params, load) for r in client_runs(phase, params, db, out, rate)]
    return [client.as_client(r, lib) for r in runs]
