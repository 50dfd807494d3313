"""The collector contract: sampled once a second around each trial (sampler.py), as hooks.

Collectors are built from a CollectContext: the disks to sample (the device's
diskstats list), the instances' cgroups (the runtime's), and how the files of the
host the instances run on are read (here, or on a Kubernetes node through its agent). A layer can bring
collectors of its own (a remote device's target CPU and link, a VM's QEMU
process): DeviceHandle.collectors, added by the trial to the registered ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from strata.core.jsondoc import JsonObject


def read_file(path: str) -> str:
    """A file of this machine (/proc, /sys), as the collectors read it here."""
    return Path(path).read_text()


@dataclass
class CollectContext:
    diskstats: list[str]  # kernel names of the disks below the workload
    cgroups: list[dict[str, str]]  # per instance: controller -> cgroup dir on the host
    # how a /proc or /sys file of the host the instances run on is read: here, or through the agent of the
    # Kubernetes node they run on (stack/runtimes/kubernetes/agent.py); raises OSError when it cannot be
    read: Callable[[str], str] = read_file


class Collector(Protocol):
    name: str  # the key of its series and summary in the stored result

    def sample(self) -> object: ...  # one reading (cumulative counters or levels)
    def series(self) -> JsonObject: ...  # everything sampled, per second (stored with the result)
    def summary(self) -> JsonObject: ...  # totals over the trial window
