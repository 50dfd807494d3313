"""The `vm` runtime: what it needs (`available`) and its provisioning (`provision_vm`).

Provisioning builds (or finds) the guest, finds the accelerator by booting it
(accel.py, cached per host boot), chooses the share kind, and yields a
`VmSession`. The session's facts, stored with every result, say what was
measured: the accelerator and, under TCG, `emulated: true` (an emulated
guest's figures are about QEMU's emulator, never comparable with native or
container results as storage performance), the disk and share options, the
guest's kernel and tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable, ContextManager, Iterator

from strata.core.errors import Unsupported
from strata.core.instances import Build, ImageBuilder, ImageSpec, Isolation, Prebuilds
from strata.core.jsondoc import JsonObject, as_obj
from strata.core.params import shorthand
from strata.stack import buildcache
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.vm import accel as accel_probe
from strata.stack.vm import cgroup, qemu, rundir
from strata.stack.vm import session as vm_session
from strata.stack.vm.guest import Guest, cached_guest, ensure_guest, guest_build, guest_facts, guest_key
from strata.stack.vm.params import VmRuntime
from strata.stack.vm.qemu import NINEP_OPTIONS, QEMU, VIRTIOFSD_OPTIONS, qemu_version, virtiofsd_binary
from strata.stack.vm.session import VmSession


def available(params: VmRuntime | None = None, host: JsonObject | None = None) -> str | None:
    """Why this host cannot run the vm runtime, checked without booting anything."""
    params = params or VmRuntime()
    if os.geteuid() != 0:
        return "the vm runtime needs root (the device under test, cgroups, virtiofsd)"
    for tool, pkg in ((QEMU, "qemu-system-x86"), ("qemu-img", "qemu-utils")):
        if not shutil.which(tool):
            return f"{tool} not found (apt-get install {pkg})"
    if cached_guest() is None:
        for tool in ("debootstrap", "mkfs.ext4", "chroot"):
            if not shutil.which(tool):
                return (
                    f"the guest image is not built and {tool} is not installed (apt-get install debootstrap e2fsprogs)"
                )
    if params.share == "virtiofs" and not virtiofsd_binary():
        return "virtiofsd not found (it comes with qemu-system-x86 on Debian 12, later in package virtiofsd)"
    if params.accel == "kvm":
        reason = accel_probe.kvm_unusable()
        known = accelerator_facts().get("kvm")
        if reason or (known and not known.boots):
            return f"KVM does not boot a guest here: {reason or (known.error if known else None)}"
    return None


def accelerator_facts() -> dict[str, accel_probe.Probe]:
    """What the probes of this host boot found (for `strata doctor`): {accel: probe}; {} before any."""
    try:
        cached = as_obj(json.loads(accel_probe.cache_path().read_text()), "the probe cache")
    except (OSError, ValueError):
        return {}
    probes = [accel_probe.probe_of(as_obj(v, k)) for k, v in cached.items() if k.split("|")[1] == qemu_version()]
    return {p.accel: p for p in probes}


def choose_share(params: VmRuntime, probe: accel_probe.Probe) -> str:
    if params.share in ("auto", "virtiofs") and probe.virtiofs:
        return "virtiofs"
    if params.share == "virtiofs":
        raise Unsupported("virtiofs does not work in the guest here (the probe boot could not mount it)")
    if not probe.ninep:
        raise Unsupported("neither virtiofs nor 9p works in the guest here (the probe boot could mount neither)")
    return "9p"


def emulated_reason(used: accel_probe.Probe, kvm_failed: accel_probe.Probe | None) -> str:
    """Why the guest's CPU is emulated (stored in flags.emulated), or "" under KVM."""
    if used.accel != "tcg":
        return ""
    why = f": KVM failed ({kvm_failed.error[:200]})" if kvm_failed is not None and kvm_failed.error else ""
    return f"the guest ran under TCG software emulation{why}; its numbers are the emulator's, never compared"


def session_facts(
    params: VmRuntime, guest: Guest, used: accel_probe.Probe, kvm_failed: accel_probe.Probe | None, share: str
) -> JsonObject:
    facts: JsonObject = {
        "runtime": params.name,
        "type": "vm",
        "accel": used.accel,
        "emulated": used.accel == "tcg",
        "emulated_reason": emulated_reason(used, kvm_failed),
        "qemu_version": qemu_version(),
        "probe_boot_s": used.boot_s,
        "params": params.model_dump(mode="json"),
        "disk": {
            "interface": "virtio-blk",
            "cache": params.disk_cache,
            "aio": params.disk_aio,
            "iothread": params.iothread,
            "queues": params.queues,
        },
        "image_format": params.image_format,
        "guest_filesystem": params.guest_filesystem,
        "share": share,
        "share_options": [*(VIRTIOFSD_OPTIONS if share == "virtiofs" else NINEP_OPTIONS.split(","))],
        "guest": guest_facts(guest),
        "limits_map": "cpus -> vCPUs (rounded up), memory -> guest RAM, bps/iops -> QEMU block throttling "
        "(bind: blkio rules on the device for QEMU and virtiofsd)",
        "host_cpu": "QEMU and virtiofsd, from /proc and wait4 (vm-cpu.json; cpu_ns in the final counters)",
    }
    if kvm_failed is not None:
        facts["kvm_error"] = kvm_failed.error
    return facts


@contextlib.contextmanager
def provision_vm(
    params: VmRuntime, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
) -> Iterator[VmSession]:
    reason = available(params, host)
    if reason:
        raise Unsupported(reason)
    guest = ensure_guest()
    used, kvm_failed = accel_probe.choose(guest, params.accel, journal)
    if not used.boots:
        raise Unsupported(f"the guest does not boot under {used.accel}: {used.error}")
    share = choose_share(params, used)
    session = VmSession(
        params, mounted, journal, guest, used.accel, share, session_facts(params, guest, used, kvm_failed, share)
    )
    try:
        yield session
    finally:
        session.close()


class VmRuntimePlugin(Prebuilds, ImageBuilder, Undoing):
    """`vm`: a QEMU virtual machine per instance (issue 10; study 001: VMs against containers and native)."""

    name = "vm"
    params = VmRuntime
    baseline = False
    isolation: Isolation = "vm"
    paths = ("device", "image", "bind")
    concurrent = True
    limits = True
    # its guests' processes, cgroups, run directories and images, and the scratch directories of a guest build
    undo: Undos = {**qemu.UNDO, **cgroup.UNDO, **rundir.UNDO, **vm_session.UNDO, **buildcache.UNDO}

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def available(self, host: JsonObject, params: VmRuntime | None = None) -> str | None:
        return available(params, host)

    def builds(self, params: VmRuntime) -> list[Build]:
        """The bare guest the accelerator's probe boots (kernel, initramfs, the agent), once per machine."""
        return [Build("VM guest (bare, for the accelerator's probe)", guest_key, lambda: cached_guest() is not None,
                      ensure_guest)]  # fmt: skip

    def image_build(self, name: str, image_of: Callable[[], ImageSpec]) -> Build:
        """A workload's guest: the base with its image's packages, files and trees (Workload.image())."""
        return guest_build(name, image_of)

    def impossible(self, params: VmRuntime, fs: FilesystemParams) -> str | None:
        return None  # the paths decide (device: raw only; image, bind: a file system), as for every runtime

    def target_kind(self, params: VmRuntime, path: str) -> str:
        """The data disk (device, image) is a block device in the guest unless the guest makes a file system."""
        return "dir" if path == "bind" or params.guest_filesystem != "none" else "device"

    def provision(
        self, params: VmRuntime, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> ContextManager[VmSession]:
        return provision_vm(params, mounted, journal, workdir, host)

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]:
        """The runtime, and what the probe boots of this host found for each accelerator."""
        rows = [("vm", available(None, host))]
        for accel, found in sorted(accelerator_facts().items()):
            rows.append((f"vm accel {accel}", None if found.boots else found.error or "does not boot"))
        return rows


VM = VmRuntimePlugin()
