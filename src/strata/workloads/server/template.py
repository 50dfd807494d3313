"""`ServerTemplate`: the base of every server workload (ycsb's Cassandra, pgbench's PostgreSQL, sysbench's MariaDB).

A server workload derives from it and supplies:

- `command` (the Workload member): the instance's start command, usually `script.server_script`
  around the server, its data directory on `target.path`;
- `ready(params, load, ctx, instance)`: the probe that says a started server answers;
- `clients(phase, params, load, out, record)`: the client processes of each phase (`phases()`, the
  load first, then the measured `run`), each writing into its own directory under `out`;
- `parse_trial(params, arts)` and `metrics`: its parser of a trial's artifacts, once every server stopped cleanly
  (`parse`, the Workload member, is the template's: `server_artifacts`), and its metric declaration;
- `server`: what its server is (facts.py's `Server`, declared in its server module): the name its messages use
  (from which `vm_reason`, why it does not run in a VM, follows; the workload's name gives `clients_dir` and
  `client_what`), its log's file, the packages a host's agent needs to run its clients and its native servers
  (its image across hosts), and the facts below;
- `not_installed`: what of the server and its clients this host lacks (`available` adds the native servers'
  user and the run's loopback block).

What servers share beyond the lifecycle, each a hook with a default or a fact of `server`:

- a settings map (settings.py): the parameters' `settings`, checked in `validate` against the server's own list
  and those strata sets itself, in the server's notation (`server.settings`);
- its log on a path of its own (logpath.py): the parameters' key for it (`server.log`: pgbench's `wal_path`) names
  a path of the runtime, which the runtime mounts beside the data (`Target.log_path`, from `log_path`); a runtime
  without it is `impossible`;
- the user its native servers run as (`server.user`: PostgreSQL refuses root), whose reach the plan checks;
- the facts read from each started server (`server_facts`: its version, the settings in force), stored
  with the trial; the memory its servers can use (memory.py), in the record; the servers' own counters
  before and after the measured run (`counters`), in the record too (records.py reads it back);
- the server's own last error line when it fails to start or dies (`error_line`), first in the failure;
- the limits a load must respect (`problems`): the memory limit a server needs at the least (`memory_floor`),
  and a port of the run's block each (`server.ports_per_run`, loopback.py);
- the spec's keys every server shares (fields.py: `runtime`, `warmup`, `rate`, `start_timeout`, a script of the
  user's `file:PATH`); those the defaults of `runtime_s`, `phases`, `phase_timeout_s` and `start_timeout_s` read
  are `ServerParams`, the Protocol the template's parameters satisfy.

The lifecycle (lifecycle.py), the instances' network (`host`: servers on 127.0.0.0/8), the target
(a directory), the refusal of VMs and the agent image are the template's; the hooks below have
defaults a workload overrides only where its application differs (Cassandra's clusters start node
by node, check their ring, warm up and measure a peak; PostgreSQL reads its WAL counters around
the run).
"""

from __future__ import annotations

import pwd
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from strata.core.errors import TrialFailure
from strata.core.instances import ImageSpec, InstanceOutput
from strata.core.jsondoc import JsonObject, as_obj
from strata.core.params import Load
from strata.workloads.base import (
    Constrained,
    HostTools,
    HostUser,
    LogOnPath,
    MeasureContext,
    Params,
    Parsed,
    RuntimeTraits,
    ServerWorkload,
    ToolWorkload,
)
from strata.workloads.server import lifecycle, logpath, loopback, settings
from strata.workloads.server.clients import Client, tail_text
from strata.workloads.server.facts import Server


class ServerParams(Params, Protocol):
    """The keys every server workload's parameters have (fields.py's), which the template's defaults read;
    ycsb's, pgbench's and sysbench's models satisfy it as they are. What only some have is a hook of the
    template's instead (`memory_floor`), or a key the server names (`WithSettings`, `server.log`)."""

    @property
    def runtime(self) -> int | None: ...  # seconds of the measured run; None: ycsb's `operations` instead
    @property
    def warmup(self) -> int: ...  # seconds of the unmeasured warm-up before it, 0: none
    @property
    def start_timeout(self) -> int: ...  # seconds a server may take to come up


S = TypeVar("S", bound=ServerParams)


@runtime_checkable
class WithSettings(Protocol):
    """Parameters with a settings map (`settings.settings_field`): any server setting, {name: value}."""

    @property
    def settings(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class MemoryFloor:
    """The least memory limit one server runs under (`need`, bytes), and the parameter that sets most of it
    (`key`, "": none) with its value (`given`, bytes), for the message and its fix."""

    need: int
    key: str = ""
    given: int = 0


class ServerTemplate(ToolWorkload[S], Constrained[S], ServerWorkload[S], HostTools, LogOnPath[S], HostUser[S]):
    """A workload whose instances are servers and whose clients, on the host, measure them."""

    targets: tuple[str, ...] = ("dir",)  # a server's data directory
    server: Server  # what its server is (facts.py), declared in its server module

    @property
    def clients_dir(self) -> str:
        """The clients' outputs and clients.json, under the trial's artifacts: the workload's name."""
        return self.name

    @property
    def vm_reason(self) -> str:
        """Why its servers do not run in strata's VM (the template refuses every VM)."""
        server = self.server.what.removesuffix(" server")
        return (
            f"a {self.server.what} in a VM is not supported: the guest image holds no {server}, and QEMU runs under "
            "TCG emulation on this kind of host (about 100x slower), which would measure the emulator"
        )

    @property
    def client_what(self) -> str:
        """A client in messages: "the pgbench client"."""
        return f"the {self.name} client"

    # ---- what each server workload supplies ----------------------------------------

    def ready(self, params: S, load: Load, ctx: MeasureContext, instance: int) -> bool:
        """Does the server of `instance` answer? (Polled while it starts; its log is in `ctx.art`.)"""
        raise NotImplementedError

    def clients(self, phase: str, params: S, load: Load, out: Path, record: JsonObject) -> list[Client]:
        """The client processes of `phase`, each writing into a directory under `out`."""
        raise NotImplementedError

    def parse_trial(self, params: S, arts: list[Path]) -> Parsed:
        """The trial's result from its artifact directories (one per host across hosts, in order)."""
        raise NotImplementedError

    def parse(self, params: S, outputs: list[InstanceOutput]) -> Parsed:
        return self.parse_trial(params, server_artifacts(outputs, self.server.what, self.server.noun))

    # ---- the lifecycle's hooks, with their defaults ------------------------------------

    def measure(self, params: S, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
        return lifecycle.measure(self, params, load, ctx)

    def phases(self, params: S) -> tuple[str, ...]:
        """The unmeasured phases before the measured `run`, in order: the load, and a warm-up when it has one."""
        return ("load",) + (("warmup",) if params.warmup else ())

    def load_timeout_s(self, params: S) -> float:
        return 600.0

    def phase_timeout_s(self, phase: str, params: S) -> float:
        """The load's own; a timed phase's seconds (`warmup`, `runtime`) and three minutes."""
        if phase == "load":
            return self.load_timeout_s(params)
        return float((params.warmup if phase == "warmup" else params.runtime) or 60) + 180.0

    def record(self, params: S, load: Load) -> JsonObject:
        """clients.json as it starts: what the parser needs besides the phases."""
        return {"servers": self.instances(params, load), "phases": {}}

    def start_timeout_s(self, params: S) -> float:
        return float(params.start_timeout)

    def start_servers(self, params: S, load: Load, ctx: MeasureContext) -> list[float]:
        """Wait until each server answers, in order; seconds from its launch to ready, each."""
        timeout = self.start_timeout_s(params)
        ready = []
        for k in range(self.instances(params, load)):

            def probe(k: int = k) -> bool:
                return self.ready(params, load, ctx, k)

            what = f"{self.server.what} {k}"
            waited = lifecycle.wait_ready(ctx, k, probe, what, timeout, self.server.log_name, self.error_line)
            ready.append(round(waited, 2))
        return ready

    def after_start(self, params: S, load: Load, ctx: MeasureContext) -> None:
        """What must hold once every server answers, before any client runs."""

    def after_phase(self, phase: str, params: S, load: Load, ctx: MeasureContext, record: JsonObject) -> None:
        """Read what an unmeasured phase measured, for the phases after it."""

    def counters(self, instance: int) -> JsonObject | None:
        """The server's own counters now (its WAL, its reads: {"error": words} when they cannot be read); None:
        it has none."""
        return None

    def observe(self, point: str, params: S, load: Load, ctx: MeasureContext, record: JsonObject) -> None:
        """The servers' own counters `before` and `after` the measured run, into the record (`observed`)."""
        seen = [self.counters(k) for k in range(self.instances(params, load))]
        if any(c is not None for c in seen):
            as_obj(record.setdefault("observed", {}), "observed")[point] = list(seen)

    def fail_after(self, ctx: MeasureContext, words: str, said: str = "") -> TrialFailure:
        """The failure of a step strata asked of the servers (a CHECKPOINT, a flush): a server that died, if one
        did, is the cause (settle raises it: a killed server's connection closes before its process or container
        has ended, so the servers get lifecycle.GRACE_S to show it); else `words`."""
        lifecycle.settle(self, ctx)
        return TrialFailure("tool_error", words, said)

    def drives(self, params: S) -> bool:
        """Whether this host's part runs the clients (not a host that only serves a spanning cluster)."""
        return True

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        """The reason a client ended badly, in the tool's words."""
        return TrialFailure("tool_error", f"{self.client_what} ({phase}) exited with {returncode}", tail_text(stderr))

    def error_line(self, text: str) -> str | None:
        """The server's own last error line in its stderr and log (lifecycle.last_error's by default)."""
        return lifecycle.last_error(text)

    def server_facts(self, params: S, load: Load, ctx: MeasureContext) -> JsonObject:
        """What the started servers say of themselves (their version, the settings in force), stored with the
        trial; read once every server answers."""
        return {}

    def host_user(self, params: S) -> str:
        """The user its servers run as when they are host processes (root: none of their own)."""
        return self.server.user

    def memory_floor(self, params: S) -> MemoryFloor | None:
        """The least memory limit one server runs under, with the parameter that sets most of it; None: no such
        floor."""
        return None

    def not_installed(self) -> str | None:
        """What of the server and its clients this host lacks, with the package that brings it; None: nothing."""
        return None

    def log_path(self, params: S) -> str | None:
        """The path of its own the server's log goes on (the parameters' key `server.log.key`), or None: with the
        data, or the server's log has no such key."""
        log = self.server.log
        name: str | None = getattr(params, log.key) if log else None
        return name

    # ---- the Workload members every server workload shares -----------------------------

    def network(self, params: S) -> str:
        return "host"  # the clients on the host reach the servers on 127.0.0.0/8

    def available(self, host: Mapping[str, object], params: S | None = None) -> str | None:
        """The server and its clients installed, the native servers' user there, the run's loopback block usable."""
        return self.not_installed() or self._no_user() or loopback.unusable()

    def _no_user(self) -> str | None:
        user = self.server.user
        if user == "root":
            return None
        if not shutil.which("setpriv"):
            return (
                f"setpriv is missing (apt-get install util-linux): the native servers' scripts act as the {user} user"
            )
        try:
            pwd.getpwnam(user)
        except KeyError:
            maker = f" (Debian's {self.server.packages[0]} package makes it)" if self.server.packages else ""
            return f"there is no {user} user{maker}"
        return None

    def runtime_s(self, params: S) -> float:
        return float(params.runtime or 0)

    def validate(self, params: S) -> list[str]:
        """The settings map against the server's own list of settings, and those strata sets itself."""
        rules = self.server.settings
        if rules is None or not isinstance(params, WithSettings) or not params.settings:
            return []
        return settings.problems(params.settings, rules.catalog(), rules.managed, self.server.what, rules.notation)

    def impossible(self, params: S, runtime: RuntimeTraits) -> str | None:
        if runtime.isolation == "vm":
            return self.vm_reason
        log = self.server.log
        return logpath.impossible(self.log_path(params), log.what, runtime) if log else None

    def problems(self, params: S, load: Load) -> list[tuple[str, str, str]]:
        """A memory limit below what a server needs (`memory_floor`), more servers than the run's ports."""
        out = []
        floor, mem = self.memory_floor(params), load.limits.memory
        if floor is not None and mem is not None and mem < floor.need:
            need, key = floor.need >> 20, floor.key
            given = f" with {key} of {floor.given >> 20} MiB" if key else ""
            out.append(
                (
                    "limits.memory",
                    f"a {self.server.what}{given} needs a memory limit of at least {need} MiB, not {mem >> 20} MiB",
                    f"raise limits.memory to at least {need} MiB" + (f", or lower {key}" if key else ""),
                )
            )
        most = self.server.ports_per_run
        if most is not None and load.containers > most:
            out.append(
                (
                    "containers",
                    f"{load.containers} {self.server.what}s on one host; each takes a port of the run's {most}",
                    f"run at most {most} containers",
                )
            )
        return out

    def agent_image(self) -> ImageSpec:
        """What a host's agent needs: the clients run on the host, and so do native servers."""
        return ImageSpec(f"{self.name}-host", packages=self.server.packages)


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
