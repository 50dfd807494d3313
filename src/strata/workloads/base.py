"""The workload contract (docs/architecture.md "Workloads").

A workload builds what each instance runs and reads what the instances wrote.
It never starts processes itself: the runtime does, so the same workload runs
natively, in N containers or in N VMs. It declares what the rest of strata
must know about it, so that no module outside workloads/ names a workload:
its headline metric and per-second series (in `Parsed`), whether it does
direct I/O (the cache check), how much data an instance holds (validation),
what an image must contain, and how its measured phase runs (`measure`: a
tool is released at the barrier and measured until it exits; a server
workload starts its servers, loads them, then measures its clients).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from strata.instances import ImageSpec, InstanceOutput, Running, Target, Watch
from strata.params import Load, Strict


@dataclass
class Parsed:
    """What a workload reports about one trial, from the tools' own output.

    `metrics["primary"]` is the headline: {"value", "unit", "metric", "series"} (see `headline`).
    `windows`: per instance, the wall-clock (start, end) of its measured I/O as the tool itself
    reports it, or None where the tool does not say: the sync check judges their overlap."""

    metrics: dict[str, Any]
    moved_bytes: dict[str, int]  # {"read": n, "write": n}: bytes the workload says it moved
    series: dict[str, list] = field(default_factory=dict)  # per-second [[t_s, value], ...] from the tool's logs
    windows: list[tuple[float, float] | None] = field(default_factory=list)
    # where each window's output lives, when the windows are not the instances' (a server workload's
    # clients): across hosts, a window's host is the host whose artifacts hold it
    window_dirs: list[Path] | None = None


def headline(value: float | None, unit: str, metric: str, series: str | None = None, **extra) -> dict:
    """The `primary` entry of a result's metrics: the one number the report compares."""
    return {"value": value, "unit": unit, "metric": metric, "series": series, **extra}


@dataclass
class MeasureContext:
    """What `Workload.measure` gets: the instances (created, not yet released) and the trial's hooks."""

    running: Running
    collect: Callable[[], AbstractContextManager]  # the measured window: collectors run inside it
    timeout_s: float  # the instances' deadline, from the workload's own estimate
    watch: Watch | None  # the layers' health, polled while instances run
    art: Path  # the trial's artifact directory
    prepare_timeout_s: float = 600.0


class Workload(Protocol):
    name: str  # registry key = spec `type` = JSON `workload.type`
    params: type[Strict]
    barrier: str  # "wrapper": the runtime holds each instance at the start; "tool": the tool holds itself
    # across hosts (hosts/part.py), where the hosts' parts meet: "start" (the instances' release) or "measure"
    # (the workload's `rendezvous(running)` before its measured phase: servers that start, load, warm up first)
    hosts_barrier: str
    targets: tuple[str, ...]  # the target kinds it runs on: "dir" (a directory), "device" (a block device)

    def parse_params(self, raw: dict, base_dir: Path) -> Strict: ...
    def shorthand(self, text: str) -> dict | None: ...  # a one-word entry (`rr`) as its parameters, or None
    def available(self, host: dict, params: Strict | None = None) -> str | None: ...
    def validate(self, params: Strict) -> list[str]: ...  # deeper checks before anything is built
    def versions(self) -> dict[str, str | None]: ...  # tool versions, stored with the host facts
    def direct_io(self, params: Strict) -> bool: ...
    def estimate_s(self, params: Strict) -> float: ...
    def data_bytes(self, params: Strict, load: Load) -> int: ...  # what one instance puts on the path
    def instances(self, params: Strict, load: Load) -> int: ...  # instances per trial (a cluster's nodes count)
    def impossible(self, params: Strict, runtime: Any) -> str | None: ...  # a runtime it cannot run on, and why
    def problems(self, params: Strict, load: Load) -> list[tuple[str, str, str]]: ...  # (key, problem, fix) of a load
    def network(self, params: Strict) -> str: ...  # "none", or "host" to reach servers on 127.0.0.0/8
    def image(self, params: Strict) -> ImageSpec: ...  # what a container or guest image must hold
    def agent_image(self) -> ImageSpec: ...  # what a host's agent needs for the workload's host-side tools
    def stage(self, params: Strict, out_dir: Path) -> None: ...  # files an instance needs before it starts
    def prepare(self, params: Strict, load: Load, target: Target, instance: int) -> list[str] | None: ...
    def command(self, params: Strict, load: Load, target: Target, instance: int) -> list[str]: ...
    def measure(self, params: Strict, load: Load, ctx: MeasureContext) -> list[InstanceOutput]: ...
    def parse(self, params: Strict, outputs: list[InstanceOutput]) -> Parsed: ...
    # across hosts: instances per host when the workload places them itself (a cluster spanning hosts),
    # else None and the trial's placement does; and the params and load of one host's part
    def span(self, params: Strict, load: Load) -> dict[str, int] | None: ...
    def part(self, params: Strict, load: Load, host: str, instances: int, addresses: dict[str, str]) -> tuple: ...
    def upgrade(self, result: dict, version: int) -> None: ...  # its part of an older stored result


class ToolWorkload:
    """Defaults for a workload whose instances are the measuring tool itself (fio, the engine)."""

    barrier = "wrapper"
    hosts_barrier = "start"
    targets = ("dir", "device")

    def parse_params(self, raw: dict, base_dir: Path) -> Strict:
        return self.params.model_validate(raw)

    def shorthand(self, text: str) -> dict | None:
        return None

    def upgrade(self, result: dict, version: int) -> None:
        """Bring a stored result of schema `version` to the next one (schema.py), where the workload's
        part of the format changed; nothing by default."""

    def available(self, host: dict, params: Strict | None = None) -> str | None:
        return None

    def validate(self, params: Strict) -> list[str]:
        return []

    def versions(self) -> dict[str, str | None]:
        return {}

    def direct_io(self, params: Strict) -> bool:
        return False

    def data_bytes(self, params: Strict, load: Load) -> int:
        return 0

    def instances(self, params: Strict, load: Load) -> int:
        """One instance per container (`load.containers`); a server workload may run more (a cluster's nodes)."""
        return load.containers

    def span(self, params: Strict, load: Load) -> dict[str, int] | None:
        """Instances per host when the workload places its instances over the experiment's hosts itself;
        None: where the trial's `placement` says."""
        return None

    def part(self, params: Strict, load: Load, host: str, instances: int, addresses: dict[str, str]) -> tuple:
        """(params, load) of the part of a trial that runs `instances` on `host` (`addresses`: every host's
        node address): the same workload, with the host's share as its container count."""
        return params, load.model_copy(update={"containers": instances})

    def impossible(self, params: Strict, runtime: Any) -> str | None:
        """Why this workload cannot run on `runtime` (the plugin: its `kind`, `name`), whatever the host."""
        return None

    def problems(self, params: Strict, load: Load) -> list[tuple[str, str, str]]:
        """Errors of this workload under `load` (a memory limit too small for it): (key under the load,
        problem, fix), reported with the spec's other errors before anything is built."""
        return []

    def network(self, params: Strict) -> str:
        return "none"

    def image(self, params: Strict) -> ImageSpec:
        return ImageSpec()

    def agent_image(self) -> ImageSpec:
        """What the agent of a host (hosts/deploy.py) must hold besides its own tools to run this workload's
        parts there: Debian packages and trees of the tools the workload runs on the host itself (a server
        workload's clients). Nothing by default: a tool instance's image or the agent's own tools serve."""
        return ImageSpec()

    def stage(self, params: Strict, out_dir: Path) -> None:
        pass

    def prepare(self, params: Strict, load: Load, target: Target, instance: int) -> list[str] | None:
        return None

    def measure(self, params: Strict, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
        """Every instance prepared, then the collectors start, then all are released at once."""
        ctx.running.ready(ctx.prepare_timeout_s)
        with ctx.collect():
            ctx.running.go()
            return ctx.running.wait(ctx.timeout_s, ctx.watch)


def rendezvous(running: Running, point: str = "measure", check: Callable[[], None] | None = None) -> None:
    """Where a workload with `hosts_barrier = "measure"` meets the other hosts' parts (hosts/part.py):
    "measure" before it measures, "measured" after, before its servers stop (servers another host's
    clients use stay up until every part measured; `check` raises while it waits there if a local
    instance dies). Nothing on a local run, whose instances have no such barrier."""
    meet = getattr(running, "rendezvous", None)
    if meet is not None:
        meet(point, check)


def resolve_file(raw: dict, base_dir: Path, what: str) -> dict:
    """A spec's `file:` relative to the spec's folder, checked to exist."""
    raw = dict(raw)
    if raw.get("file"):
        if not isinstance(raw["file"], str):
            raise ValueError(f"`file` is the path of a {what}, not {type(raw['file']).__name__}")
        p = Path(raw["file"])
        p = p if p.is_absolute() else base_dir / p
        if not p.is_file():
            raise ValueError(f"no {what} at {p}")
        raw["file"] = str(p.resolve())
    return raw
