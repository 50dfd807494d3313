"""The typed experiment: the only place options live (docs/architecture.md "Experiments").

An experiment file lists choices for each layer of the stack; the experiment
is their product (expand.py). The layers' parameter models come from the
plugin registries (each plugin declares its `params`), so that adding a
device, a runtime or a workload changes nothing here. Every model forbids
unknown keys: a typo is an error, not a silently ignored option.
"""

from __future__ import annotations

import hashlib
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, TypedDict, Union

from pydantic import Field, field_validator, model_validator

from strata.core.params import LOAD_PRESETS, Layer, Load, PathName, Strict
from strata.core.units import parse_duration
from strata.experiment.hosts import MAX_HOSTS, HostSpec, Placement, SwarmSpec
from strata.experiment.looks import planned_looks
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.filesystems import FilesystemParams
from strata.stack.runtimes import REGISTRY as RUNTIMES

MAX_REPETITIONS = 1000


def _union(registry: dict[str, Any]) -> Any:
    members = tuple(dict.fromkeys(p.params for p in registry.values()))
    return Annotated[Union[members], Field(discriminator="type")] if len(members) > 1 else members[0]


if TYPE_CHECKING:  # the checker sees what every plugin's model has; pydantic validates the registry's union
    Device = Layer
    Runtime = Layer
else:
    Device = _union(DEVICES)
    Runtime = _union(RUNTIMES)


class DesignDoc(TypedDict):
    """How a result's repetitions were taken, as stored with it (`Experiment.design`); absent from a result:
    fixed repetitions, margin 5% (results/schema.py)."""

    repetitions: int | Literal["auto"]
    margin: float
    min: NotRequired[int]  # auto: the least and most repetitions, and the planned looks
    max: NotRequired[int]
    looks: NotRequired[list[int]]
    scale: NotRequired[str]  # "smoke": never compared as measurements
    latency_stat: NotRequired[str]  # what the advice compares under an offered rate, when not p99
    compare: NotRequired[str]  # a latency the advice compares instead of the headline (fio's sync_lat)
    latency_target_ms: NotRequired[float]  # the latency every stack is judged against (etcd's 10 ms)


class Exclude(Strict):
    """Leave out every combination whose names all match (shell globs: `docker:*`)."""

    device: str | None = None
    filesystem: str | None = None
    runtime: str | None = None
    path: str | None = None
    workload: str | None = None
    load: str | None = None
    placement: str | None = None

    def matches(self, names: dict[str, str]) -> bool:
        pairs = [(k, v) for k, v in self.model_dump().items() if v is not None]
        return bool(pairs) and all(fnmatchcase(names.get(k, ""), v) for k, v in pairs)


class Experiment(Strict):
    """A whole experiment file. Workload entries are validated by their plugin (workloads/)."""

    name: str = Field(description="names the results directory (results/<name>)")
    description: str = ""
    scale: Literal["full", "smoke"] = Field(
        default="full",
        description="smoke: the same design with every trial made cheap (`strata run --scale smoke`: "
        "experiment/scale.py); its results are marked and never compared as measurements",
    )
    workdir: str = Field(default="/var/tmp/strata", description="loop images and mount points go here")
    repetitions: int | Literal["auto"] = Field(
        default=1,
        description="runs of each trial (for confidence intervals), or `auto`: repeat, in rounds, the "
        "configurations whose comparisons are not yet decided (better, worse or equivalent within `margin`), at "
        "least `min_repetitions` and at most `max_repetitions` times, within `budget`",
    )
    margin: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="two stacks whose difference is within +-margin (the whole 95% interval) are equivalent, "
        "e.g. 5% or 0.05",
    )
    margins: dict[str, float] = Field(
        default_factory=dict,
        description="a workload's own margin, by its name (a glob): `{rr: 2%, 'varmail*': 10%}`; the others use "
        "`margin`",
    )
    latency_stat: Literal["mean", "p50", "p90", "p95", "p99", "p99_9"] = Field(
        default="p99",
        description="under an offered rate (a database's clients offering a fixed rate: pgbench's `rate`, ycsb's "
        "`target`), the throughput is the rate offered: the advice compares this statistic of the latency "
        "instead, lower being better",
    )
    compare: str = Field(
        default="headline",
        pattern=r"^[a-z][a-z0-9_]{0,39}$",
        description="what the advice compares: `headline` (each workload's own: fio's IOPS, pgbench's tx/s), or "
        "a latency the workloads declare (fio's `sync_lat`: its fsync/fdatasync latency), at `latency_stat`, "
        "lower being better",
    )
    latency_target: float | None = Field(
        default=None,
        description="a latency every stack is judged against, e.g. 10ms (etcd's docs: the 99th percentile of its "
        "WAL's fdatasync below 10 ms): the advice says, on the compared latency's interval, whether each stack is "
        "below it, above it, or undecided; 1us to 1h",
    )
    precision: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="`repetitions: auto`, a configuration that is compared with none: its interval's half-width "
        "relative to the mean, e.g. 5% or 0.05",
    )
    min_repetitions: int = Field(default=3, ge=2, le=MAX_REPETITIONS, description="`repetitions: auto`: at least")
    max_repetitions: int = Field(default=10, ge=2, le=MAX_REPETITIONS, description="`repetitions: auto`: at most")
    budget: float | None = Field(
        default=None,
        description="`repetitions: auto`: the trials' time (seconds, or 30m, 2h; building the stacks and loading "
        "images are not counted): the looks are planned for the rounds it pays for, and no new round starts "
        "once it is spent",
    )
    order: Literal["random", "spec"] = Field(
        default="random",
        description="the order within each round: `random` (each round its own, each stack's trials together), or "
        "`spec`: the spec's order of file systems, runtimes and paths, raw first (as before issue 41)",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="the seed of the random order within each round (default: one drawn from the experiment's "
        "name, so that `strata validate` prints the order a run takes and `--resume` keeps it)",
    )
    devices: list[Device] = Field(min_length=1, description="see the device sections below")
    filesystems: list[FilesystemParams] = Field(min_length=1)
    runtimes: list[Runtime] = Field(min_length=1)
    paths: list[PathName] = Field(min_length=1, description="see paths below")
    workloads: list[dict[str, Any]] = Field(
        min_length=1, description="`{WORKLOAD: {...}}`, see the workload sections below"
    )
    loads: list[Load] = Field(
        default=[Load.model_validate({"name": "low", **LOAD_PRESETS["low"]})], description="default: low"
    )
    exclude: list[Exclude] = Field(default_factory=list, description="combinations to leave out, by layer name (globs)")
    hosts: dict[str, HostSpec] = Field(
        default_factory=dict,
        max_length=MAX_HOSTS,
        description="the machines (Swarm nodes) the trials run on, by name: `{a: NODE}` or `{a: {label: K=V, ...}}`; "
        "without it every trial runs here",
    )
    placement: list[Placement] = Field(
        default_factory=list,
        description="where each trial's instances run: a host, `spread`, `{a: 4, b: 4}`, or `each` (one entry per "
        "host; the default with hosts)",
    )
    swarm: SwarmSpec = Field(default_factory=SwarmSpec, description="the Swarm manager strata drives (with hosts)")

    @field_validator("repetitions")
    @classmethod
    def _reps(cls, v: int | str) -> int | str:
        if isinstance(v, int) and not 1 <= v <= MAX_REPETITIONS:
            raise ValueError(f"repetitions is a number from 1 to {MAX_REPETITIONS}, or auto")
        return v

    @field_validator("margins", mode="before")
    @classmethod
    def _percents(cls, v: object) -> object:
        return {k: cls._percent(x) for k, x in v.items()} if isinstance(v, dict) else v

    @field_validator("margins")
    @classmethod
    def _bounded(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if not 0 < x <= 1:
                raise ValueError(f"margins.{k}: {x} is not a margin; write a percentage from 0% to 100%, e.g. 5%")
        return v

    @field_validator("precision", "margin", mode="before")
    @classmethod
    def _percent(cls, v: object) -> object:
        if isinstance(v, str) and v.strip().endswith("%"):
            try:
                return float(v.strip()[:-1]) / 100
            except ValueError:
                raise ValueError(f"{v!r} is not a percentage; write e.g. 5%") from None
        return v

    _budget = field_validator("budget", mode="before")(lambda v: None if v is None else parse_duration(v))

    @field_validator("latency_target", mode="before")
    @classmethod
    def _target(cls, v: object) -> object:
        """A latency as `10ms`, `500us` or seconds, bounded to 1 us .. 1 h."""
        if v is None:
            return None
        if isinstance(v, str) and v.strip().lower().endswith("us"):
            seconds = parse_duration(v.strip()[:-2] or "x") / 1e6
        else:
            seconds = parse_duration(v) if isinstance(v, (int, float, str)) and not isinstance(v, bool) else -1.0
        if not 1e-6 <= seconds <= 3600:
            raise ValueError("a latency target from 1us to 1h, e.g. 10ms")
        return seconds

    @model_validator(mode="after")
    def _auto(self) -> Experiment:
        if self.min_repetitions > self.max_repetitions:
            raise ValueError("min_repetitions is larger than max_repetitions")
        if self.hosts and not self.placement:  # the same experiment on every host
            object.__setattr__(self, "placement", [Placement(on=h) for h in self.hosts])
        return self

    @property
    def auto(self) -> bool:
        return self.repetitions == "auto"

    def margin_for(self, workload: str) -> float:
        """The margin of equivalence of a workload: its own (`margins`, first glob that matches) or `margin`."""
        return next((m for pattern, m in self.margins.items() if fnmatchcase(workload, pattern)), self.margin)

    @property
    def order_seed(self) -> int:
        """The seed of the order within each round (experiment/expand.py `round_order`)."""
        if self.seed is not None:
            return self.seed
        return int(hashlib.sha256(self.name.encode()).hexdigest()[:8], 16) & (2**31 - 1)

    def design(self, workload: str, looks: tuple[int, ...] | None = None) -> DesignDoc:
        """How repetitions are taken, stored with every result: the report's intervals depend on it
        (analysis/decisions/answer.py: the looks `auto` planned, run/repeat.py), and the workload's margin."""
        design: DesignDoc
        if self.auto:
            design = {
                "repetitions": "auto",
                "min": self.min_repetitions,
                "max": self.max_repetitions,
                "looks": list(looks or planned_looks(self.min_repetitions, self.max_repetitions)),
                "margin": self.margin_for(workload),
            }
        else:
            design = {"repetitions": self.repetitions, "margin": self.margin_for(workload)}
        if self.scale == "smoke":
            design["scale"] = "smoke"
        if self.latency_stat != "p99":  # what the advice compares under an offered rate (analysis/advice/compared.py)
            design["latency_stat"] = self.latency_stat
        if self.compare != "headline":
            design["compare"] = self.compare
        if self.latency_target is not None:
            design["latency_target_ms"] = round(self.latency_target * 1000, 6)
        return design

    @property
    def first_repetitions(self) -> int:
        """Repetitions planned up front: all of them, or the first rounds of `auto`."""
        return self.min_repetitions if self.repetitions == "auto" else self.repetitions
