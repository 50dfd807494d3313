"""strata doctor: what this host can build, each with the reason when not (STYLE.md item 3)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from strata.host import host_facts
from strata.spec.model import FS_TYPES, STORAGE_DRIVERS
from strata.stack import device as device_layer
from strata.stack import filesystem as fs_layer

NAME = "doctor"
HELP = "list what this host can build: devices, file systems, docker drivers, cgroups, KVM, tools"

TOOLS = {"fio": "fio", "losetup": "util-linux", "wipefs": "util-linux", "dockerd": "docker.io",
         "debootstrap": "debootstrap", "fuse-overlayfs": "fuse-overlayfs", "strata-wml": "build: cargo build --release in engine/"}


def add_arguments(p):
    p.add_argument("--quick", action="store_true",
                   help="skip starting a docker daemon per storage driver (~10 s); drivers then show as not probed")


NOT_PROBED = "not probed (--quick): only the daemon itself can tell"


def checks(probe: bool = True) -> list[tuple[str, str, str | None]]:
    host = host_facts()
    rows: list[tuple[str, str, str | None]] = [("host", "root", None if os.geteuid() == 0 else "strata needs root to make devices and mounts")]
    for kind in ("loop", "zram", "block"):
        rows.append(("device", kind, device_layer.available(kind)))
    for fs in FS_TYPES:
        rows.append(("filesystem", fs, fs_layer.available(fs)))
    rows.append(("runtime", "native", None))
    try:
        from strata.stack import docker
        for drv in STORAGE_DRIVERS:
            reason = docker.available(drv, host)
            if reason is None:
                reason = docker.probe_driver(drv, Path("/var/tmp/strata-doctor")) if probe else NOT_PROBED
            rows.append(("runtime", f"docker:{drv}", reason))
        rows.append(("runtime", "docker:system", docker.available("system", host)))
    except ImportError as e:
        rows.append(("runtime", "docker", f"docker support not installed: {e}"))
    cg = host["cgroup_version"]
    ctl = sorted(p.name for p in Path("/sys/fs/cgroup").iterdir() if p.is_dir()) if cg == 1 else \
        Path("/sys/fs/cgroup/cgroup.controllers").read_text().split()
    for need in ("cpu", "memory", "blkio" if cg == 1 else "io"):
        rows.append(("cgroup", f"v{cg} {need}", None if need in ctl else f"controller {need} is not mounted"))
    rows.append(("vm", "kvm", None if Path("/dev/kvm").exists() else "no /dev/kvm (VM runtime would need TCG emulation)"))
    for tool, pkg in TOOLS.items():
        rows.append(("tool", tool, None if shutil.which(tool) else f"not installed ({pkg})"))
    return rows


def main(args) -> int:
    host = host_facts()
    print(f"{host['os']}, kernel {host['kernel']}, {host['cpus']} CPUs, {host['memory_bytes'] >> 30} GiB, "
          f"cgroup v{host['cgroup_version']}" + (f", virtualized ({host['virtualization']})" if host["virtualization"] else ""))
    for layer, name, reason in checks(probe=not args.quick):
        status = "ok" if reason is None else "?" if reason == NOT_PROBED else "NO"
        print(f"  {layer:<10} {name:<22} {status}" + (f"  {reason}" if reason else ""))
    if host.get("note"):
        print(f"note: {host['note']}")
    return 0
