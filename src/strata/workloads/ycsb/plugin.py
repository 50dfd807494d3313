"""The `ycsb` workload plugin: Cassandra nodes as the instances, the YCSB client on the host.

A server workload on the server template (workloads/server/): each instance is one Cassandra node,
run by the runtime under test like any instance (natively on the mount point; in a container with
its data on the layer, a volume or a bind mount; `--network host`), so limits, collectors, journal
and cleanup are the runtime's. The template's lifecycle starts the nodes, loads them, warms them up
and measures the YCSB clients, which run on the host outside the stack under test with their CPU
time recorded; Cassandra's own steps (nodes joining one by one, the ring check, the peak of a
relative target) are its hooks, in server.py. Instances are
laid out database by database: database d (of `containers x clusters`) is instances
d*nodes .. d*nodes+nodes-1, node i at 127.0.{d+1}.{i+1}.

Clusters that span hosts (`cluster.hosts`) place themselves (`span`): node i of every database runs
on hosts[i], so each host's part holds one node of each database (its instance d is database d's),
at the host's node address with the database's own ports (cassandra.span_ports); the clients run
on one host (`clients_on`: one of the nodes' hosts, or a host of its own, whose part then has no
instance and reports its clients as its one output), and the other hosts' parts serve until every
part measured.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from strata.core.errors import StrataError, TrialFailure
from strata.core.instances import Build, ImageSpec, Prebuilds, Target
from strata.core.jsondoc import JsonObject, JsonValue
from strata.core.metrics import Axis, Metric, MetricSchema, OfferedRate, OperationMix, Show
from strata.core.params import Load, sweep_ends
from strata.stack.journal import Undoing, Undos
from strata.workloads.base import MeasureContext, Parsed, SelfPlacing, Smoke, Workload, host_share
from strata.workloads.server import fields, records
from strata.workloads.server.clients import Client
from strata.workloads.server.script import sync_of
from strata.workloads.server.template import MemoryFloor, ServerTemplate
from strata.workloads.ycsb import cassandra, conf, jars, metrics, server
from strata.workloads.ycsb.client import client_failure
from strata.workloads.ycsb.image import LIB_IN_IMAGE, image_spec
from strata.workloads.ycsb.node import UNDO as NODE_UNDO
from strata.workloads.ycsb.params import RECORD_BYTES, Span, YcsbParams
from strata.workloads.ycsb.script import node_script, start_file
from strata.workloads.ycsb.server import databases, span_addresses

SMOKE_RUNTIME_S = 15  # a smoke run's seconds, the client's connection to the cluster among them (smoke)
NODE_OVERHEAD_BYTES = 256 << 20  # commit log segments, system keyspaces
VM_REASON = (
    "a Cassandra node in a VM is not supported: the VM has no network (QEMU's -nic none) while the YCSB "
    "clients reach the servers on 127.0.0.0/8, so the server workloads' template refuses every VM; and QEMU "
    "runs under TCG emulation on this kind of host (about 100x slower), which would measure the emulator"
)

# What a ycsb result holds (strata/core/metrics.py; metrics.py of this package writes it). Neither the offered
# rate nor the headline is an export column: the export's columns stay those it always had.
METRICS = MetricSchema(
    fields=(
        Metric(
            "target", "parameter", "ops/s", type="int", export=False, axis=Axis("offered rate (ops/s)", detail=True)
        ),
        Metric(
            "target_share",
            "parameter",
            "",
            export=False,
            axis=Axis("offered rate (share of the peak)", detail=True),
        ),
        Metric(
            "throughput_ops_s",
            "total",
            "ops/s",
            "higher",
            headline=True,
            export=False,
            key=("metrics", "throughput_ops_s"),
            show=Show("IOPS", digits=0),  # operations per second, under the column filebench's ops/s share
        ),
        Metric("iops", "per_direction", "ops/s", "higher"),
        Metric("lat", "latency", "ns", "lower", label="total", stats=("mean", "p99"), show=Show("lat {stat} us", 1000)),
    ),
    breakdown=("lat",),
    client_cpu=records.CLIENT_CPU,
    # its clients offer each database a rate (`target`, or `target_share` of the peak measured just before:
    # server.py stores both in `metrics.offered`), to `clusters` databases per container
    offered=OfferedRate(
        "target",
        "target_share",
        "clusters",
        peak=("metrics", "offered", "peak_ops_s"),
        offered=("metrics", "offered", "target_ops_s"),
    ),
    # a mean over all its operations weighs each type's mean (us) by its count (metrics.py `latency`)
    mix=OperationMix(("metrics", "latency"), count="n", mean="mean_us", ns=1000.0),
)


def node_config(
    params: YcsbParams, load: Load, instance: int, data_dir: str, conf_dir: str, lib_dir: str
) -> cassandra.NodeConfig:
    """The NodeConfig of instance `instance`: database instance // nodes, node instance % nodes; on a host's
    part of clusters spanning hosts, database `instance`, node the host's."""
    nodes = params.cluster.nodes
    d, i = divmod(instance, nodes)
    where: dict[str, Any] = {}
    if params.span is not None:
        d, i = instance, params.cluster.hosts.index(params.span.host)
        storage, cql = cassandra.span_ports(d)
        where = dict(addresses=span_addresses(params), storage_port=storage, cql_port=cql)
    cfgs = cassandra.cluster_configs(
        d,
        nodes,
        data_dir=lambda _: data_dir,
        conf_dir=lambda _: conf_dir,
        lib_dir=lib_dir,
        memory_limit_bytes=load.limits.memory,
        extra_yaml=conf.typed(params.settings),
        **where,
    )
    return cfgs[i]


class Ycsb(ServerTemplate[YcsbParams], Smoke, SelfPlacing[YcsbParams], Prebuilds, Undoing):
    name = "ycsb"
    params = YcsbParams
    undo: Undos = NODE_UNDO  # the Cassandra JVMs started by hand across hosts, and their directories
    metrics = METRICS
    client_what = "the YCSB client"
    server = cassandra.SERVER
    vm_reason = VM_REASON

    def smoke(self, raw: JsonObject) -> JsonObject:
        """experiment/scale.py: 200 records, 15 s runs after 1 s of warm-up, 2 client threads, the offered
        rates and cluster counts cut to their ends (the nodes per cluster and the replication stay). A run's
        seconds include the client's connection to the cluster (YCSB's threads open it once the clock runs):
        5 s runs of study 001's three-node clusters saw no operation on a busy machine (the full tier,
        2026-11-28), so a smoke run keeps 15."""
        out: JsonObject = {**raw, "warmup": 1, "threads": min(fields.whole(raw.get("threads"), 16), 2)}
        out["records"] = min(fields.whole(raw.get("records"), 10000), 200)
        if raw.get("operations") is not None:
            out["operations"] = min(fields.whole(raw["operations"], 1000), 1000)
        else:
            out["runtime"] = SMOKE_RUNTIME_S
        if "clusters" in raw:
            out["clusters"] = sweep_ends(raw["clusters"])
        target = raw.get("target")
        if isinstance(target, list):  # the rates' ends, and the unthrottled run (`none`) beside them if any
            rates: list[JsonValue] = [t for t in target if t is not None and str(t).lower() != "none"]
            out["target"] = sweep_ends(rates) + [t for t in target if t is None or str(t).lower() == "none"][:1]
        return out

    def parse_params(self, raw: JsonObject, base_dir: Path) -> YcsbParams:
        return YcsbParams.model_validate(
            fields.resolve_script(raw, base_dir, "workload", "YCSB workload properties file")
        )

    def not_installed(self) -> str | None:
        for tool, pkg in (("java", "openjdk-17-jre-headless"),):
            if not shutil.which(tool):
                return f"{tool} is not installed (apt-get install {pkg}): the YCSB client runs on the host"
        if not jars.cassandra_home().joinpath(jars.MANIFEST).exists() and not shutil.which("mvn"):
            return "the Cassandra jars are not cached and Maven is not installed (apt-get install maven)"
        return None

    def versions(self) -> dict[str, str | None]:
        return {"cassandra": jars.CASSANDRA_VERSION, "ycsb": jars.YCSB_VERSION}

    def memory_floor(self, params: YcsbParams) -> MemoryFloor:
        return MemoryFloor(cassandra.MIN_MEMORY_BYTES)

    def problems(self, params: YcsbParams, load: Load) -> list[tuple[str, str, str]]:
        out = super().problems(params, load)
        n, most = databases(params, load), cassandra.MAX_SPAN_DATABASES
        if params.cluster.hosts and n > most:
            out.append(
                (
                    "containers",
                    f"{n} databases span the hosts; each takes its own ports there, and {most} is the most",
                    f"run at most {most} databases (containers x clusters)",
                )
            )
        return out

    def instances(self, params: YcsbParams, load: Load) -> int:
        if params.span is not None:  # one node of each database on this host, none on a clients' host
            return databases(params, load) if params.span.host in params.cluster.hosts else 0
        return databases(params, load) * params.cluster.nodes

    def span(self, params: YcsbParams, load: Load) -> dict[str, int] | None:
        if not params.cluster.hosts:
            return None
        return {h: databases(params, load) if h in params.cluster.hosts else 0 for h in params.span_hosts}

    def part(
        self, params: YcsbParams, load: Load, host: str, instances: int, addresses: dict[str, str]
    ) -> tuple[YcsbParams, Load]:
        if not params.cluster.hosts:
            return host_share(params, load, instances)
        missing = [h for h in params.cluster.hosts if not addresses.get(h)]
        if missing:
            raise StrataError(
                f"no node address of host {missing[0]}: its Swarm or Kubernetes node reports none",
                "check `docker node inspect` on the manager (Status.Addr), or the Kubernetes node's InternalIP "
                "(kubectl get node NODE -o wide)",
            )
        span = Span(host=host, addresses={h: addresses[h] for h in params.cluster.hosts})
        return params.model_copy(update={"span": span}), load

    def network(self, params: YcsbParams) -> str:
        """A host's part of clusters that span hosts: nodes other hosts reach at this host's node address."""
        return "node" if params.span is not None else super().network(params)

    def part_host(self, params: YcsbParams) -> str | None:
        return params.span.host if params.span is not None else None

    def estimate_s(self, params: YcsbParams) -> float:
        start = 30 * params.cluster.nodes
        load_s = params.records / 2000
        run = params.runtime or (params.operations or 0) / 2000
        peak = params.peak_s if params.target_share else 0
        return start + load_s + params.warmup + peak + run + 20

    def data_bytes(self, params: YcsbParams, load: Load) -> int:
        """One container's databases: their rows (with the replicas) and their nodes' overhead; when the
        clusters span hosts, what one host holds of them (one node of each)."""
        c = params.cluster
        rows = params.records * RECORD_BYTES * c.replication_factor
        if c.hosts:
            return params.clusters * (-(-rows // c.nodes) + NODE_OVERHEAD_BYTES)
        return params.clusters * (rows + c.nodes * NODE_OVERHEAD_BYTES)

    def image(self, params: YcsbParams) -> ImageSpec:
        return image_spec()

    def builds(self, params: YcsbParams) -> list[Build]:
        """Cassandra's jars and the YCSB binding, assembled with Maven once per machine (jars.py)."""
        return jars.builds()

    def agent_image(self) -> ImageSpec:
        """Java and the jars on every host: the clients run on the host, and so do native nodes."""
        return ImageSpec("ycsb-host", packages=("openjdk-17-jre-headless",), trees=jars.agent_trees())

    def command(self, params: YcsbParams, load: Load, target: Target, instance: int) -> list[str]:
        home = jars.ensure_cassandra()
        lib = str(home / "lib") if target.host_tools else LIB_IN_IMAGE
        cfg = node_config(params, load, instance, f"{target.path}/node-{instance}", f"{target.out_dir}/conf", lib)
        turn = start_file(instance) if cfg.index > 0 else None
        script = node_script(cfg, jars.jar_names(home), target.out_dir, sync_of(target), turn)
        return ["sh", "-c", script, "strata-node"]

    # ---- the server template's hooks: Cassandra's steps (server.py) ----

    def start_servers(self, params: YcsbParams, load: Load, ctx: MeasureContext) -> list[float]:
        return server.start_nodes(self, params, server.layout(params, load), ctx)

    def ready(self, params: YcsbParams, load: Load, ctx: MeasureContext, instance: int) -> bool:
        raise NotImplementedError("a node's readiness is waited for by start_servers (server.wait_node)")

    def record(self, params: YcsbParams, load: Load) -> JsonObject:
        return server.record(params, load)

    def drives(self, params: YcsbParams) -> bool:
        return params.drives

    def after_start(self, params: YcsbParams, load: Load, ctx: MeasureContext) -> None:
        server.after_start(params, load, ctx)

    def phases(self, params: YcsbParams) -> tuple[str, ...]:
        return server.phases(params)

    def observe(self, point: str, params: YcsbParams, load: Load, ctx: MeasureContext, record: JsonObject) -> None:
        server.observe(point, params, load, ctx, record)

    def after_phase(self, phase: str, params: YcsbParams, load: Load, ctx: MeasureContext, record: JsonObject) -> None:
        server.after_phase(phase, params, load, ctx, record)

    def clients(self, phase: str, params: YcsbParams, load: Load, out: Path, record: JsonObject) -> list[Client]:
        return server.clients(phase, params, load, out, record)

    def phase_timeout_s(self, phase: str, params: YcsbParams) -> float:
        return server.phase_timeout_s(phase, params)

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        return client_failure(phase, returncode, stderr)

    def parse_trial(self, params: YcsbParams, arts: list[Path]) -> Parsed:
        return metrics.parse_trial(params, arts)


YCSB = Ycsb()
PLUGIN: Workload[YcsbParams] = YCSB  # the registry's entry (workloads/__init__.py), checked against the core
