"""What the agent image holds for the experiment's workloads, besides the agent's own tools.

A workload whose parts run tools on the host itself (ycsb: its YCSB clients, and its Cassandra
nodes when the runtime is native) says what they need with `Workload.agent_image()`: Debian
packages and trees. The agent image of an experiment holds those of the workloads it runs, and
nothing for the others, so an experiment without them keeps the plain agent image (and its tag).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.core.instances import ImageSpec
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import ServerWorkload

if TYPE_CHECKING:
    from strata.experiment.model import Experiment


def workload_types(exp: Experiment) -> list[str]:
    """The workload types of an experiment's entries (`{type: NAME, ...}` once loaded), in order."""
    seen: list[str] = []
    for w in exp.workloads:
        kind = w.get("type") if isinstance(w, dict) else None
        if kind in WORKLOADS and kind not in seen:
            seen.append(kind)
    return seen


def with_workloads(tools: ImageSpec, kinds: list[str]) -> ImageSpec:
    """The agent's tools image grown by what each workload of `kinds` needs on the host."""
    packages, trees = list(tools.packages), list(tools.trees)
    for kind in kinds:
        wl = WORKLOADS[kind]
        extra = wl.agent_image() if isinstance(wl, ServerWorkload) else ImageSpec()
        packages += [p for p in extra.packages if p not in packages]
        trees += [t for t in extra.trees if t not in trees]
    return ImageSpec(tools.name, packages=tuple(packages), files=tools.files, trees=tuple(trees))
