"""The ycsb workload's measured phase: nodes up, load, warm-up, measured run, nodes stopped.

1. The runtime has created the node instances; `go` starts every cluster's seed at once. Each
   further node of a cluster waits for its start file (written when the node before it is
   ready), as Cassandra wants nodes to join one at a time. Ready = the node's log says it
   listens for CQL clients and its port answers (cassandra.wait_ready); with several nodes,
   RingCheck then sees every node Up and Normal from every node.
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
collects from the barrier until every part measured (`rendezvous(running, "measured")`), so that
its nodes serve the whole measured run and its collectors see their disk's share of it.

The clients run on the host, outside the stack under test; each one's CPU time is recorded
(clients.json). While anything waits, `Running.check` watches the nodes: a node that ends
(killed, crashed) fails the trial as `instance_died`, an OOM-killed one as `oom`, a node not up
in time as `not_ready`, each with the tail of the node's log.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput
from strata.core.params import Load
from strata.workloads.base import MeasureContext, rendezvous
from strata.workloads.ycsb import cassandra, client, jars
from strata.workloads.ycsb import parse as yp
from strata.workloads.ycsb.params import PROFILES, YcsbParams
from strata.workloads.ycsb.plugin import databases, span_addresses
from strata.workloads.ycsb.script import LOG_NAME, STOP_FILE, start_file

POLL_S = 0.5
GRACE_S = 3.0  # after a client failed, how long the nodes get to show that one of them died
STOP_TIMEOUT_S = 90
RING_TIMEOUT_S = 180
CLIENTS_DIR = "ycsb"


@dataclass
class Db:
    index: int
    instances: list[int | None]  # node i's instance here; None: another host runs it
    hosts: list[str]  # node i's address
    port: int = cassandra.CQL_PORT


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


def measure(params: YcsbParams, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
    running, art = ctx.running, ctx.art
    dbs = layout(params, load)
    sync = art / "sync"
    record: dict = {"databases": len(dbs), "nodes": params.cluster.nodes, "phases": {}}
    running.ready(ctx.prepare_timeout_s)
    running.go()
    record["node_ready_s"] = start_nodes(params, dbs, ctx)
    if not params.drives:
        return serve(ctx, record)
    lib = jars.ensure_ycsb() / "lib"
    if params.cluster.nodes > 1:
        for db in dbs:
            ring_check(db, lib, ctx)
    record["phases"]["load"] = run_phase("load", params, dbs, lib, ctx)
    if params.warmup:
        record["phases"]["warmup"] = run_phase("warmup", params, dbs, lib, ctx)
    rate = None
    if params.target_share:
        record["phases"]["peak"] = run_phase("peak", params, dbs, lib, ctx)
        record["offered"] = offered(params, len(dbs), [ctx.art / c for c in record["phases"]["peak"]["clients"]])
        rate = record["offered"]["target_ops_s"]
    rendezvous(running)  # across hosts: every host's measured run starts together
    with ctx.collect():
        record["phases"]["run"] = run_phase("run", params, dbs, lib, ctx, rate)
        record["page_cache_bytes"] = page_cache_bytes()
    write_record(art, record)
    rendezvous(running, "measured", lambda: check_nodes(ctx))  # across hosts: the other hosts' nodes may stop
    (sync / STOP_FILE).touch()
    outputs = running.wait(STOP_TIMEOUT_S, ctx.watch)
    if not outputs:  # a host that runs only the clients: they are its output
        wall = record["phases"]["run"]["wall_s"]
        return [InstanceOutput(0, art / CLIENTS_DIR, 0, "", None, None, {"role": "clients", "run_wall_s": wall})]
    return outputs


def serve(ctx: MeasureContext, record: dict) -> list[InstanceOutput]:
    """A host's part of clusters spanning hosts whose clients run elsewhere: its nodes serve, and its
    collectors run, from the barrier until every part measured."""
    rendezvous(ctx.running)
    t0 = time.monotonic()
    with ctx.collect():
        rendezvous(ctx.running, "measured", lambda: check_nodes(ctx))
        record["page_cache_bytes"] = page_cache_bytes()
    record["served_s"] = round(time.monotonic() - t0, 3)
    write_record(ctx.art, record)
    (ctx.art / "sync" / STOP_FILE).touch()
    return ctx.running.wait(STOP_TIMEOUT_S, ctx.watch)


def write_record(art: Path, record: dict) -> None:
    (art / CLIENTS_DIR).mkdir(exist_ok=True)
    (art / CLIENTS_DIR / "clients.json").write_text(json.dumps(record, indent=1))


def node_log(art: Path, instance: int) -> str:
    try:
        return (art / f"inst-{instance}" / LOG_NAME).read_text(errors="replace")
    except OSError:
        return ""


def start_nodes(params: YcsbParams, dbs: list[Db], ctx: MeasureContext) -> list[float]:
    """Seeds first (all at once), then node 1 of every cluster, and so on; seconds to ready of each node
    here (a node on another host is waited for until it answers, not timed: its host times it)."""
    ready: dict[int, float] = {}
    for i in range(params.cluster.nodes):
        if i > 0:
            for db in dbs:
                if db.instances[i] is not None:
                    (ctx.art / "sync" / start_file(db.instances[i])).touch()
        for db in dbs:
            k = db.instances[i]
            if k is None:
                wait_remote(ctx, db, i, params)
            else:
                ready[k] = wait_node(ctx, k, db.hosts[i], params.start_timeout, db.port)
    return [round(ready[k], 2) for k in sorted(ready)]


def wait_remote(ctx: MeasureContext, db: Db, i: int, params: YcsbParams) -> None:
    """Node i of `db`, on another host, answering at its address; this host's nodes watched meanwhile."""
    host, address = params.cluster.hosts[i], db.hosts[i]
    deadline = time.monotonic() + params.start_timeout
    while not cassandra.cql_port_open(address, db.port):
        check_nodes(ctx)
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
    def alive() -> bool:
        try:
            ctx.running.check(ctx.watch)
        except TrialFailure as e:
            tail = cassandra.log_tail(node_log(ctx.art, instance))
            raise TrialFailure(
                e.category, f"Cassandra node {instance} at {address} ended while starting: {e}", tail, e.layer
            )
        return True

    try:
        waited = cassandra.wait_ready(
            address,
            lambda: node_log(ctx.art, instance),
            alive,
            timeout_s=timeout_s,
            what=f"Cassandra node {instance}",
            port=port,
        )
    except TrialFailure as e:
        if e.category == "timeout":
            raise TrialFailure("not_ready", str(e), e.stderr)
        raise
    return since_launch(ctx.art / f"inst-{instance}", waited)


def since_launch(out_dir: Path, waited_s: float) -> float:
    """Seconds from the node's launch (its script's `node.launched` stamp) to now; else the wait itself."""
    try:
        return max(waited_s, time.time() - float((out_dir / "node.launched").read_text().strip()))
    except (OSError, ValueError):
        return waited_s


def ring_check(db: Db, lib: Path, ctx: MeasureContext) -> None:
    """Every node of the cluster Up and Normal from every node (RingCheck over CQL), retried briefly."""
    deadline = time.monotonic() + RING_TIMEOUT_S
    argv = client.ring_check_argv(db.hosts, lib, port=db.port)
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


def offered(params: YcsbParams, databases: int, peak_dirs: list[Path]) -> dict:
    """The rate a relative target offers each database: its share of the peak the clients reached flat out
    (their throughput over the seconds all of them ran, as the measured run's headline is taken)."""
    agg = yp.aggregate([_client_output(d) for d in peak_dirs])
    peak = agg["window_ops_s"] if agg["window_ops_s"] is not None else agg["throughput_ops_s"]
    if not peak:
        raise TrialFailure("parse", "the flat-out run that measures the peak reported no operations", "")
    share = params.target_share or 1.0
    return {
        "share": share,
        "peak_ops_s": round(peak, 3),
        "target_ops_s": max(1, round(share * peak / databases)),
    }


def _client_output(d: Path) -> yp.ClientOutput:
    def text(name: str) -> str:
        p = d / name
        return p.read_text(errors="replace") if p.exists() else ""

    return yp.ClientOutput(text("stdout.txt"), text("stderr.txt"), d / "hdr")


def client_runs(phase: str, params: YcsbParams, db: Db, out: Path, rate: int | None = None) -> list[client.ClientRun]:
    """The clients of one database in one phase (one for the load, `clients` for the runs): the run at
    `rate` ops/s of the database when given (a relative target's), else at the spec's target; the
    warm-up and the peak of a relative target flat out."""
    extra = {**PROFILES.get(params.profile or "", {}), **params.properties}
    wl = Path(params.file) if params.file else client.workload_file(params.workload)
    c = params.cluster
    common = dict(
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
    timed = dict(runtime_s=params.warmup) if phase == "warmup" else dict(runtime_s=params.runtime)
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


def run_phase(
    phase: str, params: YcsbParams, dbs: list[Db], lib: Path, ctx: MeasureContext, rate: int | None = None
) -> dict:
    """Every database's clients at once; their wall and CPU time. A node that dies fails the trial."""
    out = ctx.art / CLIENTS_DIR / phase
    runs = [r for db in dbs for r in client_runs(phase, params, db, out, rate)]
    for r in runs:
        r.out_dir.mkdir(parents=True, exist_ok=True)
    timeout = phase_timeout_s(phase, params)
    t0 = time.monotonic()
    procs = [client.start_client(r, lib) for r in runs]
    results: dict[int, client.ClientResult] = {}
    try:
        while len(results) < len(procs):
            check_nodes(ctx)
            for j, (p, r) in enumerate(zip(procs, runs)):
                if j not in results and client.exited(p):
                    try:
                        results[j] = client.wait_client(p, r, t0, timeout)
                    except TrialFailure:
                        settle(ctx)  # a node's death is the cause, not the client's failure
                        raise
            if time.monotonic() - t0 > timeout:
                raise TrialFailure("timeout", f"the YCSB clients ({phase}) ran beyond {timeout:.0f} s")
            time.sleep(POLL_S)
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                p.wait()
    wall = time.monotonic() - t0
    cpu = [results[j].cpu_s for j in range(len(runs))]
    return {
        "wall_s": round(wall, 3),
        "clients": [str(r.out_dir.relative_to(ctx.art)) for r in runs],
        "client_cpu_s": [round(c, 3) for c in cpu],
        "client_cpu_share": round(sum(cpu) / wall / _cores(), 4) if wall > 0 else None,
    }


def check_nodes(ctx: MeasureContext) -> None:
    try:
        ctx.running.check(ctx.watch)
    except TrialFailure as e:
        if e.category in ("instance_died", "oom"):
            logs = "\n".join(f"--- node {k}\n{cassandra.log_tail(node_log(ctx.art, k), 1500)}" for k in _instances(ctx))
            raise TrialFailure(e.category, str(e), (e.stderr + "\n" + logs)[-8000:], e.layer)
        raise


def settle(ctx: MeasureContext) -> None:
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        check_nodes(ctx)
        time.sleep(0.25)


def _instances(ctx: MeasureContext) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in ctx.art.glob("inst-*") if p.name.split("-")[1].isdigit())


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


def page_cache_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cores() -> int:
    import os

    return os.cpu_count() or 1
