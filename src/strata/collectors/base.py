"""The collector contract: sampled once a second around each trial (sampler.py), as hooks.

Collectors are built from a CollectContext: the disks to sample (the device's
diskstats list) and the instances' cgroups (the runtime's). A layer can bring
collectors of its own (a remote device's target CPU and link, a VM's QEMU
process): DeviceHandle.collectors, added by the trial to the registered ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from strata.core.jsondoc import JsonObject


@dataclass
class CollectContext:
    diskstats: list[str]  # kernel names of the disks below the workload
    cgroups: list[dict[str, str]]  # per instance: controller -> cgroup dir on the host


class Collector(Protocol):
    name: str  # the key of its series and summary in the stored result

    def sample(self) -> object: ...  # one reading (cumulative counters or levels)
    def series(self) -> JsonObject: ...  # everything sampled, per second (stored with the result)
    def summary(self) -> JsonObject: ...  # totals over the trial window
