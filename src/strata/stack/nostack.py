"""The stack of a host's part that runs no instance: nothing is built, nothing below the workload measured.

Across hosts, a server workload's clients may run on a host of their own (a Cassandra cluster spanning
hosts with `clients_on` a host without a node): that host's part runs the clients and no instance, so
it needs no device, file system or runtime. Its part gets these stand-ins instead of the trial's stack
(hosts/part.py), and its result says so in `stack_facts`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, NoReturn

from strata.collectors.base import Collector
from strata.core.instances import InstanceRequest
from strata.core.jsondoc import JsonObject
from strata.core.params import Load
from strata.stack.hostprocs import HostProcesses

REASON = "no instance runs on this host (it runs only the workload's clients): no stack was built"


class NoDevice:
    path = None
    facts: JsonObject = {"built": False, "reason": REASON}
    diskstats: list[str] = []
    collectors: list[Collector] = []
    watch = None


class NoMount:
    mount_options = ""
    mountpoint = None


class NoSession:
    facts: JsonObject = {"built": False, "reason": REASON}

    def watch(self) -> tuple[str, str] | None:
        return None  # nothing built here to die

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[None]:
        yield None

    def target(self, handle: object, host_out: Path) -> NoReturn:
        raise AssertionError("a part without instances has no target")  # _requests makes none

    def start(self, requests: list[InstanceRequest], handle: object, load: Load, sync_dir: Path) -> HostProcesses:
        return HostProcesses(list(requests), sync_dir=sync_dir)


def no_stack() -> tuple[NoDevice, NoMount, NoSession]:
    return NoDevice(), NoMount(), NoSession()
