"""Workload plugins, listed explicitly (STYLE.md item 2)."""

from strata.workloads.filebench import FILEBENCH
from strata.workloads.fio import FIO
from strata.workloads.null import NULL

REGISTRY = {w.name: w for w in (FIO, FILEBENCH, NULL)}
