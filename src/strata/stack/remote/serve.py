"""The storage host's side of a remote device whose `host:` is another node of the experiment.

The agent on the storage host (hosts/agent.py) serves the store here: the
backing store (a file filled like a loop image, or a block device behind the
`block` device's guard), nbdkit listening on the node's own address and a free
port, and the cache dropper (nbd.py says why). The client host's agent then
attaches to ADDR:PORT (device.py, `served_at`) over the network between the
two nodes, which is the fabric under test: strata shapes nothing there.

`stats()` is the storage host's evidence for the trial's cache check: what
nbdkit fetched from and wrote to storage (/proc/PID/io) and what the backing
store's disks moved; the manager takes it before the go and after the end.
"""

from __future__ import annotations

import contextlib
import errno
import secrets
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from strata.collectors.diskstats import read_diskstats
from strata.core.errors import StrataError, Unsupported
from strata.core.jsondoc import JsonObject
from strata.stack.journal import Journal
from strata.stack.marked import Daemon
from strata.stack.remote import caps as caps_mod
from strata.stack.remote import nbd
from strata.stack.remote.device import DROP_CACHE_S, backing_chain, backing_facts, open_backing, run_dir
from strata.stack.remote.model import RemoteDevice

PORTS = range(nbd.PORT, nbd.PORT + 64)  # one target per remote device of a run


def free_port(address: str, ports: range = PORTS) -> int:
    """The first port of `ports` nothing listens on at `address`."""
    for port in ports:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
            try:
                s.bind((address, port))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    continue
                raise StrataError(f"cannot listen on {address}:{port}: {e}", "give the agent the node's own address")
            return port
    raise StrataError(f"no free port in {ports.start}-{ports.stop - 1} on {address}", "fewer remote devices per run")


@dataclass
class ServedTarget:
    address: str
    port: int
    daemon: Daemon
    backing: str
    disks: list[str]
    facts: JsonObject
    token: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def served_at(self) -> str:
        return f"{self.address}:{self.port}/{self.token}"

    def stats(self) -> JsonObject:
        """nbdkit's I/O counters and the backing disks' diskstats, now."""
        io: JsonObject = {}
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{self.daemon.pid}/io").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in ("read_bytes", "write_bytes"):
                    io[key] = int(value)
        disks: JsonObject = {name: {**counters} for name, counters in read_diskstats(self.disks).items()}
        alive = self.daemon.alive()
        doc: JsonObject = {"alive": alive, "target_io": io, "disks": disks}
        if not alive:
            doc["exit"] = {"returncode": self.daemon.proc.poll(), "log": self.daemon.log_tail(400).strip()}
        return doc

    def to_json(self) -> JsonObject:
        return {"served_at": self.served_at, "facts": self.facts}


def _check_listening(daemon: Daemon, address: str, port: int) -> None:
    """nbdkit accepts a connection on ADDR:PORT now (the client hosts are told to attach there)."""
    try:
        socket.create_connection((address, port), timeout=5).close()
    except OSError as e:
        state = "running" if daemon.alive() else f"exited {daemon.proc.poll()}"
        raise StrataError(
            f"the target nbdkit ({state}) does not accept connections on {address}:{port}: {e}; "
            f"its log: {daemon.log_tail(400).strip() or '(empty)'}",
            "check that the agent's address is this node's own (`strata doctor --hosts`)",
        )


def served_problems() -> str | None:
    """Why this node cannot serve an nbd target (None: it can)."""
    c = caps_mod.probe()
    return "needs root" if not c.root else c.tool("nbdkit")


@contextlib.contextmanager
def serve_target(spec: RemoteDevice, journal: Journal, workdir: Path, address: str) -> Iterator[ServedTarget]:
    why = served_problems()
    if why:
        raise Unsupported(f"remote device {spec.name}: this storage host cannot serve it: {why}")
    with contextlib.ExitStack() as es:
        rdir = es.enter_context(run_dir(workdir, spec.name, journal))
        backing, size_bytes = es.enter_context(open_backing(spec, rdir, journal))
        port = free_port(address)
        daemon = nbd.start_nbdkit(backing, rdir, journal, addr=address, port=port)
        es.callback(daemon.stop, journal)
        _check_listening(daemon, address, port)
        dropper = nbd.CacheDropper(backing, DROP_CACHE_S)
        dropper.start()
        es.callback(dropper.stop)
        disks = backing_chain(backing)
        facts: JsonObject = {
            "target": "nbdkit",
            "target_version": nbd.version("nbdkit"),
            "target_options": [*nbd.NBDKIT_OPTIONS],
            "target_cache_drop_s": DROP_CACHE_S,
            "address": address,
            "port": port,
            "size_bytes": size_bytes,
            "backing": backing_facts(backing, disks),
        }
        yield ServedTarget(address, port, daemon, backing, disks, facts)
