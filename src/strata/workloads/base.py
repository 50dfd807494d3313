"""The workload contract (docs/architecture.md "Workloads").

A workload builds what each instance runs and reads what the instances wrote.
It never starts processes itself: the runtime does, so the same workload runs
natively, in N containers or in N VMs. It declares what the rest of strata
must know about it, so that no module outside workloads/ names a workload:
its headline metric and per-second series (in `Parsed`), whether it does
direct I/O (the cache check), how much data an instance holds (validation),
what an image must contain, its result fields (`metrics`, strata/core/metrics.py: the export's
columns, the sweep axes, the latency breakdown), and how its measured phase runs (`measure`: a
tool is released at the barrier and measured until it exits; a server
workload starts its servers, loads them, then measures its clients).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Protocol, Self, TypeVar, runtime_checkable

from strata.core.instances import ImageSpec, InstanceOutput, Isolation, Rendezvous, Running, Target, Watch
from strata.core.jsondoc import JsonObject, JsonValue
from strata.core.metrics import EMPTY, MetricSchema
from strata.core.params import Layer, Load


class Params(Protocol):
    """What the workload contract asks of a parameter model (a `Strict` model: frozen, unknown keys refused). A
    Protocol, not the class, so that a family of workloads can bind its own type variable to a Protocol of the
    keys its members share (workloads/server/template.py `ServerParams`); the registry's plugins' models are
    `Layer`s too (their `type` and `name`)."""

    @classmethod
    def model_validate(cls, obj: object) -> Self: ...


P = TypeVar("P", bound=Params)  # a workload's parameter model
T = TypeVar("T")
P_contra = TypeVar("P_contra", bound=Params, contravariant=True)


@dataclass(frozen=True)
class Syncs:
    """The syncs a workload asked for in its measured window, by its own count (fio's sync counts, the
    engine's fsync flowops, a database's WAL syncs): each must reach a device with a volatile cache as a
    flush (results/validity/flushes.py). `streams`: how many may wait at once (jobs, threads, servers): a
    flush answers at most one sync of each, so a stack that passes them on issues at least count / streams.
    `by_writes`: they are O_SYNC/O_DSYNC writes, which a device taking FUA writes persists without a flush."""

    count: int
    streams: int
    what: str  # in words, for the flag's reason: "fsync", "WAL syncs"
    by_writes: bool = False

    def to_json(self) -> JsonObject:
        return {"count": self.count, "streams": self.streams, "what": self.what, "by_writes": self.by_writes}


@dataclass(frozen=True)
class DirectWrites:
    """The O_DIRECT writes a workload issued in its measured window, by its own count: each must reach the
    device as a write of its own before it completes (results/validity/absorbed.py). `random`: at random
    offsets, which the block layer does not merge."""

    count: int
    bytes: int
    random: bool

    def to_json(self) -> JsonObject:
        return {"count": self.count, "bytes": self.bytes, "random": self.random}


@dataclass
class Parsed:
    """What a workload reports about one trial, from the tools' own output.

    `metrics["primary"]` is the headline: {"value", "unit", "metric", "series"} (see `headline`).
    `windows`: per instance, the wall-clock (start, end) of its measured I/O as the tool itself
    reports it, or None where the tool does not say: the sync check judges their overlap."""

    metrics: JsonObject  # the result's `metrics`, as stored
    moved_bytes: dict[str, int]  # {"read": n, "write": n}: bytes the workload says it moved
    series: dict[str, list[list[float]]] = field(
        default_factory=dict
    )  # per-second [[t_s, value], ...] from the tool's logs
    windows: list[tuple[float, float] | None] = field(default_factory=list)
    # where each window's output lives, when the windows are not the instances' (a server workload's
    # clients): across hosts, a window's host is the host whose artifacts hold it
    window_dirs: list[Path] | None = None
    # what `moved_bytes` are when they are not I/O with O_DIRECT, in words for the cache judgement's
    # message ("as WAL": a database's bytes that must reach the device); "": O_DIRECT I/O
    moved_basis: str = ""
    # the syncs it asked for (a count of 0: none), and the O_DIRECT writes it issued, by its own count;
    # None: its output does not say (or it issued no O_DIRECT writes)
    syncs: Syncs | None = None
    direct_writes: DirectWrites | None = None
    # a database's data set beside the memory its servers can use (workloads/server/memory.py): {data_set_bytes,
    # memory_bytes, memory_of, fix}; the cache judgement flags a data set that fits (it is read from memory)
    memory: JsonObject | None = None
    # the tool's own steady-state verdict, when it judged one (fio's --steadystate: {criterion, attained,
    # runtime_ms}); the steady flag keeps it beside strata's own (results/validity/series.py)
    tool_steady: JsonObject | None = None

    def headline_series(self) -> list[list[float]] | None:
        """The headline's per-second series (`metrics.primary.series` names it), or None: the tool logs none."""
        primary = self.metrics.get("primary")
        name = primary.get("series") if isinstance(primary, dict) else None
        return self.series.get(name) if isinstance(name, str) else None


# What reading a tool's output of the right form but not the tool's members raises (a member missing or of another
# type, a number beyond a float): output strata cannot read, a `parse` failure, never strata's traceback.
UNREADABLE = (LookupError, TypeError, ValueError, ArithmeticError)


def unfinite_headline(parsed: Parsed) -> str | None:
    """'figures give the headline inf' when a parsed headline is no finite number (figures that add up beyond a
    float), else None."""
    primary = parsed.metrics.get("primary")
    value = primary.get("value") if isinstance(primary, dict) else None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return None if ok else f"figures give the headline {value!r}"


def headline(value: float | None, unit: str, metric: str, series: str | None = None, **extra: JsonValue) -> JsonObject:
    """The `primary` entry of a result's metrics: the one number the report compares."""
    return {"value": value, "unit": unit, "metric": metric, "series": series, **extra}


@dataclass
class MeasureContext:
    """What `Workload.measure` gets: the instances (created, not yet released) and the trial's hooks."""

    running: Running
    collect: Callable[[], AbstractContextManager[object]]  # the measured window: collectors run inside it
    timeout_s: float  # the instances' deadline, from the workload's own estimate
    watch: Watch | None  # the layers' health, polled while instances run
    art: Path  # the trial's artifact directory
    prepare_timeout_s: float = 600.0


class Workload(Protocol[P]):
    """The core: what every workload implements to run one trial on one host (ToolWorkload has defaults
    for all but `name`, `params`, `estimate_s`, `command` and `parse`). What only some workloads do is a
    capability below, which a workload declares by deriving from it; the call sites ask with
    `isinstance` and do without it otherwise."""

    name: str  # registry key = spec `type` = JSON `workload.type`
    params: type[P]
    metrics: MetricSchema  # its result fields: columns, sweep axes, latencies, the headline's candidates

    @property
    def targets(self) -> tuple[str, ...]: ...  # the target kinds it runs on: "dir", "device" (a block device)

    def parse_params(self, raw: JsonObject, base_dir: Path) -> P: ...  # the spec's entry
    # "wrapper": the runtime holds each instance at the start; "tool": the tool holds itself, after its own setup
    def barrier(self, params: P) -> str: ...
    def available(self, host: Mapping[str, object], params: P | None = None) -> str | None: ...  # host facts
    def validate(self, params: P) -> list[str]: ...  # deeper checks before anything is built
    def versions(self) -> dict[str, str | None]: ...  # tool versions, stored with the host facts
    def direct_io(self, params: P) -> bool: ...
    def estimate_s(self, params: P) -> float: ...
    def runtime_s(self, params: P) -> float: ...  # the measured phase's planned seconds; 0: until its work is done
    def data_bytes(self, params: P, load: Load) -> int: ...  # what one instance puts on the path
    def instances(self, params: P, load: Load) -> int: ...  # instances per trial (a cluster's nodes count)
    def image(self, params: P) -> ImageSpec: ...  # what a container or guest image must hold
    def stage(self, params: P, out_dir: Path) -> None: ...  # files an instance needs before it starts
    def prepare(self, params: P, load: Load, target: Target, instance: int) -> list[str] | None: ...
    def command(self, params: P, load: Load, target: Target, instance: int) -> list[str]: ...
    def measure(self, params: P, load: Load, ctx: MeasureContext) -> list[InstanceOutput]: ...
    def parse(self, params: P, outputs: list[InstanceOutput]) -> Parsed: ...


@runtime_checkable
class Shorthand(Protocol):
    """A workload a spec may name in one word (`rr`)."""

    def shorthand(self, text: str) -> JsonObject | None: ...  # the entry as its parameters, or None: not this one's


@runtime_checkable
class Smoke(Protocol):
    """A workload that shrinks its own parameters for `--scale smoke` (experiment/scale.py)."""

    def smoke(self, raw: JsonObject) -> JsonObject: ...


@runtime_checkable
class LiveRate(Protocol):
    """A workload whose instances say their current rate while they run (fio's status line, the databases'
    per-second lines): the progress line shows it (run/progress.py). Read from the files the instances write
    under the trial's artifacts directory, never from the measurement, which this does not touch."""

    def live_rate(self, trial_dir: Path) -> str | None: ...  # "24.5k IOPS, 96 MiB/s"; None: nothing to say yet


@runtime_checkable
class Upgrading(Protocol):
    """A workload whose part of the stored result changed with the format (schema.py)."""

    def upgrade(self, result: JsonObject, version: int) -> None: ...  # bring schema `version` to the next one


@runtime_checkable
class DeviceProbe(Protocol):
    """A workload that measures a block device's sequential read bandwidth by itself, read-only, in a few
    seconds (the limit presets' disk share, experiment/presets.py). The probe runs on the host: the
    tools it needs there are its `HostTools` declaration."""

    probe_words: str  # how, stored with the result: "...reads of {path}..." (`path` filled in)

    def read_bps(self, device_path: str) -> int: ...  # bytes/s; raises StrataError when it cannot


@runtime_checkable
class HostTools(Protocol):
    """A workload that runs tools on the host itself: its instances under the native runtime, a server
    workload's clients, a `DeviceProbe`'s probe. Across hosts each host's agent runs them, so the agent's
    image holds what this declares (hosts/agentimage.py), for the experiments that run the workload (or
    size a limit preset by the probe) only."""

    def agent_image(self) -> ImageSpec: ...  # Debian packages and trees the host's agent must hold


class RuntimeTraits(Protocol):
    """What a workload may ask of a runtime (the plugin, stack/runtimes/base.py) it might run on."""

    @property
    def name(self) -> str: ...
    @property
    def isolation(self) -> Isolation: ...


@runtime_checkable
class Constrained(Protocol[P_contra]):
    """A workload that rules out runtimes or loads, whatever the host: skipped or refused with the reason
    before anything is built."""

    def impossible(
        self, params: P_contra, runtime: RuntimeTraits
    ) -> str | None: ...  # a runtime (the plugin) it cannot run on
    def problems(self, params: P_contra, load: Load) -> list[tuple[str, str, str]]: ...  # (key, problem, fix) of a load


@runtime_checkable
class ServerWorkload(Protocol[P_contra]):
    """A workload whose instances are servers that its own clients, on the host, measure (ycsb): the
    instances talk over the host's network, and across hosts the parts meet in its `measure`
    (`rendezvous`), after its servers started, not at the instances' release. (Its clients' tools are
    what a host's agent must hold: it is `HostTools` too.)"""

    def network(self, params: P_contra) -> str: ...  # "none", or "host" to reach servers on 127.0.0.0/8


@runtime_checkable
class SelfPlacing(Protocol[P_contra]):
    """A workload that places its instances over the experiment's hosts itself (a cluster spanning hosts)."""

    def span(self, params: P_contra, load: Load) -> dict[str, int] | None: ...  # instances per host, or None
    def part(
        self, params: P_contra, load: Load, host: str, instances: int, addresses: dict[str, str]
    ) -> tuple[Layer, Load]: ...
    def part_host(self, params: P_contra) -> str | None: ...  # the host whose part `part` made these; None: whole


@runtime_checkable
class LogOnPath(Protocol[P_contra]):
    """A server workload whose log (PostgreSQL's WAL, InnoDB's redo log, Cassandra's commit log) may go on a path
    of its own beside its data: the runtime mounts it in each instance (`Target.log_path`)."""

    def log_path(self, params: P_contra) -> str | None: ...  # the path's name, or None: with the data


@runtime_checkable
class HostUser(Protocol[P_contra]):
    """A workload whose instances, run as host processes (the native runtime), drop root for a user of their own
    (PostgreSQL refuses to run as root): every directory down to their data must let that user through, which
    the plan checks before anything is built (experiment/plan.py)."""

    def host_user(self, params: P_contra) -> str: ...


def network_of(wl: Workload[P], params: P) -> str:
    """The instances' network: the host's for a server workload that asks for it, else none."""
    return wl.network(params) if isinstance(wl, ServerWorkload) else "none"


def span_of(wl: Workload[P], params: P, load: Load) -> dict[str, int] | None:
    """Instances per host when the workload places its instances over the experiment's hosts itself;
    None: where the trial's `placement` says."""
    return wl.span(params, load) if isinstance(wl, SelfPlacing) else None


def part_host_of(wl: Workload[P], params: P) -> str | None:
    """The host whose part of a trial these parameters are, once `part` made them (never in a spec); None: a
    whole trial's, or the workload does not place itself."""
    return wl.part_host(params) if isinstance(wl, SelfPlacing) else None


def part_of(
    wl: Workload[Any], params: Layer, load: Load, host: str, instances: int, addresses: dict[str, str]
) -> tuple[Layer, Load]:
    """(params, load) of the part of a trial that runs `instances` on `host` (`addresses`: every host's
    node address): the workload's own, or the same workload with the host's share as its container count."""
    if isinstance(wl, SelfPlacing):
        return wl.part(params, load, host, instances, addresses)
    return host_share(params, load, instances)


def host_share(params: T, load: Load, instances: int) -> tuple[T, Load]:
    return params, load.model_copy(update={"containers": instances})


class ToolWorkload(Generic[P]):
    """Defaults for a workload whose instances are the measuring tool itself (fio, the engine)."""

    name: str
    params: type[P]
    targets: tuple[str, ...] = ("dir", "device")
    metrics: MetricSchema = EMPTY

    def parse_params(self, raw: JsonObject, base_dir: Path) -> P:
        return self.params.model_validate(raw)

    def available(self, host: Mapping[str, object], params: P | None = None) -> str | None:
        return None

    def barrier(self, params: P) -> str:
        return "wrapper"

    def validate(self, params: P) -> list[str]:
        return []

    def versions(self) -> dict[str, str | None]:
        return {}

    def direct_io(self, params: P) -> bool:
        return False

    def data_bytes(self, params: P, load: Load) -> int:
        return 0

    def runtime_s(self, params: P) -> float:
        """The measured phase's planned length: the sync check allows a start skew in proportion to it."""
        return 0.0

    def instances(self, params: P, load: Load) -> int:
        """One instance per container (`load.containers`); a server workload may run more (a cluster's nodes)."""
        return load.containers

    def image(self, params: P) -> ImageSpec:
        return ImageSpec()

    def stage(self, params: P, out_dir: Path) -> None:
        pass

    def prepare(self, params: P, load: Load, target: Target, instance: int) -> list[str] | None:
        return None

    def measure(self, params: P, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
        """Every instance prepared, then the collectors start, then all are released at once."""
        ctx.running.ready(ctx.prepare_timeout_s)
        with ctx.collect():
            ctx.running.go()
            return ctx.running.wait(ctx.timeout_s, ctx.watch)


def rendezvous(running: Running, point: str = "measure", check: Callable[[], None] | None = None) -> None:
    """Where a server workload meets the other hosts' parts (hosts/part.py):
    "measure" before it measures, "measured" after, before its servers stop (servers another host's
    clients use stay up until every part measured; `check` raises while it waits there if a local
    instance dies). Nothing on a local run, whose instances have no such barrier."""
    if isinstance(running, Rendezvous):
        running.rendezvous(point, check)


def resolve_file(raw: JsonObject, base_dir: Path, what: str) -> JsonObject:
    """A spec's `file:` relative to the spec's folder, checked to exist."""
    raw = dict(raw)
    given = raw.get("file")
    if given:
        if not isinstance(given, str):
            raise ValueError(f"`file` is the path of a {what}, not {type(given).__name__}")
        raw["file"] = spec_file(given, base_dir, what)
    return raw


def spec_file(path: str, base_dir: Path, what: str, max_bytes: int | None = None, said: str = "") -> str:
    """A file a spec names, relative to the spec's folder: its resolved path, checked to be a file (of at most
    `max_bytes`); `said`, the spec's words for it, in the message."""
    p = Path(path)
    p = p if p.is_absolute() else base_dir / p
    shown = _bounded(str(p))  # a path of any length typed: said in a message of bounded length
    try:
        if not p.is_file():
            raise ValueError(f"no {what} at {shown}" + (f" ({_bounded(said)})" if said else ""))
        if max_bytes is not None and p.stat().st_size > max_bytes:
            raise ValueError(f"the {what} {shown} is above {max_bytes >> 20} MiB: is it a {what}?")
        return str(p.resolve())
    except OSError as e:  # a name too long for the file system, say: the user's path, not a bug of strata's
        raise ValueError(f"no {what} at {shown}: {e.strerror}") from None


def _bounded(text: str, most: int = 200) -> str:
    """`text`, its middle left out beyond `most` characters."""
    return text if len(text) <= most else f"{text[: most // 2]}...{text[-most // 2 :]}"
