"""Facts about the host, stored with every result (provenance) and used by `available()` checks."""

from __future__ import annotations

import os
import platform
import shutil
from functools import lru_cache
from pathlib import Path

from strata import __version__
from strata.core.jsondoc import JsonObject
from strata.core.proc import sh


def _first_line(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    r = sh(argv, check=False, timeout=20)
    out = (r.stdout or r.stderr).strip()
    return out.splitlines()[0] if out else None


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def cgroup_version() -> int:
    return 2 if Path("/sys/fs/cgroup/cgroup.controllers").exists() else 1


def virtualization() -> str | None:
    r = _first_line(["systemd-detect-virt", "--vm"]) if shutil.which("systemd-detect-virt") else None
    if r and r != "none":
        return r
    vendor = Path("/sys/class/dmi/id/sys_vendor")
    if vendor.exists() and any(
        v in vendor.read_text() for v in ("QEMU", "KVM", "VMware", "Xen", "Microsoft", "Amazon", "Google")
    ):
        return vendor.read_text().strip()
    return "vm" if "hypervisor" in Path("/proc/cpuinfo").read_text() else None


@lru_cache(maxsize=1)
def host_facts() -> JsonObject:
    mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    virt = virtualization()
    facts: JsonObject = {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": _os_release(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_bytes": int(mem) * 1024,
        "cgroup_version": cgroup_version(),
        "virtualization": virt,
        "root": os.geteuid() == 0,
        "strata_version": __version__,
        "python": platform.python_version(),
        "dockerd_version": _first_line(["dockerd", "--version"]),
    }
    if virt:
        facts["note"] = (
            "measured in a virtual machine: the hypervisor may cache writes "
            "(sequential O_DIRECT writes of GiB/s), compare stacks as ratios"
        )
    return facts


def _os_release() -> str:
    p = Path("/etc/os-release")
    if p.exists():
        for line in p.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return platform.platform()
