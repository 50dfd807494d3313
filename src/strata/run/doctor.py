"""What this host can build: every plugin of every layer, with the reason when not (docs/style.md, item 3).

`strata doctor` prints these rows; on an experiment's hosts each agent answers
them for its own host (`strata doctor --hosts`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol, runtime_checkable

from strata.core.host import host_facts
from strata.core.jsondoc import JsonObject
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS

TOOLS = {"losetup": "util-linux", "wipefs": "util-linux", "debootstrap": "debootstrap"}
LAYERS = (("device", DEVICES), ("filesystem", FILESYSTEMS), ("runtime", RUNTIMES), ("workload", WORKLOADS))


NOT_PROBED = "not probed (--quick): only the daemon itself can tell"


@runtime_checkable
class Doctor(Protocol):
    """A plugin with variants (docker's storage drivers, the remote device's transports) that answers for
    each: (variant, None or why not); `probe`: ask the real thing (a daemon), not only the cheap checks."""

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]: ...


def check_doc(layer: str, name: str, reason: str | None) -> dict[str, str | None]:
    """One row of `checks` as `strata doctor --json` gives it: ok, no, or not probed (`--quick`)."""
    status = "ok" if reason is None else "not probed" if reason == NOT_PROBED else "no"
    return {"layer": layer, "name": name, "status": status, "reason": reason}


def checks(probe: bool = True) -> list[tuple[str, str, str | None]]:
    """(layer, name, None or why not) for every plugin of every layer; a plugin with variants (storage
    drivers) answers for each through its `doctor(host, probe)`."""
    host = host_facts()
    rows: list[tuple[str, str, str | None]] = [
        ("host", "root", None if os.geteuid() == 0 else "strata needs root to make devices and mounts")
    ]
    for layer, registry in LAYERS:
        for name, plugin in registry.items():
            if isinstance(plugin, Doctor):
                rows += [(layer, n, r) for n, r in plugin.doctor(host, probe)]
            else:
                rows.append((layer, name, plugin.available(host)))
    cg = host["cgroup_version"]
    ctl = (
        sorted(p.name for p in Path("/sys/fs/cgroup").iterdir() if p.is_dir())
        if cg == 1
        else Path("/sys/fs/cgroup/cgroup.controllers").read_text().split()
    )
    for need in ("cpu", "memory", "blkio" if cg == 1 else "io"):
        rows.append(("cgroup", f"v{cg} {need}", None if need in ctl else f"controller {need} is not mounted"))
    for tool, pkg in TOOLS.items():
        rows.append(("tool", tool, None if shutil.which(tool) else f"not installed ({pkg})"))
    return rows
