"""What this host can build for a remote device, and which client path it gets.

Probed once per process, before any I/O (docs/style.md item 3). Selection is a pure
function of the probe so that unit tests can give it any host: the kernel nbd
client where the `nbd` module exists, otherwise nbdfuse plus a loop device
(which needs nothing but FUSE: the path on the project's VMs, whose kernel has
no modules). NVMe/TCP needs the kernel target and initiator (nvmet, nvmet-tcp,
nvme-tcp) and configfs.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from strata.core.proc import sh
from strata.stack import netns
from strata.stack.remote.model import RemoteDevice

TOOLS = ("ip", "tc", "nsenter", "unshare", "losetup", "nbdkit", "nbdfuse", "nbd-client", "nvme")
PACKAGES = {
    "ip": "iproute2",
    "tc": "iproute2",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "losetup": "mount",
    "nbdkit": "nbdkit",
    "nbdfuse": "libnbd-bin",
    "nbd-client": "nbd-client",
    "nvme": "nvme-cli",
}


@dataclass(frozen=True)
class Caps:
    root: bool
    tools: dict[str, str | None]  # program -> path, None if missing
    fuse: str | None  # None: /dev/fuse and the fuse file system exist; else why not
    nbd_module: str | None  # None: the kernel nbd client exists; else why not
    nvme_modules: str | None  # None: nvmet, nvmet-tcp, nvme-tcp and configfs; else why not
    qdisc_missing: dict[str, str | None] = field(default_factory=dict)  # netem/tbf -> None or why not

    def tool(self, name: str) -> str | None:
        return None if self.tools.get(name) else f"`{name}` not found (apt-get install {PACKAGES[name]})"


def _modprobe(module: str) -> str | None:
    if Path(f"/sys/module/{module.replace('-', '_')}").exists():
        return None
    r = sh(["modprobe", module], check=False, timeout=60)
    return None if r.returncode == 0 else f"modprobe {module} failed: {(r.stderr or r.stdout).strip() or r.returncode}"


def _fuse() -> str | None:
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse (modprobe fuse)"
    if "fuse" not in Path("/proc/filesystems").read_text().split():
        return "the kernel has no fuse file system (modprobe fuse)"
    return None


def _nvme_modules() -> str | None:
    for m in ("nvmet", "nvmet-tcp", "nvme-tcp"):
        why = _modprobe(m)
        if why:
            return f"no nvmet/nvme-tcp kernel modules: {why}"
    if "configfs" not in Path("/proc/filesystems").read_text().split():
        return "the kernel has no configfs (the nvmet target is configured through it)"
    return None


@functools.lru_cache(maxsize=1)
def probe() -> Caps:
    """This host, looked at once (loads modules where it can, as `strata doctor` does for zram)."""
    root = os.geteuid() == 0
    nbd = _modprobe("nbd") if root else "needs root"
    nvme = _nvme_modules() if root else "needs root"
    return Caps(
        root,
        {t: shutil.which(t) for t in TOOLS},
        _fuse(),
        nbd,
        nvme,
        {k: netns.qdisc_missing(k) for k in ("netem", "tbf")} if root else {},
    )


def choose_client(spec: RemoteDevice, caps: Caps) -> tuple[str | None, str | None]:
    """(client path, None) or (None, why this host cannot attach the device)."""
    if spec.transport == "nvme-tcp":
        why = caps.nvme_modules or caps.tool("nvme")
        return (None, why) if why else ("kernel", None)
    kernel = caps.nbd_module and f"no kernel nbd client: {caps.nbd_module}" or caps.tool("nbd-client")
    fuse = caps.fuse or caps.tool("nbdfuse") or caps.tool("losetup")
    if spec.client == "kernel":
        return (None, kernel) if kernel else ("kernel", None)
    if spec.client == "fuse":
        return (None, fuse) if fuse else ("fuse", None)
    if not kernel:
        return "kernel", None
    if not fuse:
        return "fuse", None
    return None, f"{kernel}; and the FUSE client: {fuse}"


def problems(spec: RemoteDevice, caps: Caps) -> str | None:
    """Why this host cannot build `spec` (None: it can). Checked before any I/O."""
    if not caps.root:
        return "needs root (network namespaces, loop devices)"
    if spec.host is not None:  # the client alone: another node serves the store (serve.py checks there)
        return choose_client(spec, caps)[1]
    for tool in ("ip", "tc", "nsenter", "unshare") + (("nbdkit",) if spec.transport == "nbd" else ()):
        if caps.tool(tool):
            return caps.tool(tool)
    _, why = choose_client(spec, caps)
    if why:
        return why
    _, why = netns.qdisc_kind(spec.fabric, caps.qdisc_missing)
    return why


def available(spec: RemoteDevice | None = None) -> str | None:
    """None if this host can build `spec` (default: an NBD device with no added latency), else why not."""
    return problems(spec or RemoteDevice(), probe())


def doctor_rows() -> list[tuple[str, str, str | None]]:
    """Rows for `strata doctor`: each transport and client path, and the fabric knobs."""
    c = probe()
    rows = [
        ("device", f"remote:{label}", problems(spec, c))
        for label, spec in (
            ("nbd (fuse client: nbdfuse + loop)", RemoteDevice(client="fuse")),
            ("nbd (kernel client: nbd + nbd-client)", RemoteDevice(client="kernel")),
            ("nvme-tcp (kernel nvmet + nvme-cli)", RemoteDevice(transport="nvme-tcp")),
        )
    ]
    rows.append(("device", "remote fabric latency (netem)", problems(RemoteDevice(latency=50.0), c)))
    rows.append(("device", "remote fabric rate (netem or tbf)", problems(RemoteDevice(rate=10**9), c)))
    return rows
