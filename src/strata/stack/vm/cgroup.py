"""A blkio cgroup for a VM, made only when a `bind` path has bps/iops limits.

A `bind` path has no virtual disk for QEMU to throttle, so the load's limits
become blkio throttle rules on the device under test for the VM's QEMU and
virtiofsd (they do that I/O on the host). Otherwise a VM gets no cgroup of
its own: measured with bench/vm_overhead.py (TCG, two VMs side by side on one
device, 4 rounds each on a quiet host), QEMU in cgroups of its own (cpuacct,
memory, blkio, pids) read 0.93 as many IOPS as a QEMU started by hand, in
none 0.98. The QEMU process's CPU comes from /proc instead (procstat.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from strata.core.jsondoc import JsonObject
from strata.core.params import Limits
from strata.stack.journal import Journal, Undos, strings
from strata.stack.procfs import proc_cgroups

CONTROLLERS = ("blkio",)
BLKIO_KNOBS = {
    "read_bps": "blkio.throttle.read_bps_device",
    "write_bps": "blkio.throttle.write_bps_device",
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
}


def planned_dirs(name: str, own: dict[str, Path] | None = None) -> dict[str, str]:
    """controller -> the VM's cgroup dir ('unified' on cgroup v2), below strata's own cgroup in
    each hierarchy (a VM stays inside whatever limits strata itself runs under)."""
    own = proc_cgroups("self") if own is None else own
    dirs: dict[str, str] = {}
    for key, parent in own.items():
        for c in key.split(","):
            if c in CONTROLLERS:
                dirs[c] = str(parent / name)
    if not dirs and "" in own:
        dirs["unified"] = str(own[""] / name)
    return dirs


class VmCgroup:
    def __init__(self, name: str, journal: Journal):
        self.dirs = planned_dirs(name)
        self.journal = journal
        self.seq = journal.intent("vm_cgroup", dirs=sorted(set(self.dirs.values())))
        for d in sorted(set(self.dirs.values())):
            with contextlib.suppress(FileExistsError):
                Path(d).mkdir()

    @property
    def procs_files(self) -> list[str]:
        return [f"{d}/cgroup.procs" for d in sorted(set(self.dirs.values()))]

    def throttle(self, device_path: str, limits: Limits) -> dict[str, str]:
        """blkio rules on the device for the load's limits; what was set (for the facts)."""
        blkio = self.dirs.get("blkio")
        st = os.stat(device_path)
        dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        done = {}
        for key, value in limits.io().items():
            knob = BLKIO_KNOBS[key]
            if blkio:
                (Path(blkio) / knob).write_text(f"{dev} {value}")
                done[knob] = f"{dev} {value}"
        return done

    def final_text(self) -> str:
        """Its blkio counters in the `cgroup-final.txt` format a container leaves (collectors/cgroup.py)."""
        out = []
        for file in ("blkio.throttle.io_service_bytes", "blkio.throttle.io_serviced"):
            with contextlib.suppress(OSError, KeyError):
                out.append(f"== blkio/{file}\n{(Path(self.dirs['blkio']) / file).read_text().rstrip()}\n")
        return "".join(out)

    def remove(self) -> None:
        _remove(sorted(set(self.dirs.values())))
        self.journal.release(self.seq)


def _undo_vm_cgroup(data: JsonObject) -> None:
    _remove(strings(data, "dirs"))


def _remove(dirs: list[str]) -> None:
    """Kill what is left in the VM's cgroup (only QEMU and virtiofsd ever join it), then rmdir."""
    for d in map(Path, dirs):
        for _ in range(100):
            try:
                pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for _ in range(50):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)  # a killed process leaves the cgroup a moment later


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "vm_cgroup": _undo_vm_cgroup,
}
