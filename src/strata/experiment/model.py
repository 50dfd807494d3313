"""The typed experiment: the only place options live (docs/architecture.md "Experiments").

An experiment file lists choices for each layer of the stack; the experiment
is their product (expand.py). The layers' parameter models come from the
plugin registries (each plugin declares its `params`), so that adding a
device, a runtime or a workload changes nothing here. Every model forbids
unknown keys: a typo is an error, not a silently ignored option.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Annotated, Union

from pydantic import Field

from strata.params import LOAD_PRESETS, Load, PathName, Strict
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.filesystems import FilesystemParams
from strata.stack.runtimes import REGISTRY as RUNTIMES

MAX_REPETITIONS = 1000


def _union(registry: dict):
    members = tuple(dict.fromkeys(p.params for p in registry.values()))
    return Annotated[Union[members], Field(discriminator="type")] if len(members) > 1 else members[0]


Device = _union(DEVICES)
Runtime = _union(RUNTIMES)


class Exclude(Strict):
    """Leave out every combination whose names all match (shell globs: `docker:*`)."""

    device: str | None = None
    filesystem: str | None = None
    runtime: str | None = None
    path: str | None = None
    workload: str | None = None
    load: str | None = None

    def matches(self, names: dict[str, str]) -> bool:
        pairs = [(k, v) for k, v in self.model_dump().items() if v is not None]
        return bool(pairs) and all(fnmatchcase(names[k], v) for k, v in pairs)


class Experiment(Strict):
    """A whole experiment file. Workload entries are validated by their plugin (workloads/)."""

    name: str = Field(description="names the results directory (results/<name>)")
    description: str = ""
    workdir: str = Field(default="/var/tmp/strata", description="loop images and mount points go here")
    repetitions: int = Field(
        default=1, ge=1, le=MAX_REPETITIONS, description="runs of each trial (for confidence intervals)"
    )
    devices: list[Device] = Field(min_length=1, description="see the device sections below")
    filesystems: list[FilesystemParams] = Field(min_length=1)
    runtimes: list[Runtime] = Field(min_length=1)
    paths: list[PathName] = Field(min_length=1, description="see paths below")
    workloads: list[dict] = Field(min_length=1, description="`{WORKLOAD: {...}}`, see the workload sections below")
    loads: list[Load] = Field(default=[Load(name="low", **LOAD_PRESETS["low"])], description="default: low")
    exclude: list[Exclude] = Field(default_factory=list, description="combinations to leave out, by layer name (globs)")
