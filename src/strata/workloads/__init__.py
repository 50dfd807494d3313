"""Workload plugins, listed explicitly (docs/architecture.md "Adding a plugin").

Each is listed as a `Workload` (the core Protocol), so the type checker (scripts/lint) rejects one that
does not satisfy it, naming the plugin and the member.
"""

from typing import Any

from strata.core.metrics import EMPTY, MetricSchema
from strata.core.params import Layer
from strata.workloads.base import Workload
from strata.workloads.filebench import FILEBENCH
from strata.workloads.fio import FIO
from strata.workloads.null import NULL
from strata.workloads.pgbench.plugin import PGBENCH
from strata.workloads.sysbench.plugin import SYSBENCH
from strata.workloads.ycsb.plugin import YCSB

PLUGINS: list[Workload[Any]] = [FIO, FILEBENCH, NULL, YCSB, PGBENCH, SYSBENCH]
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
