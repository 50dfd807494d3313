"""Collectors: per-second series around each trial, as hooks (STYLE.md item 15)."""

from strata.collectors.cgroup import CgroupCollector
from strata.collectors.diskstats import DiskstatsCollector
from strata.collectors.host import HostCollector

REGISTRY = {c.name: c for c in (HostCollector, DiskstatsCollector, CgroupCollector)}
