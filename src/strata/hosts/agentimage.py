"""What the agent image holds for the experiment, besides the agent's own tools (deploy.py `tools_image`).

A workload that runs tools on the host itself (`HostTools`: its instances under the native runtime,
a server workload's clients and native servers, a device probe) says what they need with
`agent_image()`: Debian packages and trees. The agent image of an experiment holds those of the
workloads it runs, and those of the bandwidth probe when a load's limit preset is sized by it (`BW`,
`ALL`: experiment/presets.py), and nothing for the others, so an experiment that runs none of them
keeps the plain agent image (and its tag). The image's cache key sorts what it holds
(`ImageSpec.key`), so the same declarations give the same key in any order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.core.instances import ImageSpec
from strata.experiment import presets
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import HostTools

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


def with_workloads(tools: ImageSpec, kinds: list[str], probe: bool = False) -> ImageSpec:
    """The agent's tools image grown by what each workload of `kinds` needs on the host, and by what the
    device probe needs there when `probe` (a load's preset is sized by a device's bandwidth)."""
    plugins: list[object] = [WORKLOADS[kind] for kind in kinds]
    if probe:
        plugins.append(presets.probe())
    return tools.grown(p.agent_image() for p in plugins if isinstance(p, HostTools))


def for_experiment(tools: ImageSpec, exp: Experiment) -> ImageSpec:
    """The agent image of an experiment: `tools` grown by its workloads' and, where needed, the probe's."""
    return with_workloads(tools, workload_types(exp), presets.needs_probe(exp.loads))
