"""Workload plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from strata.workloads.base import Workload
from strata.workloads.filebench import FILEBENCH
from strata.workloads.fio import FIO
from strata.workloads.null import NULL
from strata.workloads.ycsb.plugin import YCSB

REGISTRY: dict[str, Workload] = {w.name: w for w in (FIO, FILEBENCH, NULL, YCSB)}

__all__ = ["REGISTRY", "Workload"]
