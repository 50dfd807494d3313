"""The `ycsb` workload's spec: a database (Cassandra) driven by YCSB, and its cluster shape.

`ycsb: {db: cassandra, workload: a, records: 10000, runtime: 60, threads: 16, warmup: 30,
target: 2000, clusters: 1, cluster: {nodes: 3, replication_factor: 2, consistency: QUORUM}}`.
Every number is bounded; a list of `target`s (or of any other key) is a sweep (experiment/load.py).
`workload` is a YCSB standard workload letter (a-f) or `file:PATH`, a properties file run as it is.
`profile` (mixed, read, write) sets the operation mix of study 001 over the workload's.
`target: 40%` offers that share of the peak the same cluster reaches flat out, measured in the trial just
before its run (study 001 offers fixed rates up to the peak of its own clusters; a user's cluster has
another peak, so the share is what carries over).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from strata.core.params import Strict
from strata.workloads.server import fields, settings
from strata.workloads.ycsb import conf

CONSISTENCY = ("ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "LOCAL_ONE", "EACH_QUORUM")
LETTERS = "abcdef"
# study 001's load profiles: mixed is 3 reads to 1 write
PROFILES = {
    "mixed": {"readproportion": "0.75", "updateproportion": "0.25"},
    "read": {"readproportion": "1", "updateproportion": "0"},
    "write": {"readproportion": "0", "updateproportion": "1"},
}
MAX_NODES = 16
PEAK_MAX_S = 30  # the flat-out run that measures the peak of a relative target: min(runtime, this)
RECORD_BYTES = 1100  # YCSB's default row: 10 fields of 100 bytes, and the key


class ClusterParams(Strict):
    """One database: a Cassandra cluster of `nodes` on one host (addresses 127.0.{c+1}.{i+1}), or
    spanning hosts of the experiment (`hosts`: node i on hosts[i], at that host's node address)."""

    nodes: int = Field(default=1, ge=1, le=MAX_NODES, description="Cassandra nodes of each cluster")
    replication_factor: int = Field(default=1, ge=1, le=MAX_NODES, description="copies of each row (SimpleStrategy)")
    consistency: Literal["ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "LOCAL_ONE", "EACH_QUORUM"] = (
        Field(default="QUORUM", description="read and write consistency level of the client")
    )
    hosts: list[str] = Field(
        default_factory=list,
        max_length=MAX_NODES,
        description="node i of every cluster on hosts[i] (hosts of the experiment, one node each): a cluster "
        "that spans hosts; empty: every node on the host its placement gives",
    )

    @model_validator(mode="after")
    def _rf(self) -> Self:
        if self.replication_factor > self.nodes:
            raise ValueError(
                f"replication_factor {self.replication_factor} is above the node count {self.nodes}: "
                f"set replication_factor to at most {self.nodes}, or nodes to at least {self.replication_factor}"
            )
        if self.hosts and len(self.hosts) != self.nodes:
            raise ValueError(
                f"cluster.hosts names {len(self.hosts)} hosts for {self.nodes} nodes: give one host per node "
                f"(node i runs on hosts[i]), or set nodes to {len(self.hosts)}"
            )
        if len(set(self.hosts)) != len(self.hosts):
            raise ValueError(
                "cluster.hosts names a host twice: a cluster's nodes share their ports, so each needs a host of its own"
            )
        return self


class Span(Strict):
    """(set by strata) One host's part of clusters that span hosts: the host, every host's node address."""

    host: str
    addresses: dict[str, str]


PROPERTY = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,99}")
# The -p properties strata sets itself (`properties` refuses them; workloads/ycsb/client.py), with the key
_TO = "each client reaches its own database"
_MEASURED = "strata merges the clients' HdrHistograms and reads their status lines"
MANAGED_PROPERTIES = {
    "hosts": _TO,
    "port": _TO,
    "cassandra.keyspace": _TO,
    "cassandra.replicationfactor": "`cluster.replication_factor`",
    "cassandra.readconsistencylevel": "`cluster.consistency`",
    "cassandra.writeconsistencylevel": "`cluster.consistency`",
    "cassandra.createschema": "strata creates each database's table",
    "threadcount": "`threads`",
    "recordcount": "`records`",
    "operationcount": "`operations`",
    "maxexecutiontime": "`runtime`",
    "insertstart": "strata splits the load between its clients",
    "insertcount": "strata splits the load between its clients",
    "dataintegrity": "`data_integrity`",
    "target": "`target`",
    "status.interval": _MEASURED,
    "measurementtype": _MEASURED,
    "measurement.interval": _MEASURED,
    "hdrhistogram.fileoutput": _MEASURED,
    "hdrhistogram.output.path": _MEASURED,
    "hdrhistogram.percentiles": _MEASURED,
}


class YcsbParams(Strict):
    """A database on the path under test, driven by the YCSB client on the host."""

    type: Literal["ycsb"] = "ycsb"
    name: str = fields.name_field("ycsb-<workload>[-<profile>][-t<target>][-<clusters>x<nodes>]")
    db: Literal["cassandra"] = Field(default="cassandra", description="the database (Apache Cassandra 5.0)")
    workload: str = Field(default="a", description="a YCSB standard workload a-f, or file:PATH (a properties file)")
    profile: Literal["mixed", "read", "write"] | None = Field(
        default=None,
        description="study 001's operation mix over the workload's: mixed (3 reads : 1 write), read, write",
    )
    records: int = Field(default=10000, ge=1, le=1_000_000_000, description="rows inserted by the load phase")
    operations: int | None = Field(
        default=None, ge=1, le=2**31 - 1, description="operations of the measured run (or `runtime`)"
    )
    runtime: int | None = Field(
        default=None, ge=1, le=86400, description="seconds of the measured run (default 60 without `operations`)"
    )
    threads: int = Field(default=16, ge=1, le=1024, description="client threads per database")
    clients: int = Field(default=1, ge=1, le=16, description="YCSB client processes per database")
    warmup: int = Field(default=30, ge=0, le=86400, description="seconds of unmeasured operations before the run")
    target: int | None = fields.rate_field(
        "offered ops/s of each database (a list is a sweep); N%: that share of the peak the same cluster reaches flat "
        "out, measured just before the run; none: flat out",
        100_000_000,
    )
    target_share: float | None = Field(default=None, gt=0, le=1, description="(set from `target: N%`)")
    clusters: int = Field(default=1, ge=1, le=64, description="databases per container count, run at once")
    cluster: ClusterParams = Field(default_factory=ClusterParams, description="the shape of each database")
    data_integrity: bool = Field(default=False, description="YCSB's dataintegrity check on every read")
    start_timeout: int = Field(default=300, ge=10, le=3600, description="seconds a node may take to come up")
    properties: dict[str, str] = Field(default_factory=dict, description="more YCSB -p NAME=VALUE settings")
    settings: dict[str, str] = settings.settings_field(
        "cassandra.yaml settings of every node, {NAME: VALUE}, checked against Cassandra's own list: e.g. "
        "{commitlog_sync: batch} (periodic, strata's default: every 10000ms; batch; group with "
        "commitlog_sync_group_window)"
    )
    clients_on: str | None = Field(
        default=None,
        description="with cluster.hosts: the host whose agent runs the YCSB clients, one of the cluster's or "
        "a host of its own (default: node 0's host)",
    )
    span: Span | None = Field(default=None, description="(set by strata for a host's part; never in a spec)")
    file: str | None = Field(default=None, description="(set from `workload: file:PATH`)")

    _times = field_validator("runtime", "warmup", mode="before")(fields.seconds_or_none)
    _none = field_validator("target", mode="before")(fields.none_word)
    _settings = field_validator("settings", mode="before")(lambda v: settings.values(v, conf.NOTATION))

    @model_validator(mode="before")
    @classmethod
    def _share(cls, data: object) -> object:
        """`target: 40%` -> target_share 0.4 (and no absolute target)."""
        if isinstance(data, dict) and isinstance(data.get("target"), str) and data["target"].strip().endswith("%"):
            text = data["target"].strip()
            try:
                share = float(text[:-1]) / 100
            except ValueError:
                raise ValueError(f"target {text!r}: write a share of the peak as a number and %, e.g. 40%") from None
            if not 0 < share <= 1:
                raise ValueError(f"target {text}: a share of the peak is above 0% and at most 100%")
            data = {**data, "target": None, "target_share": share}
        return data

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Without a relative target, the stored workload is what it was before relative targets existed
        (a trial's id hashes it: stored results keep their ids)."""
        out = handler(self)
        if isinstance(out, dict) and out.get("target_share") is None:
            out.pop("target_share", None)
        if isinstance(out, dict) and not out.get("settings"):  # so too without a settings map
            out.pop("settings", None)
        return out

    @field_validator("workload")
    @classmethod
    def _letter(cls, v: str) -> str:
        if v.startswith("file:"):
            return v
        if len(v) != 1 or v.lower() not in LETTERS:
            raise ValueError(f"unknown YCSB workload {v!r}: use a letter a-f or file:PATH of a properties file")
        return v.lower()

    @field_validator("properties", mode="before")
    @classmethod
    def _props(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v  # pydantic names the type it wants
        if len(v) > 100:
            raise ValueError("at most 100 properties")
        # YAML's numbers and booleans as YCSB reads them: 0.5, true
        v = {
            k: str(x).lower() if isinstance(x, bool) else str(x) if isinstance(x, (int, float)) else x
            for k, x in v.items()
        }
        for name, value in v.items():
            if not isinstance(name, str):
                raise ValueError(f"property {str(name)[:60]!r}: a property's name is text")
            if not PROPERTY.fullmatch(name) or not isinstance(value, str) or len(value) > 1000 or "\n" in value:
                raise ValueError(
                    f"property {name[:60]!r}: a YCSB property is a name of letters, digits, '.', '_' and '-', with a "
                    "value of at most 1000 characters on one line"
                )
            if name in MANAGED_PROPERTIES:
                raise ValueError(f"property {name!r}: strata sets it itself ({MANAGED_PROPERTIES[name]})")
        return v

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.operations is not None and self.runtime is not None:
            raise ValueError("give `operations` or `runtime`, not both")
        if self.operations is None and self.runtime is None:
            object.__setattr__(self, "runtime", 60)
        if self.workload.startswith("file:") and not self.file:
            raise ValueError("`workload: file:PATH` names a properties file that was not found")
        for problem in conf.problems(self.settings):
            raise ValueError(problem)
        if self.clients_on is not None and not self.cluster.hosts:
            raise ValueError(
                "clients_on places the clients of a cluster that spans hosts: give cluster.hosts too "
                "(without it, each host runs its databases' clients)"
            )
        if not self.name:
            wl = self.workload if not self.file else "file-" + self.file.rsplit("/", 1)[-1]
            name = f"ycsb-{wl}" + (f"-{self.profile}" if self.profile else "")
            name += f"-t{self.target}" if self.target else ""
            name += f"-t{self.target_share * 100:g}pct" if self.target_share else ""
            c = self.cluster
            if self.clusters > 1 or c.nodes > 1:
                name += f"-{self.clusters}x{c.nodes}n-rf{c.replication_factor}"
            if c.hosts:
                name += f"-on-{'+'.join(c.hosts)}-clients-{self.clients_host}"
            name += settings.words(self.settings)
            object.__setattr__(self, "name", name)
        return self

    @property
    def durable(self) -> bool:
        """Each write waits on its commit log's sync (commitlog_sync batch or group; periodic does not)."""
        return conf.durable(self.settings)

    @property
    def peak_s(self) -> int:
        """Seconds of the flat-out run that measures the peak a relative target is a share of."""
        return min(self.runtime or PEAK_MAX_S, PEAK_MAX_S)

    @property
    def clients_host(self) -> str | None:
        """The host that runs the clients of clusters spanning hosts (None: each host runs its own)."""
        return self.clients_on or (self.cluster.hosts[0] if self.cluster.hosts else None)

    @property
    def span_hosts(self) -> list[str]:
        """Every host of clusters spanning hosts: the nodes' hosts, then the clients' if it has no node."""
        c = self.clients_host
        return self.cluster.hosts + ([c] if c and c not in self.cluster.hosts else [])

    @property
    def drives(self) -> bool:
        """Whether this part runs the clients: always, unless it is a node-only host of spanning clusters."""
        return self.span is None or self.span.host == self.clients_host

    @property
    def nodes(self) -> int:
        """Nodes of one container count: every cluster's."""
        return self.clusters * self.cluster.nodes
