"""Provision a remote device: a storage host in a namespace of its own, and the client.

Built bottom up, each resource journaled before it is made and removed in
reverse order (also by `strata cleanup` after `kill -9`):

  run dir -> backing file (filled like a loop image) -> namespace + veth
  -> fabric qdiscs -> target (nbdkit | nvmet) -> client (nbdfuse + mount + loop
  | nbd-client | nvme connect)

The handle's `diskstats` is [client block device, the disk(s) holding the
backing store], so the cache check compares the workload's bytes with the
bytes that really reached the storage host's disk. Its `collectors` sample the
target's and the FUSE client's CPU and the link's bytes and packets; `watch()`
says when the remote side is gone (see watch.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from strata.collectors.base import Collector
from strata.collectors.netdev import NetdevCollector
from strata.collectors.process import ProcessCollector
from strata.core.errors import StrataError, Unsupported
from strata.core.jsondoc import JsonObject
from strata.stack import netns
from strata.stack.blockdev import DeviceHandle, block_facts, disk_of, fill_file, write_problems
from strata.stack.journal import Journal, Undos, need
from strata.stack.marked import Daemon
from strata.stack.remote import caps as caps_mod
from strata.stack.remote import nbd, nvme
from strata.stack.remote.model import RemoteDevice
from strata.stack.remote.watch import Check, StallCheck, Watcher

RUN_FILES = ("nbdkit.pid", "nbdkit.log", "nbdfuse.pid", "nbdfuse.log")
DROP_CACHE_S = 0.5  # drop the storage host's cached pages of the backing store this often (nbd.CacheDropper)
STALL_S = 30.0  # I/O in flight and none completing this long: the remote is lost (watch.py)
CLIENT_PATHS = {
    ("nbd", "fuse"): "nbdfuse+loop(direct-io)",
    ("nbd", "kernel"): "nbd-client(kernel nbd)",
    ("nvme-tcp", "kernel"): "nvme-cli(kernel nvme-tcp)",
}


@dataclass
class RemoteHandle(DeviceHandle):
    """A DeviceHandle whose `watch` is its watcher's check (polled while a trial runs)."""

    watcher: Watcher | None = None

    def __post_init__(self) -> None:
        if self.watcher is not None:
            self.watch = self.watcher.check


def backing_problems(spec: RemoteDevice) -> list[str]:
    """Why strata must not serve `backing_path` (the `block` device's guard); [] for a file."""
    if spec.backing_path is None:
        return []
    return write_problems(spec.backing_path, spec.destroy)


def backing_chain(path: str) -> list[str]:
    """Kernel names of the disks that hold `path`'s bytes: a file's disk; a block device, and for a
    loop device the disk of its backing file too."""
    if not Path(path).is_block_device():
        disk = disk_of(path)
        return [disk] if disk else []
    kname = Path(os.path.realpath(path)).name
    chain = [kname]
    with contextlib.suppress(OSError):
        chain += backing_chain((Path("/sys/block") / kname / "loop" / "backing_file").read_text().strip())
    return chain


# ---- run dir and backing store ------------------------------------------------------


def _undo_remote_dir(data: JsonObject) -> None:
    _remove_run_dir(Path(need(data, "path")))


def _remove_run_dir(d: Path) -> None:
    for name in RUN_FILES:
        (d / name).unlink(missing_ok=True)
    for sub in (d / "mnt", d):
        with contextlib.suppress(FileNotFoundError):
            sub.rmdir()  # only when empty: never removes anything else


@contextlib.contextmanager
def run_dir(workdir: Path, name: str, journal: Journal) -> Iterator[Path]:
    d = workdir / f"remote-{name}-{secrets.token_hex(3)}"
    seq = journal.intent("remote_dir", path=str(d))
    try:
        d.mkdir(parents=True)
        yield d
    finally:
        _remove_run_dir(d)
        journal.release(seq)


@contextlib.contextmanager
def open_backing(spec: RemoteDevice, rdir: Path, journal: Journal) -> Iterator[tuple[str, int]]:
    """(path, size in bytes) of the store the target serves."""
    if spec.backing_path is not None:
        problems = backing_problems(spec)
        if problems:
            raise StrataError(
                "; ".join(problems),
                f"set `destroy: true` on the remote device {spec.name} "
                f"if the data of {spec.backing_path} may be erased",
            )
        size = int(Path(f"/sys/class/block/{Path(os.path.realpath(spec.backing_path)).name}/size").read_text()) * 512
        yield spec.backing_path, size
        return
    size_bytes = spec.size
    assert size_bytes is not None, "RemoteDevice gives a backing file its default size"
    path = rdir / "backing.img"
    seq = journal.intent("file", path=str(path))
    try:
        fill_file(path, size_bytes)
        yield str(path), size_bytes
    finally:
        path.unlink(missing_ok=True)
        journal.release(seq)


# ---- the device -------------------------------------------------------------------


@contextlib.contextmanager
def provision_remote(spec: RemoteDevice, journal: Journal, workdir: Path) -> Iterator[RemoteHandle]:
    host_caps = caps_mod.probe()
    why = caps_mod.problems(spec, host_caps)
    if why:
        raise Unsupported(f"remote device {spec.name}: {why}")
    client_kind, why_not = caps_mod.choose_client(spec, host_caps)
    if client_kind is None:  # problems() above has said why already
        raise Unsupported(f"remote device {spec.name}: {why_not}")
    if spec.served_at:
        with _attached(spec, spec.served_at, client_kind, journal, workdir) as handle:
            yield handle
        return
    with contextlib.ExitStack() as es:
        rdir = es.enter_context(run_dir(workdir, spec.name, journal))
        backing, size_bytes = es.enter_context(open_backing(spec, rdir, journal))
        host = es.enter_context(netns.namespace_host(journal, tag="remote"))
        fabric = es.enter_context(netns.shaped(host, spec.fabric, journal))
        if spec.transport == "nbd":
            handle = es.enter_context(_nbd(spec, client_kind, host, backing, rdir, journal))
        else:
            handle = es.enter_context(_nvme(spec, host, backing, journal))
        handle.size_bytes = size_bytes
        handle.diskstats += [d for d in backing_chain(backing) if d not in handle.diskstats]
        handle.facts.update(_facts(spec, client_kind, host, fabric, backing, handle.diskstats[1:]))
        handle.collectors.append(NetdevCollector("remote_link", [host.link.host_if]))
        watcher = handle.watcher
        assert watcher is not None, "_nbd and _nvme give their handle a watcher"
        watcher.checks[:0] = [_namespace_check(host)]
        watcher.start()
        es.callback(watcher.stop)
        yield handle


def _facts(
    spec: RemoteDevice,
    client_kind: str,
    host: netns.NsHost,
    fabric: JsonObject,
    backing: str,
    backing_disks: list[str],
) -> JsonObject:
    return {
        "type": "remote",
        "transport": spec.transport,
        "client": client_kind,
        "client_path": CLIENT_PATHS[(spec.transport, client_kind)],
        "network": host.facts(),
        "fabric": fabric,
        "backing": backing_facts(backing, backing_disks),
    }


def backing_facts(backing: str, disks: list[str]) -> JsonObject:
    """What the target serves from, and the disk that holds its bytes."""
    return {
        "path": backing,
        "kind": "block" if Path(backing).is_block_device() else "file",
        "disks": [*disks],
        "disk_facts": block_facts(disks[-1]) if disks else {},
    }


def _namespace_check(host: netns.NsHost) -> Check:
    def check() -> str | None:
        if not host.exists():
            return f"the storage host's namespace {host.name} is gone"
        state = netns.link_state(host.link.host_if)
        return None if state == "up" else f"the link {host.link.host_if} to the storage host is {state}"

    return check


def _daemon_check(what: str, daemon: Daemon) -> Check:
    def check() -> str | None:
        if daemon.alive():
            return None
        return f"{what} (pid {daemon.pid}) exited: {daemon.log_tail(300).strip() or 'killed'}"

    return check


@contextlib.contextmanager
def _nbd(
    spec: RemoteDevice, client_kind: str, host: netns.NsHost, backing: str, rdir: Path, journal: Journal
) -> Iterator[RemoteHandle]:
    target = nbd.start_nbdkit(backing, rdir, journal, host=host)
    dropper = nbd.CacheDropper(backing, DROP_CACHE_S)
    try:
        if DROP_CACHE_S:
            dropper.start()
        facts: JsonObject = {
            "target": "nbdkit",
            "target_version": nbd.version("nbdkit"),
            "target_options": [*nbd.NBDKIT_OPTIONS],
            "port": nbd.PORT,
            "target_cache_drop_s": DROP_CACHE_S,
        }
        checks = [_daemon_check("the target nbdkit", target)]
        if client_kind == "fuse":
            with nbd.fuse_client(host.link.ns_addr, nbd.PORT, rdir, journal) as client:
                kname = Path(client.loop).name
                facts.update(
                    client_version=nbd.version("nbdfuse"),
                    connections=nbd.FUSE_CONNECTIONS,
                    fuse_mount=str(client.mountdir),
                    **block_facts(kname),
                )
                cpu = ProcessCollector("remote_procs", {"target": target.pid, "client": client.daemon.pid})
                watcher = Watcher([*checks, client.alive, StallCheck(kname, STALL_S)], client.abort)
                yield RemoteHandle(spec.name, client.loop, 0, [kname], facts, [cpu], watcher=watcher)
        else:
            with nbd.kernel_client(host.link.ns_addr, nbd.PORT, journal) as client:
                kname = Path(client.device).name
                facts.update(
                    client_version=nbd.version("nbd-client"),
                    connections=nbd.KERNEL_CONNECTIONS,
                    timeout_s=nbd.KERNEL_TIMEOUT_S,
                    **block_facts(kname),
                )
                cpu = ProcessCollector("remote_procs", {"target": target.pid})
                watcher = Watcher([*checks, client.alive, StallCheck(kname, STALL_S)], client.abort)
                yield RemoteHandle(spec.name, client.device, 0, [kname], facts, [cpu], watcher=watcher)
    finally:
        dropper.stop()
        target.stop(journal)


@contextlib.contextmanager
def _nvme(spec: RemoteDevice, host: netns.NsHost, backing: str, journal: Journal) -> Iterator[RemoteHandle]:
    with nvme.nvmet_target(host, backing, journal) as target, nvme.nvme_client(target, journal) as client:
        kname = Path(client.device).name
        facts = {
            "target": "nvmet",
            "nqn": target.nqn,
            "port": target.svc,
            "ctrl_loss_tmo_s": nvme.CTRL_LOSS_TMO_S,
            "client_version": nbd.version("nvme"),
            **block_facts(kname),
        }
        watcher = Watcher([client.alive, StallCheck(kname, STALL_S)], client.abort)
        yield RemoteHandle(
            spec.name, client.device, 0, [kname], facts, [], watcher=watcher
        )  # target CPU: kernel threads


@contextlib.contextmanager
def _attached(
    spec: RemoteDevice, served_at: str, client_kind: str, journal: Journal, workdir: Path
) -> Iterator[RemoteHandle]:
    """The client alone, attached to the target another node of the experiment serves (serve.py): the
    storage host's disks are not this host's, so the manager brings their evidence (hosts/storage.py)."""
    addr, _, port = served_at.split("/")[0].rpartition(":")
    with contextlib.ExitStack() as es:
        rdir = es.enter_context(run_dir(workdir, spec.name, journal))
        if client_kind == "fuse":
            fuse = es.enter_context(nbd.fuse_client(addr, int(port), rdir, journal))
            device, version, conns = fuse.loop, nbd.version("nbdfuse"), nbd.FUSE_CONNECTIONS
            cpu: list[Collector] = [ProcessCollector("remote_procs", {"client": fuse.daemon.pid})]
            client: nbd.FuseClient | nbd.KernelClient = fuse
        else:
            client = kernel = es.enter_context(nbd.kernel_client(addr, int(port), journal))
            device, version, conns, cpu = kernel.device, nbd.version("nbd-client"), nbd.KERNEL_CONNECTIONS, []
        kname = Path(device).name
        facts = {
            "type": "remote",
            "transport": spec.transport,
            "client": client_kind,
            "client_path": CLIENT_PATHS[(spec.transport, client_kind)],
            "storage_host": spec.host,
            "served_at": spec.served_at,
            "client_version": version,
            "connections": conns,
            **block_facts(kname),
        }
        size_bytes = int(Path(f"/sys/block/{kname}/size").read_text()) * 512
        watcher = Watcher([client.alive, StallCheck(kname, STALL_S)], client.abort)
        handle = RemoteHandle(spec.name, device, size_bytes, [kname], facts, cpu, watcher=watcher)
        watcher.start()
        es.callback(watcher.stop)
        yield handle


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "remote_dir": _undo_remote_dir,
}
