"""Resolve: the only step that looks at the host (STYLE.md item 4).

The plan says what a run would do, without side effects: every stack to
build, every device it will write, every trial, each unsupported cell with
its reason, and the errors that stop the run (a device holding data).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.errors import SpecErrors
from strata.spec.expand import Skipped, Trial, expand
from strata.stack import device as device_layer
from strata.stack import filesystem as fs_layer
from strata.workloads import REGISTRY as WORKLOADS


@dataclass
class Plan:
    trials: list[Trial]
    skipped: list[Skipped]
    unsupported: dict[str, str] = field(default_factory=dict)   # trial id -> reason
    writes: list[str] = field(default_factory=list)             # what gets written, in words

    @property
    def runnable(self) -> list[Trial]:
        return [t for t in self.trials if t.id not in self.unsupported]


def runtime_available(rt, host: dict) -> str | None:
    if rt.type == "native":
        return None
    from strata.stack import docker
    return docker.available(rt.storage_driver, host)


def resolve(exp, workloads, host: dict) -> Plan:
    trials, skipped = expand(exp, workloads)
    plan = Plan(trials, skipped)
    errors = []
    for i, dev in enumerate(exp.devices):
        if dev.type == "block":
            problems = device_layer.block_problems(dev)
            if problems:
                errors.append((f"devices[{i}]", "; ".join(problems),
                               f"set `destroy: true` on {dev.path} if its data may be erased, or use a loop device"))
            plan.writes.append(f"{dev.path} (block device, ERASED)" + ("" if dev.destroy else ""))
        elif dev.type == "loop":
            plan.writes.append(f"{dev.backing_file or exp.workdir + '/' + dev.name + '.img'} ({dev.size >> 20} MiB loop image, created and removed)")
        else:
            plan.writes.append(f"a new zram device of {dev.size >> 20} MiB")
    if errors:
        raise SpecErrors(errors, "plan")
    cache: dict[tuple, str | None] = {}
    for t in trials:
        reason = None
        for key, check in (
            (("dev", t.device.type), lambda: device_layer.available(t.device.type)),
            (("fs", t.filesystem.type), lambda: fs_layer.available(t.filesystem.type)),
            (("rt", t.runtime.name), lambda: runtime_available(t.runtime, host)),
            (("wl", t.workload.type), lambda: WORKLOADS[t.workload.type].available(host)),
        ):
            if key not in cache:
                cache[key] = check()
            reason = reason or cache[key]
        if reason:
            plan.unsupported[t.id] = reason
    return plan
