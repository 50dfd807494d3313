"""Parameter models shared by every layer: the strict base, paths, loads and limits.

This is the bottom of the package graph (docs/architecture.md "Packages"):
plugins define their own parameter models on `Strict`, and the experiment
model (experiment/model.py) composes them from the registries. Nothing here
imports a plugin or the experiment loader.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self, TypeVar, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from strata.core.units import parse_size

T = TypeVar("T")
V = TypeVar("V")


class Strict(BaseModel):
    """Unknown keys are errors (a typo must not be ignored), and parameters never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # Keys added after results were stored: left out of a dump while at their default, so that a stored
    # trial's resolved parameters (its id, its cell: experiment/expand.py) are what they were.
    LATER: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _later_at_default(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if self.LATER and isinstance(dumped, dict):
            for k in self.LATER:
                if k in dumped and getattr(self, k) == type(self).model_fields[k].get_default(
                    call_default_factory=True
                ):
                    del dumped[k]
        return dumped


class Layer(Protocol):
    """What strata reads of any layer's parameters (a device's, a runtime's, a workload's): every plugin's
    `params` model has its `type` (the registry key) and its `name` (in results and labels)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    def model_dump(self, *, mode: str = "python") -> dict[str, Any]: ...
    def model_dump_json(self) -> str: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


@overload
def sweep_ends(value: list[T]) -> list[T]: ...
@overload
def sweep_ends(value: V) -> V: ...
def sweep_ends(value: object) -> object:
    """A sweep cut to its first and last values, for the smoke scale (a list of one or two is kept)."""
    if isinstance(value, list) and len(value) > 2:
        return [value[0], value[-1]]
    return value


def size_at_most(value: V, limit: int) -> V | int:
    """A size as written (bytes or `4GiB`) capped at `limit` bytes; anything unparsable is left as it is,
    for the validator to name."""
    try:
        return limit if parse_size(value) > limit else value
    except (TypeError, ValueError):
        return value


def size_field(v: object) -> int | None:
    """A `mode="before"` validator for sizes: 4096, '128k', '4GiB' -> bytes."""
    return None if v is None else parse_size(v)


# The path vocabulary: the directory or device the workload uses. A runtime declares
# which of them it provides (stack/runtimes/base.py). `pvc` is written `pvc:CLASS` (a claim of a
# Kubernetes StorageClass, mounted as a file system) and `pvc-block` `pvc-block:CLASS` (a claim of
# volumeMode Block, handed to the pod as a device); every other path is its bare name.
PATHS = (
    "layer", "volume", "bind", "tmpfs", "device", "image", "local", "hostpath", "emptydir", "pvc", "pvc-block",
)  # fmt: skip
CLASS_PATHS = ("pvc", "pvc-block")  # written WORD:CLASS
DEVICE_PATHS = ("device", "pvc-block")  # an instance gets a block device on them, never a directory
_CLASS = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a DNS subdomain: a StorageClass's name


def path_kind(path: str) -> str:
    """The vocabulary word of a path as written (`pvc:fast` -> `pvc`, `pvc-block:fast` -> `pvc-block`)."""
    return path.split(":", 1)[0]


def path_word(kind: str) -> str:
    """A path word as the user writes it: `pvc:CLASS`, `pvc-block:CLASS`, else the word itself."""
    return f"{kind}:CLASS" if kind in CLASS_PATHS else kind


def _path_name(v: str) -> str:
    kind, colon, arg = v.partition(":")
    if kind not in PATHS:
        raise ValueError(f"unknown path {v[:80]!r}: one of {', '.join(map(path_word, PATHS))}")
    if kind in CLASS_PATHS and not arg:
        raise ValueError(f"{v!r} names no StorageClass: write {kind}:CLASS with the class's name")
    if kind in CLASS_PATHS and not _CLASS.fullmatch(arg):
        raise ValueError(
            f"{v[:80]!r}: {arg[:60]!r} is not a StorageClass's name (lower case letters, digits, '-' and '.'): write "
            f"{kind}:CLASS"
        )
    if kind not in CLASS_PATHS and colon:
        raise ValueError(f"{v[:80]!r}: only {' and '.join(map(path_word, CLASS_PATHS))} take an argument")
    return v


PathName = Annotated[str, AfterValidator(_path_name)]


def shorthand(name: str, text: str, variant: str | None = None) -> dict[str, str] | None:
    """A plugin's one-word entry in a spec, as its parameters: `NAME` -> {type: NAME}; with `variant` (a
    key of the plugin's parameters), `NAME:VALUE` -> {type: NAME, variant: VALUE} (`docker:btrfs`).
    None: the text is not this plugin's."""
    head, colon, value = text.partition(":")
    if head != name or (colon and variant is None):
        return None
    return {"type": name, variant: value} if variant and value else {"type": name}


# What each limit preset of study 003's Table 2 limits (presets.py resolves them on the host).
PRESET_LIMITS = {
    "none": (),
    "CPU": ("cpus",),
    "MEM": ("memory",),
    "BW": ("read_bps", "write_bps"),
    "CPU+MEM": ("cpus", "memory"),
    "ALL": ("cpus", "memory", "read_bps", "write_bps"),
}


class Limits(Strict):
    """Per-instance resource limits; bps/iops apply to the device under test."""

    cpus: float | None = Field(default=None, gt=0, le=4096, description="docker --cpus (VMs: vCPUs)")
    memory: int | None = Field(default=None, ge=4 << 20, le=1 << 50, description="bytes (docker --memory, swap equal)")
    read_bps: int | None = Field(default=None, ge=1, le=1 << 50, description="bytes/s on the device under test")
    write_bps: int | None = Field(default=None, ge=1, le=1 << 50, description="bytes/s on the device under test")
    read_iops: int | None = Field(default=None, gt=0, le=1 << 40, description="IOPS on the device under test")
    write_iops: int | None = Field(default=None, gt=0, le=1 << 40, description="IOPS on the device under test")
    preset: Literal["CPU", "MEM", "BW", "CPU+MEM", "ALL", "none"] | None = Field(
        default=None,
        description="study 003's Table 2: the host's cores, memory and device bandwidth divided by `share`, "
        "resolved on the host when the trial runs (`limits: MEM` is short for `{preset: MEM}`); values given "
        "beside it override it",
    )
    share: int = Field(default=8, ge=1, le=256, description="a preset gives each container 1/share of the host")

    _sizes = field_validator("memory", "read_bps", "write_bps", mode="before")(size_field)

    @model_validator(mode="before")
    @classmethod
    def _preset_name(cls, data: object) -> object:
        return {"preset": data} if isinstance(data, str) else data

    def io(self) -> dict[str, int]:
        """The limits on the device under test that are set, by name (read_bps, write_bps, read_iops, write_iops,
        in that order): each runtime maps them onto its own knobs."""
        given = {"read_bps": self.read_bps, "write_bps": self.write_bps}
        given |= {"read_iops": self.read_iops, "write_iops": self.write_iops}
        return {k: v for k, v in given.items() if v is not None}

    def is_empty(self) -> bool:
        values = self.model_dump(exclude={"preset", "share"})
        return all(v is None for v in values.values()) and self.preset in (None, "none")


@dataclasses.dataclass(frozen=True)
class LoadCounts:
    """What the analysis reads of a stored load (a result keeps its Load dumped): jobs per instance, I/Os in
    flight per job, instances, each Load's default where a result was stored without it. A study's value names
    a load by them (analysis/studies/paper_match.py), so the analysis reaches them here, never by name."""

    numjobs: int = 1
    iodepth: int = 1
    containers: int = 1

    @classmethod
    def of(cls, stored: dict[str, Any]) -> LoadCounts:
        return cls(*(stored.get(f.name, f.default) for f in dataclasses.fields(cls)))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def facts(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @property
    def per_instance(self) -> int:
        """The I/Os one instance keeps in flight: its jobs x queue depth."""
        return self.numjobs * self.iodepth

    @property
    def in_flight(self) -> int:
        """The I/Os the load keeps in flight over all its instances."""
        return self.per_instance * self.containers


JOBS, DEPTH, INSTANCES = LoadCounts.names()  # the counts' names in a stored load, a sweep's dimension
LOAD_PRESETS = {"low": {JOBS: 1, DEPTH: 1}, "high": {JOBS: 32, DEPTH: 32}}


class Load(Strict):
    """How hard and how many: jobs, queue depth, concurrent instances, resource limits."""

    name: str = Field(default="", description="default: j<numjobs>xqd<iodepth>[x<containers>c]")
    numjobs: int = Field(
        default=1, ge=1, le=4096, description="parallel jobs per instance (threads, for workloads that set them)"
    )
    iodepth: int = Field(default=1, ge=1, le=65536, description="I/Os in flight per job")
    containers: int = Field(
        default=1,
        ge=1,
        le=256,
        description="concurrent instances, synchronized start; `auto`: 1, 2, 3, ... until the aggregate "
        "throughput has fallen at two consecutive counts (at most `max_containers`), the peak stored with the run",
    )
    scale: Literal["fixed", "auto"] = Field(default="fixed", description="`auto` when `containers: auto`")
    max_containers: int = Field(default=16, ge=2, le=256, description="`containers: auto`: the largest count tried")
    limits: Limits = Field(default_factory=Limits, description="per-container cgroup limits")

    @model_validator(mode="before")
    @classmethod
    def _auto(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("containers"), str) and data["containers"] == "auto":
            data = {**data, "containers": 1, "scale": "auto"}
        return data

    def with_containers(self, n: int) -> "Load":
        """The same load at another count (`containers: auto`); a generated name follows the count."""
        name = self.name if self.name != _default_name(self) else ""
        return Load.model_validate({**self.model_dump(), "containers": n, "name": f"{name}x{n}c" if name else ""})

    @model_validator(mode="after")
    def _name(self) -> "Load":
        if not self.name:
            object.__setattr__(self, "name", _default_name(self))
        return self


def _default_name(load: Load) -> str:
    name = f"j{load.numjobs}xqd{load.iodepth}"
    if load.containers > 1 or load.scale == "auto":
        name += f"x{load.containers}c"
    if load.limits.preset:
        name += f"-{load.limits.preset}"
    return name
