"""`ServerTemplate`: the base of every server workload (ycsb's Cassandra, pgbench's PostgreSQL).

A server workload derives from it and supplies:

- `command` (the Workload member): the instance's start command, usually `script.server_script`
  around the server, its data directory on `target.path`;
- `ready(params, load, ctx, instance)`: the probe that says a started server answers;
- `clients(phase, params, load, out, record)`: the client processes of each phase (`phases()`, the
  load first, then the measured `run`), each writing into its own directory under `out`;
- `parse` (the Workload member) and `metrics`: its output parser and its metric declaration;
- the names its messages and files use: `clients_dir`, `client_what`, `server_what`, and
  `vm_reason` (why it does not run in a VM), `host_packages` (what a host's agent needs to run its
  clients and its native servers: its image across hosts).

The lifecycle (lifecycle.py), the instances' network (`host`: servers on 127.0.0.0/8), the target
(a directory), the refusal of VMs and the agent image are the template's; the hooks below have
defaults a workload overrides only where its application differs (Cassandra's clusters start node
by node, check their ring, warm up and measure a peak; PostgreSQL reads its WAL counters around
the run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strata.core.errors import TrialFailure
from strata.core.instances import ImageSpec, InstanceOutput
from strata.core.params import Load
from strata.workloads.base import Constrained, HostTools, MeasureContext, P, ServerWorkload, ToolWorkload
from strata.workloads.server import lifecycle
from strata.workloads.server.clients import Client, tail_text
from strata.workloads.server.script import LOG_NAME

DEFAULT_START_TIMEOUT_S = 300


class ServerTemplate(ToolWorkload[P], Constrained[P], ServerWorkload[P], HostTools):
    """A workload whose instances are servers and whose clients, on the host, measure them."""

    targets: tuple[str, ...] = ("dir",)  # a server's data directory
    clients_dir: str  # the clients' outputs and clients.json, under the trial's artifacts
    client_what: str  # "the YCSB client": a client in messages
    server_what: str  # "Cassandra node": a server in messages
    server_noun = "server"  # a server in the log tails of a failure ("--- server 0")
    log_name = LOG_NAME  # the server's log in its out dir
    vm_reason: str
    host_packages: tuple[str, ...] = ()

    # ---- what each server workload supplies ----------------------------------------

    def ready(self, params: P, load: Load, ctx: MeasureContext, instance: int) -> bool:
        """Does the server of `instance` answer? (Polled while it starts; its log is in `ctx.art`.)"""
        raise NotImplementedError

    def clients(self, phase: str, params: P, load: Load, out: Path, record: dict[str, Any]) -> list[Client]:
        """The client processes of `phase`, each writing into a directory under `out`."""
        raise NotImplementedError

    # ---- the lifecycle's hooks, with their defaults ------------------------------------

    def measure(self, params: P, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
        return lifecycle.measure(self, params, load, ctx)

    def phases(self, params: P) -> tuple[str, ...]:
        """The unmeasured phases before the measured `run`, in order."""
        return ("load",)

    def phase_timeout_s(self, phase: str, params: P) -> float:
        runtime = getattr(params, "runtime", None) or 60
        return 600.0 if phase == "load" else float(runtime) + 180

    def record(self, params: P, load: Load) -> dict[str, Any]:
        """clients.json as it starts: what the parser needs besides the phases."""
        return {"servers": self.instances(params, load), "phases": {}}

    def start_timeout_s(self, params: P) -> float:
        return float(getattr(params, "start_timeout", DEFAULT_START_TIMEOUT_S))

    def start_servers(self, params: P, load: Load, ctx: MeasureContext) -> list[float]:
        """Wait until each server answers, in order; seconds from its launch to ready, each."""
        timeout = self.start_timeout_s(params)
        ready = []
        for k in range(self.instances(params, load)):

            def probe(k: int = k) -> bool:
                return self.ready(params, load, ctx, k)

            waited = lifecycle.wait_ready(ctx, k, probe, f"{self.server_what} {k}", timeout, self.log_name)
            ready.append(round(waited, 2))
        return ready

    def after_start(self, params: P, load: Load, ctx: MeasureContext) -> None:
        """What must hold once every server answers, before any client runs."""

    def after_phase(self, phase: str, params: P, load: Load, ctx: MeasureContext, record: dict[str, Any]) -> None:
        """Read what an unmeasured phase measured, for the phases after it."""

    def observe(self, point: str, params: P, load: Load, ctx: MeasureContext, record: dict[str, Any]) -> None:
        """The servers' own counters `before` and `after` the measured run, into the record."""

    def drives(self, params: P) -> bool:
        """Whether this host's part runs the clients (not a host that only serves a spanning cluster)."""
        return True

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        """The reason a client ended badly, in the tool's words."""
        return TrialFailure("tool_error", f"{self.client_what} ({phase}) exited with {returncode}", tail_text(stderr))

    # ---- the Workload members every server workload shares -----------------------------

    def network(self, params: P) -> str:
        return "host"  # the clients on the host reach the servers on 127.0.0.0/8

    def impossible(self, params: P, runtime: Any) -> str | None:
        return self.vm_reason if runtime.isolation == "vm" else None

    def problems(self, params: P, load: Load) -> list[tuple[str, str, str]]:
        return []

    def agent_image(self) -> ImageSpec:
        """What a host's agent needs: the clients run on the host, and so do native servers."""
        return ImageSpec(f"{self.name}-host", packages=self.host_packages)


def server_artifacts(outputs: list[InstanceOutput], server: str, one: str) -> list[Path]:
    """The trial's artifact directories (one per host across hosts, in order) once every server instance
    stopped cleanly; raises the trial's failure when none left output or one exited non-zero (`server`: what
    the instances are, "Cassandra node"; `one`: one of them, "node")."""
    if not outputs:
        raise TrialFailure("parse", f"no {server} instance left output", "")
    bad = [o for o in outputs if o.returncode != 0]
    if bad:
        o = bad[0]
        raise TrialFailure("instance_died", f"{one} {o.index} exited {o.returncode} while stopping", o.stderr)
    return list(dict.fromkeys(o.out_dir.parent for o in outputs))
