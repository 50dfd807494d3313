"""Hosts and placement: the machines an experiment runs on, and where each trial's instances go.

`hosts:` names the machines: Swarm nodes, by node name (or ID), or by a node
label that exactly one node carries. `placement:` is one more dimension of the
experiment's product: each entry says where a trial's instances run,

- a host name: every instance of the trial on that host (pinned, `on:`);
- `spread`: the load's instances over every host, as evenly as they divide;
- `{a: 4, b: 4}`: that many instances on each host (the load's `containers`
  is their sum, so that 8 on one host and 4 + 4 on two compare under one load);
- `each`: one pinned entry per host: the same experiment on every machine.

A trial that places instances on several hosts is one trial with a part per
host (hosts/ runs the parts behind one barrier and merges them). Nothing here
looks at the Swarm: the run resolves each host to its node when it deploys its
agents; the node selectors are part of each trial's identity, so results of
other machines never pass for these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from strata.core.jsondoc import JsonObject, JsonValue
from strata.core.params import Layer, Strict
from strata.stack.devices import served_at, served_by

HOST_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
RESERVED = ("spread", "each", "on", "name", "instances")  # placement words, never host names
MAX_HOSTS = 64
MAX_INSTANCES = 256  # as Load.containers
DEFAULT_PORT = 7450
DEFAULT_STATE_DIR = "/var/lib/strata"
DEFAULT_SOCKET = "/var/run/docker.sock"
KUBE_NODE = re.compile(r"[a-z0-9]([a-z0-9.,=/_-]{0,251}[a-z0-9])?", re.I)  # as the kubernetes runtime's `node:`


class HostSpec(Strict):
    """One machine of the experiment: a Swarm node, and where strata's agent keeps its things there; or a node of
    the kubernetes runtime's cluster."""

    node: str | None = Field(default=None, description="the Swarm node's hostname or ID")
    label: str | None = Field(default=None, description="KEY=VALUE: the one Swarm node carrying this node label")
    kubernetes: str | None = Field(
        default=None,
        description="a node of the kubernetes runtime's cluster: its name, or a label selector (k=v,k2=v2: the first "
        "node it names that takes the pods); every host of the experiment is then a Kubernetes node",
    )
    workdir: str | None = Field(
        default=None, description="loop images and mount points on this host (default: the experiment's workdir)"
    )
    state_dir: str = Field(default=DEFAULT_STATE_DIR, description="the agent's journal on this host")
    docker_socket: str = Field(
        default=DEFAULT_SOCKET, description="the node's docker socket, as a path on the node (the agent's launcher)"
    )
    docker: str | None = Field(
        default=None,
        description="how strata reaches the node's daemon to load the agent image into it (unix:///PATH, "
        "ssh://USER@HOST); without it the node must hold the agent image already (docker load by hand)",
    )
    port: int = Field(default=DEFAULT_PORT, ge=1024, le=65535, description="the agent's TCP port on the node's address")

    @model_validator(mode="after")
    def _one_selector(self) -> HostSpec:
        if sum(v is not None for v in (self.node, self.label, self.kubernetes)) != 1:
            raise ValueError(
                "name the host with exactly one of `node:` or `label:` (a Swarm node) or `kubernetes:` (a Kubernetes "
                "node)"
            )
        if self.kubernetes is not None and not KUBE_NODE.fullmatch(self.kubernetes):
            raise ValueError(
                f"kubernetes {self.kubernetes[:80]!r}: a node's name or a label selector k=v,k2=v2 of at most 253 "
                "characters"
            )
        if self.kubernetes is not None and self.docker is not None:
            raise ValueError("`docker:` reaches a Swarm node's daemon; a Kubernetes node is reached through its API")
        if self.label is not None and not re.fullmatch(r"[^=\s]+=[^=\s]*", self.label):
            raise ValueError(f"label {self.label!r} is not KEY=VALUE")
        for key in ("workdir", "state_dir", "docker_socket"):
            v = getattr(self, key)
            if v is not None and not v.startswith("/"):
                raise ValueError(f"{key} {v!r} is not an absolute path")
        if self.docker is not None and not re.match(r"^(unix|ssh|tcp)://.+", self.docker):
            raise ValueError(f"docker {self.docker!r} is not unix:///PATH, ssh://USER@HOST or tcp://HOST:PORT")
        return self

    def workdir_of(self, name: str, default: str) -> Path:
        """Where the host's agent builds its stacks: the host's workdir (default the experiment's) on a Swarm
        node; for a Kubernetes node, whose agent runs on this machine, a directory of its own in it."""
        base = Path(self.workdir or default)
        return base / f"kube-{name}" if self.kubernetes is not None else base

    @property
    def selector(self) -> str:
        """The node as a trial's identity records it."""
        if self.kubernetes is not None:
            return f"kubernetes:{self.kubernetes}"
        return f"node={self.node}" if self.node is not None else f"label:{self.label}"


class SwarmSpec(Strict):
    """How strata reaches the Swarm and judges its hosts."""

    manager: str = Field(
        default="unix:///var/run/docker.sock",
        description="the daemon of a Swarm manager node (unix:///PATH, ssh://USER@HOST): services are made there",
    )
    lost_after_s: float = Field(
        default=10.0, ge=1, le=600, description="a host whose agent stays silent this long is lost (host_lost)"
    )

    @field_validator("manager")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        if not re.match(r"^(unix|ssh|tcp)://.+", v):
            raise ValueError(f"manager {v!r} is not unix:///PATH, ssh://USER@HOST or tcp://HOST:PORT")
        return v


class Placement(Strict):
    """Where a trial's instances run: exactly one of `on`, `spread` or `instances`."""

    name: str = Field(default="", description="default: the host (on), spread, or a4+b4 (instances)")
    on: str | None = Field(default=None, description="every instance on this host")
    spread: bool = Field(default=False, description="the load's instances over every host, evenly")
    instances: dict[str, int] = Field(
        default_factory=dict, max_length=MAX_HOSTS, description="instances per host; their sum is the load's containers"
    )

    @field_validator("instances")
    @classmethod
    def _counts(cls, v: dict[str, int]) -> dict[str, int]:
        for host, n in v.items():
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_INSTANCES:
                raise ValueError(f"instances on {host}: a number from 1 to {MAX_INSTANCES}")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Placement:
        kinds = [self.on is not None, self.spread, bool(self.instances)]
        if sum(kinds) != 1:
            raise ValueError("a placement is a host name, `spread`, or {HOST: INSTANCES, ...}")
        if not self.name:
            name = self.on or ("spread" if self.spread else "+".join(f"{h}{n}" for h, n in self.instances.items()))
            object.__setattr__(self, "name", name)
        return self

    def hosts(self, all_hosts: list[str]) -> list[str]:
        return [self.on] if self.on else list(all_hosts) if self.spread else list(self.instances)

    def counts(self, containers: int, all_hosts: list[str]) -> dict[str, int] | str:
        """Instances per host for a load of `containers`, or why this load cannot be placed so."""
        if self.on:
            return {self.on: containers}
        if self.spread:
            n = len(all_hosts)
            if containers < n:
                return f"spread over {n} hosts needs at least {n} instances (the load has {containers})"
            return {h: containers // n + (1 if i < containers % n else 0) for i, h in enumerate(all_hosts)}
        total = sum(self.instances.values())
        if total != containers:
            return (
                f"placement {self.name} runs {total} instances; the load has containers: {containers} "
                f"(give a load with containers: {total})"
            )
        return dict(self.instances)


def check_names(hosts: dict[str, HostSpec], placements: list[Placement]) -> list[tuple[str, str, str]]:
    """(key path, problem, fix) of host names and of the hosts placements name (load.py reports them)."""
    problems = []
    for name in hosts:
        if name in RESERVED or not HOST_NAME.match(name):
            problems.append(
                (
                    f"hosts.{name}",
                    f"host name {name!r} is not allowed",
                    f"lower-case letters, digits, - and _, "
                    f"at most 32, starting with a letter, and none of {', '.join(RESERVED)}",
                )
            )
    if placements and not hosts:
        problems.append(("placement", "placement needs `hosts:`", "name the machines to place instances on"))
    for i, p in enumerate(placements):
        for h in p.hosts(list(hosts)):
            if hosts and h not in hosts:
                problems.append(
                    (
                        f"placement[{i}]",
                        f"placement {p.name} names host {h!r}, which `hosts:` does not define",
                        f"one of: {', '.join(hosts)}",
                    )
                )
    return problems


def check_kubernetes_hosts(hosts: dict[str, HostSpec], runtimes: Sequence[Layer]) -> list[tuple[str, str, str]]:
    """(key path, problem, fix) of hosts that are Kubernetes nodes: all of them or none, every runtime the
    kubernetes runtime on a cluster (`kubeconfig:`), and no two hosts naming one node."""
    kube = [h for h, s in hosts.items() if s.kubernetes is not None]
    if not kube:
        return []
    problems = []
    if len(kube) != len(hosts):
        swarm = [h for h in hosts if h not in kube]
        problems.append(
            (f"hosts.{swarm[0]}", "Swarm nodes and Kubernetes nodes in one experiment", "make every host one kind")
        )
    for i, r in enumerate(runtimes):
        if r.type != "kubernetes" or getattr(r, "kubeconfig", None) is None:
            problems.append(
                (
                    f"runtimes[{i}]",
                    f"runtime {r.name} does not run on the Kubernetes nodes `hosts:` names",
                    "with Kubernetes nodes as hosts, every runtime is `kubernetes` with the cluster's `kubeconfig:`",
                )
            )
        elif getattr(r, "node", None) is not None:
            problems.append(
                (
                    f"runtimes[{i}].node",
                    "with Kubernetes nodes as hosts, the hosts name the nodes and `placement:` puts the pods there",
                    "leave the runtime's `node:` out",
                )
            )
    seen: dict[str, str] = {}
    for h in kube:
        node = hosts[h].kubernetes
        assert node is not None, "kube holds the hosts with a Kubernetes node"
        if node in seen:
            problems.append((f"hosts.{h}", f"hosts {seen[node]} and {h} name one node, {node}", "name each node once"))
        seen.setdefault(node, h)
    return problems


def check_device_hosts(hosts: dict[str, HostSpec], devices: Sequence[Layer]) -> list[tuple[str, str, str]]:
    """(key path, problem, fix) of devices served from a host of the experiment (a remote device's `host`)."""
    problems = []
    for i, d in enumerate(devices):
        host = served_by(d)
        if served_at(d) is not None:
            problems.append(
                (f"devices[{i}].served_at", "`served_at` is set by strata, not in a spec", "remove it; give `host:`")
            )
        if host is None:
            continue
        if not hosts:
            problems.append(
                (
                    f"devices[{i}].host",
                    f"device {d.name} is served from host {host!r}, but the experiment has no `hosts:`",
                    "name the machines under `hosts:`, or drop `host` to serve it from a namespace on this host",
                )
            )
        elif host not in hosts:
            problems.append(
                (f"devices[{i}].host", f"host {host!r} is not defined under `hosts:`", f"one of: {', '.join(hosts)}")
            )
    return problems


@dataclass(frozen=True)
class Placed:
    """A trial's resolved placement: instances per host (in the spec's host order) and each host's node."""

    name: str
    instances: tuple[tuple[str, int], ...]
    nodes: tuple[tuple[str, str], ...]

    def resolved(self) -> JsonObject:
        return {
            "name": self.name,
            "instances": dict[str, JsonValue](self.instances),
            "nodes": dict[str, JsonValue](self.nodes),
        }

    @property
    def hosts(self) -> list[str]:
        return [h for h, _ in self.instances]

    @property
    def max_instances(self) -> int:
        return max(n for _, n in self.instances)

    def parts(self) -> list[tuple[str, int, int]]:
        """(host, instances, index of its first instance in the trial): instance i of the trial is the same
        instance in every stored artifact and every merged list."""
        out, first = [], 0
        for host, n in self.instances:
            out.append((host, n, first))
            first += n
        return out


def place(p: Placement, containers: int, hosts: dict[str, HostSpec]) -> Placed | str:
    """The trial's placement for a load, or why the load cannot be placed so."""
    counts = p.counts(containers, list(hosts))
    if isinstance(counts, str):
        return counts
    order = [h for h in hosts if h in counts]
    return Placed(p.name, tuple((h, counts[h]) for h in order), tuple((h, hosts[h].selector) for h in order))


def place_span(counts: dict[str, int], hosts: dict[str, HostSpec]) -> Placed:
    """The placement of a workload that places its instances itself (a cluster spanning hosts), in the
    order its hosts are given: that order numbers the instances, as the workload lays them out."""
    name = "span-" + "+".join(counts)
    return Placed(name, tuple(counts.items()), tuple((h, hosts[h].selector) for h in counts if h in hosts))


def check_workload_hosts(hosts: dict[str, HostSpec], workloads: Sequence[Layer]) -> list[tuple[str, str, str]]:
    """(key path, problem, fix) of workloads that place themselves on hosts (a cluster's `cluster.hosts`)."""
    from strata.core.params import Load
    from strata.workloads import REGISTRY as WORKLOADS
    from strata.workloads.base import part_host_of, span_of

    problems = []
    for w in workloads:
        plugin = WORKLOADS.get(w.type)
        if plugin is not None and part_host_of(plugin, w) is not None:
            problems.append((f"workloads[{w.name}].span", "`span` is set by strata, not in a spec", "remove it"))
        spans = span_of(plugin, w, Load()) if plugin is not None else None
        for h in spans or {}:
            if not hosts:
                problems.append(
                    (
                        f"workloads[{w.name}]",
                        f"workload {w.name} places its instances on host {h!r}, but the experiment has no `hosts:`",
                        "name the machines under `hosts:`",
                    )
                )
                break
            if h not in hosts:
                problems.append(
                    (
                        f"workloads[{w.name}]",  # cluster.hosts or clients_on
                        f"host {h!r} is not defined under `hosts:`",
                        f"one of: {', '.join(hosts)}",
                    )
                )
    return problems


def normalize_hosts(raw: object) -> object:
    """`{a: node-a}` -> `{a: {node: node-a}}`; anything else is left to the model's validation."""
    if not isinstance(raw, dict):
        return raw
    return {k: ({"node": v} if isinstance(v, str) else v) for k, v in raw.items()}


def normalize_placement(raw: object, host_names: list[str]) -> list[object]:
    """Shorthands: a host name, `spread`, `each`, `{a: 4, b: 4}`."""
    keys = set(Placement.model_fields)
    out: list[object] = []
    for x in raw if isinstance(raw, list) else [raw]:
        if x == "each":
            out += [{"on": h} for h in host_names]
        elif x == "spread":
            out.append({"spread": True})
        elif isinstance(x, str):
            out.append({"on": x})
        elif isinstance(x, dict) and x and not set(map(str, x)) & keys:
            out.append({"instances": x})
        else:
            out.append(x)
    return out
