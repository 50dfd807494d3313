"""Workload plugins, one line each in `MODULES` (docs/architecture.md "Adding a plugin").

Each module holds its plugin as `PLUGIN`, annotated as the `Workload` (the core Protocol) of its parameters, so
the type checker (scripts/lint) rejects one that does not satisfy it there, naming the plugin and the member.
"""

import importlib
from typing import Any

from strata.core.metrics import EMPTY, MetricSchema
from strata.core.params import Layer
from strata.workloads.base import Workload

# The workloads' modules under strata.workloads, in the registry's order (the spec reference's, the merged
# result fields'): a new workload is one line here.
MODULES = (
    "fio",
    "filebench",
    "null",
    "ycsb.plugin",
    "pgbench.plugin",
    "sysbench.plugin",
)


def _plugin(module: str) -> Workload[Any]:
    plugin: Workload[Any] = importlib.import_module(f"{__name__}.{module}").PLUGIN
    return plugin


PLUGINS: list[Workload[Any]] = [_plugin(m) for m in MODULES]
REGISTRY: dict[str, Workload[Any]] = {w.name: w for w in PLUGINS}


def plugin_of(params: Layer) -> Workload[Any]:
    """The plugin whose parameters `params` are (the registry's entry of their `type`)."""
    return REGISTRY[params.type]


def metrics_of(workload_type: str) -> MetricSchema:
    """The result fields a workload declares; none for a type not registered (results of another version)."""
    w = REGISTRY.get(workload_type)
    return w.metrics if w is not None else EMPTY


def declared() -> list[MetricSchema]:
    """Every registered workload's result fields, in the registry's order."""
    return [w.metrics for w in REGISTRY.values()]


__all__ = ["REGISTRY", "Workload", "declared", "metrics_of", "plugin_of"]
