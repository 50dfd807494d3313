"""NVMe over TCP: the kernel target (nvmet, nvmet-tcp) configured through configfs, and
nvme-cli's initiator on the host.

nvmet's ports are global in configfs, but nvmet-tcp opens its listening socket
in the network namespace of the task that enables the port, which is the task
that links the subsystem into the port. So every configfs write is made from
strata, except that one symlink, which `ln -s` makes inside the storage host's
namespace (`nsenter --net`). A file backing store is served with
`buffered_io=0` (O_DIRECT: the storage host's page cache never answers).

The initiator connects with a short controller-loss timeout so that a dead
target fails I/O within seconds instead of reconnecting for ten minutes.

Not runnable on the project's VMs (no nvmet/nvme-tcp modules): the configfs
writes are unit-tested against a directory, nothing more.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, text, whole
from strata.core.proc import sh
from strata.stack.bounded import run_bounded
from strata.stack.journal import Journal, Undos, need
from strata.stack.netns import NsHost

CONFIGFS = Path("/sys/kernel/config")
PORT = 4420
CTRL_LOSS_TMO_S = 5
RECONNECT_DELAY_S = 1

# ("mkdir", path) | ("write", path, text) | ("symlink", link, target) | ("unlink", path) | ("rmdir", path)
Op = tuple[str | Path, ...]


@dataclass(frozen=True)
class NvmetTarget:
    root: Path  # .../nvmet in configfs
    nqn: str
    port_id: int
    addr: str
    backing: str  # a block device or a file
    svc: int = PORT

    @property
    def subsystem(self) -> Path:
        return self.root / "subsystems" / self.nqn

    @property
    def port(self) -> Path:
        return self.root / "ports" / str(self.port_id)

    def create_ops(self) -> list[Op]:
        ns = self.subsystem / "namespaces" / "1"
        file_backed = not Path(self.backing).is_block_device() if Path(self.backing).exists() else True
        return [
            ("mkdir", self.subsystem),
            ("write", self.subsystem / "attr_allow_any_host", "1"),
            ("mkdir", ns),
            ("write", ns / "device_path", self.backing),
            *([("write", ns / "buffered_io", "0")] if file_backed else []),
            ("write", ns / "enable", "1"),
            ("mkdir", self.port),
            ("write", self.port / "addr_trtype", "tcp"),
            ("write", self.port / "addr_adrfam", "ipv4"),
            ("write", self.port / "addr_traddr", self.addr),
            ("write", self.port / "addr_trsvcid", str(self.svc)),
            ("symlink", self.port / "subsystems" / self.nqn, self.subsystem),  # enables the port: in the netns
        ]

    def remove_ops(self) -> list[Op]:
        ns = self.subsystem / "namespaces" / "1"
        return [
            ("unlink", self.port / "subsystems" / self.nqn),
            ("rmdir", self.port),
            ("write", ns / "enable", "0"),
            ("rmdir", ns),
            ("rmdir", self.subsystem),
        ]


def run_ops(ops: list[Op], symlink: Callable[[Path, Path], None], missing_ok: bool = False) -> None:
    """Apply configfs operations in order. `symlink(link, target)` makes the one link that must be
    made inside the storage host's namespace. With `missing_ok` (removal), absent entries are skipped."""
    for op in ops:
        kind, path = op[0], Path(op[1])
        try:
            if kind == "mkdir":
                path.mkdir(parents=True)  # on configfs the parent (a default group) exists: plain mkdir
            elif kind == "write":
                if missing_ok and not path.exists():
                    continue
                path.write_text(str(op[2]))
            elif kind == "symlink":
                path.parent.mkdir(parents=True, exist_ok=True)
                symlink(path, Path(op[2]))
            elif kind == "unlink":
                path.unlink()
            elif kind == "rmdir":
                path.rmdir()
        except FileNotFoundError:
            if not missing_ok:
                raise


def free_port_id(root: Path) -> int:
    ports = root / "ports"
    used = {int(p.name) for p in ports.iterdir() if p.name.isdigit()} if ports.is_dir() else set()
    return max(used, default=0) + 1


def symlink_in(host: NsHost) -> Callable[[Path, Path], None]:
    def make(link: Path, target: Path) -> None:
        host.run(["ln", "-s", str(target), str(link)])

    return make


def ensure_configfs() -> Path:
    if not (CONFIGFS / "nvmet").is_dir():
        if not os.path.ismount(CONFIGFS):
            sh(["mount", "-t", "configfs", "none", str(CONFIGFS)])
        if not (CONFIGFS / "nvmet").is_dir():
            raise StrataError("no nvmet in configfs", "modprobe nvmet nvmet-tcp")
    return CONFIGFS / "nvmet"


def _undo_nvmet(data: JsonObject) -> None:
    port_id = whole(data, "port_id")
    if port_id is None:
        raise KeyError("port_id")
    t = NvmetTarget(Path(need(data, "root")), need(data, "nqn"), port_id, text(data, "addr"), text(data, "backing"))
    run_ops(t.remove_ops(), symlink=lambda link, target: None, missing_ok=True)


@contextlib.contextmanager
def nvmet_target(host: NsHost, backing: str, journal: Journal, root: Path | None = None) -> Iterator[NvmetTarget]:
    root = root or ensure_configfs()
    target = NvmetTarget(
        root,
        f"nqn.2014-08.org.strata:{host.name}-{secrets.token_hex(3)}",
        free_port_id(root),
        host.link.ns_addr,
        backing,
    )
    data: JsonObject = {"root": str(root), "nqn": target.nqn, "port_id": target.port_id}
    seq = journal.intent("nvmet", **data)
    try:
        run_ops(target.create_ops(), symlink_in(host))
        yield target
    finally:
        _undo_nvmet(data)
        journal.release(seq)


# ---- initiator --------------------------------------------------------------------


def connect_argv(addr: str, svc: int, nqn: str) -> list[str]:
    return [
        "nvme",
        "connect",
        "--transport=tcp",
        f"--traddr={addr}",
        f"--trsvcid={svc}",
        f"--nqn={nqn}",
        f"--ctrl-loss-tmo={CTRL_LOSS_TMO_S}",
        f"--reconnect-delay={RECONNECT_DELAY_S}",
    ]


def find_namespace(nqn: str, sysfs: Path = Path("/sys/class/nvme-subsystem")) -> tuple[str, str] | None:
    """(block device name nvmeXnY, controller nvmeX) of the subsystem `nqn` on the host."""
    for sub in sorted(sysfs.glob("nvme-subsys*")):
        with contextlib.suppress(OSError):
            if (sub / "subsysnqn").read_text().strip() != nqn:
                continue
            blocks = sorted(p.name for p in sub.iterdir() if p.name.startswith("nvme") and "n" in p.name[4:])
            ctrls = sorted(p.name for p in sub.iterdir() if p.name.startswith("nvme") and p.name[4:].isdigit())
            if blocks and ctrls:
                return blocks[0], ctrls[0]
    return None


def _undo_nvme_connect(data: JsonObject) -> None:
    nqn = need(data, "nqn")
    if find_namespace(nqn) is not None:
        r = run_bounded(["nvme", "disconnect", f"--nqn={nqn}"], timeout_s=CTRL_LOSS_TMO_S + 15)
        if not r.ok:
            raise RuntimeError(r.describe())


@dataclass
class NvmeClient:
    nqn: str
    device: str  # /dev/nvmeXnY
    controller: str  # nvmeX

    def alive(self) -> str | None:
        try:
            state = Path(f"/sys/class/nvme/{self.controller}/state").read_text().strip()
        except OSError:
            return f"the controller {self.controller} is gone"
        return None if state == "live" else f"the controller {self.controller} is {state}"

    def abort(self) -> None:
        run_bounded(["nvme", "disconnect", f"--nqn={self.nqn}"], timeout_s=CTRL_LOSS_TMO_S + 15)


@contextlib.contextmanager
def nvme_client(target: NvmetTarget, journal: Journal) -> Iterator[NvmeClient]:
    data: JsonObject = {"nqn": target.nqn}
    seq = journal.intent("nvme_connect", **data)
    try:
        sh(connect_argv(target.addr, target.svc, target.nqn), timeout=60)
        found = None
        for _ in range(100):
            found = find_namespace(target.nqn)
            if found:
                break
            time.sleep(0.1)
        if not found:
            raise StrataError(
                f"nvme connect to {target.addr}:{target.svc} gave no namespace for {target.nqn}",
                "see `nvme list-subsys` and dmesg",
            )
        yield NvmeClient(target.nqn, f"/dev/{found[0]}", found[1])
    finally:
        _undo_nvme_connect(data)
        journal.release(seq)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "nvmet": _undo_nvmet,
    "nvme_connect": _undo_nvme_connect,
}
