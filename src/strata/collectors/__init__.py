"""Collectors: per-second series around each trial, as hooks (docs/architecture.md "Collectors")."""

from typing import Callable

from strata.collectors.base import CollectContext, Collector
from strata.collectors.cgroup import CgroupCollector
from strata.collectors.diskstats import DiskstatsCollector
from strata.collectors.host import HostCollector

# Built for every trial from its CollectContext; layers add their own (DeviceHandle.collectors).
REGISTRY: dict[str, Callable[[CollectContext], Collector]] = {
    c.name: c for c in (HostCollector, DiskstatsCollector, CgroupCollector)
}

__all__ = ["REGISTRY", "CollectContext", "Collector"]
