"""An Apache Cassandra 5.0 node as strata runs it: its files, its JVM command, its readiness.

strata writes every file a node reads itself (no `conf/` directory from a tarball): the
assembled jars (jars.py) are all the node needs besides Java 17. The same argv runs a node
natively or in a container (`--network host`); only the paths as the node sees them differ.

- Addresses: node i of cluster c listens on 127.0.{c+1}.{i+1} (storage 7000, CQL 9042). All of
  127.0.0.0/8 is on the loopback interface, so N nodes need no port juggling, and no other
  address is ever used (the network rule). `STRATA_LOOPBACK=X` moves the plan to 127.X.0.0/16, so
  that two experiments with Cassandra run on one host at once without sharing an address. A
  cluster that spans hosts (`cluster.hosts`) has one node on each host's node address instead,
  so database d takes its own ports there
  (`span_ports`): storage 7000+2d, CQL 9042+d (7001 stays free for Cassandra's SSL port, and
  every node of a cluster shares its ports, as the client's one `port` setting needs).
- Heap: from the memory limit with cassandra-env.sh's formula, max(min(1/2 ram, 1 GiB),
  min(1/4 ram, 8 GiB)), so a container gets what Cassandra's own scripts would give it;
  without a limit, 1 GiB (not the formula on the host's memory: on a 24 GiB machine that is
  6 GiB per node, too much for several nodes on a small machine).
- JVM options: the essentials of Cassandra's `conf/jvm-server.options` and the whole Java 17
  module list of `conf/jvm17-server.options` (without it Cassandra 5.0 fails on Java 17).
- Fast starts: `-Dcassandra.ring_delay_ms` and `-Dcassandra.skip_wait_for_gossip_to_settle=0`
  (fine for a fresh test cluster, never for a production one). With so short a ring delay a
  joining node can still see the node before it as bootstrapping in the seed's gossip and exit
  ("Other bootstrapping/leaving/moving nodes detected", a known race of quick successive joins);
  `-Dcassandra.consistent.rangemovement=false` lifts that check, which guards only the streaming
  of existing data: a strata cluster is empty until every node has joined. That leaves the tokens:
  a node allocating against a ring where the node before it is not yet Normal picks its tokens, so
  server.start_nodes waits for the ring of the nodes before (RingCheck) until it starts the next.
- Ready means: the log says "Starting listening for CQL clients" AND the CQL port accepts a
  connection. A node that exits or is not ready in time fails with the tail of its log.
- JMX stays off (nodetool would need one JMX port per node); cluster health is checked over CQL
  by the binding's RingCheck (client.ring_check_argv).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from strata.core.errors import StrataError, TrialFailure
from strata.core.jsondoc import JsonObject
from strata.workloads.server.facts import Server
from strata.workloads.server.loopback import loopback_octet
from strata.workloads.ycsb.conf import RULES, settle

GiB = 1 << 30
MiB = 1 << 20
STORAGE_PORT = 7000
CQL_PORT = 9042
MAX_SPAN_DATABASES = 64  # storage ports 7000..7126 stay below JMX's 7199
DEFAULT_HEAP_BYTES = 1 * GiB
MIN_MEMORY_BYTES = 1 * GiB  # a node under a smaller memory limit is a spec error
READY_LINE = "Starting listening for CQL clients on"
SERVER = Server("Cassandra node", settings=RULES, noun="node")  # what the template reads of it (facts.py)
START_TIMEOUT_S = 180.0
LOG_TAIL_CHARS = 4000
MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"
DAEMON_CLASS = MAIN_CLASS  # used to recognise our JVMs in /proc/PID/cmdline

# conf/jvm17-server.options of Cassandra 5.0: G1 and the module exports/opens.
JVM17_OPTIONS = [
    "-XX:+UseG1GC",
    "-XX:+ParallelRefProcEnabled",
    "-XX:MaxTenuringThreshold=1",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1RSetUpdatingPauseTimePercent=5",
    "-XX:MaxGCPauseMillis=300",
    "-XX:InitiatingHeapOccupancyPercent=70",
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports",
    "java.sql/java.sql=ALL-UNNAMED",
    "--add-exports",
    "java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports",
    "jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports",
    "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports",
    "jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens",
    "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens",
    "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
]
# conf/jvm-server.options essentials. Not taken: -XX:-UseBiasedLocking (obsolete on 17),
# -XX:+HeapDumpOnOutOfMemoryError (a heap-sized file on the storage under test); instead a
# heap OOM ends the JVM, so the trial fails visibly.
JVM_SERVER_OPTIONS = [
    "-ea",
    "-da:net.openhft...",
    "-XX:+UseThreadPriorities",
    "-Xss256k",
    "-XX:+AlwaysPreTouch",
    "-XX:+UseTLAB",
    "-XX:+ResizeTLAB",
    "-XX:+UseNUMA",
    "-XX:+PerfDisableSharedMem",
    "-Djava.net.preferIPv4Stack=true",
    "-XX:+ExitOnOutOfMemoryError",
]


def node_address(cluster_index: int, node_index: int) -> str:
    """127.X.{c+1}.{i+1} (X: loopback_octet()): up to 254 clusters of up to 254 nodes on the loopback range."""
    if not (0 <= cluster_index < 254 and 0 <= node_index < 254):
        raise ValueError(f"cluster {cluster_index} node {node_index}: out of the 127.X.c.i plan")
    return f"127.{loopback_octet()}.{cluster_index + 1}.{node_index + 1}"


def span_ports(database: int) -> tuple[int, int]:
    """(storage, CQL) port of database `database` when its nodes share their hosts' addresses."""
    if not 0 <= database < MAX_SPAN_DATABASES:
        raise ValueError(f"database {database}: a cluster spanning hosts allows {MAX_SPAN_DATABASES} databases")
    return STORAGE_PORT + 2 * database, CQL_PORT + database


def heap_bytes(memory_limit_bytes: int | None) -> int:
    """cassandra-env.sh's max(min(1/2 ram, 1 GiB), min(1/4 ram, 8 GiB)), in whole MiB."""
    if memory_limit_bytes is None:
        return DEFAULT_HEAP_BYTES
    if memory_limit_bytes < MIN_MEMORY_BYTES:
        raise StrataError(
            f"a Cassandra node needs a memory limit of at least {MIN_MEMORY_BYTES // MiB} MiB, "
            f"not {memory_limit_bytes // MiB} MiB",
            "raise the memory limit (limits: memory) or run fewer nodes",
        )
    heap = max(min(memory_limit_bytes // 2, 1 * GiB), min(memory_limit_bytes // 4, 8 * GiB))
    return heap // MiB * MiB


@dataclass(frozen=True)
class NodeConfig:
    """Node `index` of a cluster of `nodes`; every path is as the node sees it."""

    index: int
    nodes: int
    address: str
    seeds: tuple[str, ...]
    cluster_name: str
    data_dir: str
    conf_dir: str
    lib_dir: str
    memory_limit_bytes: int | None = None
    storage_port: int = STORAGE_PORT  # every node of a cluster has the same ports (the seeds', the client's)
    cql_port: int = CQL_PORT
    num_tokens: int = 16
    ring_delay_ms: int = 1000
    extra_yaml: JsonObject = field(default_factory=dict)  # more cassandra.yaml keys: the spec's `settings` (conf.py)

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.nodes:
            raise ValueError(f"node index {self.index} outside a cluster of {self.nodes}")
        if not self.seeds:
            raise ValueError("a node needs at least one seed address")


def cluster_configs(
    cluster_index: int,
    nodes: int,
    *,
    data_dir: Callable[[int], str],
    conf_dir: Callable[[int], str],
    lib_dir: str,
    memory_limit_bytes: int | None = None,
    addresses: list[str] | None = None,
    **kw: Any,
) -> list[NodeConfig]:
    """The nodes of one cluster (on the loopback plan unless `addresses` are given); the first node is
    the seed (one seed is plenty below ~10 nodes)."""
    addresses = addresses or [node_address(cluster_index, i) for i in range(nodes)]
    if len(addresses) != nodes:
        raise ValueError(f"{len(addresses)} addresses for a cluster of {nodes} nodes")
    return [
        NodeConfig(
            index=i,
            nodes=nodes,
            address=addresses[i],
            seeds=(addresses[0],),
            cluster_name=f"strata-c{cluster_index}",
            data_dir=data_dir(i),
            conf_dir=conf_dir(i),
            lib_dir=lib_dir,
            memory_limit_bytes=memory_limit_bytes,
            **kw,
        )
        for i in range(nodes)
    ]


# ---- the files a node reads ----------------------------------------------------


def cassandra_yaml(cfg: NodeConfig) -> JsonObject:
    """cassandra.yaml as a dict: Cassandra's defaults except where said (2 cores, 24 GiB here)."""
    d = cfg.data_dir
    conf: JsonObject = {
        "cluster_name": cfg.cluster_name,
        "num_tokens": cfg.num_tokens,
        "allocate_tokens_for_local_replication_factor": 3,  # as Cassandra's shipped cassandra.yaml
        "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
        "authenticator": "AllowAllAuthenticator",
        "authorizer": "AllowAllAuthorizer",
        "data_file_directories": [f"{d}/data"],
        "commitlog_directory": f"{d}/commitlog",
        "saved_caches_directory": f"{d}/saved_caches",
        "hints_directory": f"{d}/hints",
        "cdc_raw_directory": f"{d}/cdc_raw",
        "commitlog_sync": "periodic",
        "commitlog_sync_period": "10000ms",
        "seed_provider": [
            {
                "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
                "parameters": [{"seeds": ",".join(f"{s}:{cfg.storage_port}" for s in cfg.seeds)}],
            }
        ],
        "listen_address": cfg.address,
        "rpc_address": cfg.address,
        "storage_port": cfg.storage_port,
        "native_transport_port": cfg.cql_port,
        "start_native_transport": True,
        "endpoint_snitch": "SimpleSnitch",
        # cassandra.yaml's own sizing rules for 2 cores and one disk: 8 x cores, 16 x disks
        "concurrent_reads": 16,
        "concurrent_writes": 16,
        "concurrent_counter_writes": 16,
        "concurrent_compactors": 1,
        "memtable_flush_writers": 1,
        "auto_snapshot": False,  # a DROP or TRUNCATE between trials need not copy the data set
    }
    conf.update(cfg.extra_yaml)
    return settle(conf)


LOGBACK_XML = """<configuration scan="false" debug="false">
  <!-- strata: the node logs to stdout only; strata keeps it (a file natively, docker logs in a
       container), so no log file is written to the storage under test. -->
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <logger name="com.thinkaurelius.thrift" level="ERROR"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def node_files(cfg: NodeConfig) -> dict[str, str]:
    """{file name: text} to stage in the node's conf dir."""
    import yaml

    text = "# written by strata for node %d of %d of %s\n" % (cfg.index, cfg.nodes, cfg.cluster_name)
    return {"cassandra.yaml": text + yaml.safe_dump(cassandra_yaml(cfg), sort_keys=False), "logback.xml": LOGBACK_XML}


def node_argv(cfg: NodeConfig, jar_names: list[str], java: str = "java") -> list[str]:
    """The node's JVM command line; `jar_names` are the file names in the lib dir (for jamm)."""
    heap_mib = heap_bytes(cfg.memory_limit_bytes) // MiB
    jamm = sorted(j for j in jar_names if j.startswith("jamm-") and j.endswith(".jar"))
    if not jamm:
        raise StrataError(
            f"no jamm jar among the Cassandra jars in {cfg.lib_dir}",
            "remove the Cassandra jar cache so that strata assembles it again",
        )
    return [
        java,
        f"-Xms{heap_mib}m",
        f"-Xmx{heap_mib}m",
        *JVM_SERVER_OPTIONS,
        *JVM17_OPTIONS,
        f"-javaagent:{cfg.lib_dir}/{jamm[-1]}",
        f"-Dcassandra.config=file://{cfg.conf_dir}/cassandra.yaml",
        f"-Dlogback.configurationFile=file://{cfg.conf_dir}/logback.xml",
        f"-Dcassandra.storagedir={cfg.data_dir}",
        f"-Dcassandra.logdir={cfg.data_dir}/logs",
        f"-Dcassandra.ring_delay_ms={cfg.ring_delay_ms}",
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        "-Dcassandra.consistent.rangemovement=false",
        "-Dcassandra-foreground=yes",
        "-cp",
        f"{cfg.conf_dir}:{cfg.lib_dir}/*",
        MAIN_CLASS,
    ]


# ---- readiness -------------------------------------------------------------------


def cql_port_open(address: str, port: int = CQL_PORT, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def log_tail(text: str, chars: int = LOG_TAIL_CHARS) -> str:
    return text[-chars:]


def wait_ready(
    address: str,
    read_log: Callable[[], str],
    alive: Callable[[], bool],
    *,
    timeout_s: float = START_TIMEOUT_S,
    what: str = "Cassandra node",
    port: int = CQL_PORT,
) -> float:
    """Seconds until the node said it listens for CQL clients and its port accepts a connection.

    Fails with the tail of the node's log: `tool_error` if it exited, `timeout` if not ready."""
    t0 = time.monotonic()
    line = f"{READY_LINE} /{address}:{port}"
    while True:
        if line in read_log() and cql_port_open(address, port):
            return time.monotonic() - t0
        if not alive():
            tail = log_tail(read_log())
            raise TrialFailure("tool_error", f"{what} at {address} exited while starting; its log ends:\n{tail}", tail)
        if time.monotonic() - t0 > timeout_s:
            tail = log_tail(read_log())
            raise TrialFailure(
                "timeout", f"{what} at {address} was not ready within {timeout_s:.0f} s; its log ends:\n{tail}", tail
            )
        time.sleep(0.25)
