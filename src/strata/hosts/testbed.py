"""Test hosts on one machine: network namespaces on a bridge, each with its own dockerd, joined in a Swarm.

The integration tests and bench/swarm_overhead.py need several "machines"
without having them. Each test host is

- a network namespace (journaled, `strata-swarm-<host>-<token>`), linked by a veth pair
  to a bridge on this machine; the bridge holds a free /28 of 192.0.2.0/24
  chosen as stack/netns.py chooses its /30s (no host address, gateway,
  neighbour or narrower route in it, under the same lock), so 192.0.2.1 and
  192.0.2.2, which the machine's own eth0 may use, are never taken;
- its own `dockerd` (own data root, exec root, socket, pidfile; `--bridge=none
  --iptables=false --ip-masq=false`), started with `nsenter --net=` (never `ip
  netns exec`: it remounts /sys and hides the cgroup mounts) and `unshare
  --uts` so that each node has its own hostname (`strata-<host>`); journaled
  as a private daemon (stack/runtimes/docker/daemon.py), whose undo stops it and
  everything it started;
- a Swarm node: `swarm init --advertise-addr` on the first, `swarm join` on the
  others, with a node label `strata.core.host=<host>`.

Swarm's own overlay network (ingress) gets its addresses from
`--default-addr-pool`, a second free /28 of 192.0.2.0/24 (apart from the
bridge's, which it would shadow inside the manager's namespace), so that no
address outside that range appears even inside the namespaces; strata's
services use `--network host` only.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue
from strata.core.proc import sh
from strata.stack import netns
from strata.stack.journal import Journal, Undos
from strata.stack.procfs import remove_tree
from strata.stack.runtimes.docker import client as dk
from strata.stack.runtimes.docker import daemon
from strata.stack.runtimes.docker.daemon import DAEMON_ENV, DaemonPaths, dockerd_argv, undo_daemon, wait_ready

BRIDGE_PREFIX = 28  # 14 addresses: the bridge and up to 13 hosts
MAX_TEST_HOSTS = 13
NETNS_PREFIX = "strata-swarm-"  # each test host's namespace: NETNS_PREFIX + <host>-<token>
DRIVER = "overlay2"


@dataclass
class BedHost:
    name: str  # the host's name in an experiment's `hosts:`
    netns: str
    addr: str
    sock: str
    root: Path  # its state dir and workdir live here
    node_id: str = ""

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    def docker(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return dk.docker(self.sock, *args, check=check, timeout=timeout)

    def spec(self) -> dict[str, str]:
        """This host as an experiment's `hosts:` entry names it."""
        return {
            "label": f"strata.core.host={self.name}",
            "docker": f"unix://{self.sock}",
            "docker_socket": self.sock,
            "state_dir": str(self.state_dir),
            "workdir": str(self.workdir),
        }


@dataclass
class Bed:
    bridge: str
    subnet: str
    bridge_addr: str
    pool: str  # Swarm's own overlay networks take their addresses here, apart from the bridge's
    hosts: list[BedHost] = field(default_factory=list)

    @property
    def manager(self) -> BedHost:
        return self.hosts[0]

    def spec_hosts(self) -> dict[str, dict[str, str]]:
        return {h.name: h.spec() for h in self.hosts}


def _undo_bridge(data: JsonObject) -> None:
    if Path(f"/sys/class/net/{data['name']}").exists():
        sh(["ip", "link", "delete", str(data["name"])], timeout=30)


def _undo_root(data: JsonObject) -> None:
    remove_tree(Path(str(data["path"])))


Undo = Callable[[JsonObject], object]
Seqs = list[tuple[int, JsonObject, Undo]]  # what was made, undone in reverse on the way out


def _tracked(journal: Journal, seqs: Seqs, kind: str, undo: Undo, **data: JsonValue) -> None:
    seqs.append((journal.intent(kind, **data), data, undo))


@contextlib.contextmanager
def swarm_bed(journal: Journal, names: list[str], root: Path) -> Iterator[Bed]:
    """Make len(names) test hosts joined in a Swarm (the first is its manager); undo all of it on exit."""
    if not 1 <= len(names) <= MAX_TEST_HOSTS:
        raise StrataError(f"{len(names)} test hosts", f"from 1 to {MAX_TEST_HOSTS}")
    token = secrets.token_hex(3)
    seqs: Seqs = []
    try:
        bed = _network(journal, seqs, names, token, root)
        for h in bed.hosts:
            _daemon(journal, seqs, h)
        _swarm(bed)
        yield bed
    finally:
        for seq, data, undo in reversed(seqs):
            try:
                undo(data)
            finally:
                journal.release(seq)


def _network(journal: Journal, seqs: Seqs, names: list[str], token: str, root: Path) -> Bed:
    bridge = f"stb{token}"
    _tracked(journal, seqs, "testbed-root", _undo_root, path=str(root))
    with netns.allocation_lock():
        block = netns.pick_block(netns.POOL, *netns.host_usage(), prefix=BRIDGE_PREFIX)
        if block is None:
            raise StrataError(f"no free /{BRIDGE_PREFIX} in {netns.POOL}", "remove stale namespaces (strata cleanup)")
        addrs = [str(a) for a in block.hosts()]
        used, routes = netns.host_usage()
        pool = netns.pick_block(netns.POOL, used, [*routes, block], prefix=BRIDGE_PREFIX)
        if pool is None:
            raise StrataError(f"no second free /{BRIDGE_PREFIX} in {netns.POOL}", "remove stale namespaces")
        _tracked(journal, seqs, "bridge", _undo_bridge, name=bridge)
        sh(["ip", "link", "add", bridge, "type", "bridge"])
        Path(f"/proc/sys/net/ipv6/conf/{bridge}/disable_ipv6").write_text("1")
        sh(["ip", "addr", "add", f"{addrs[0]}/{BRIDGE_PREFIX}", "dev", bridge])
        sh(["ip", "link", "set", bridge, "up"])
        bed = Bed(bridge, str(block), addrs[0], str(pool))
        for i, name in enumerate(names):
            ns = f"{NETNS_PREFIX}{name}-{token}"[:40]
            host_if, ns_if = f"st{token}{i}h", f"st{token}{i}n"
            _tracked(journal, seqs, "netns", netns.undo_netns, name=ns)
            sh(["ip", "netns", "add", ns])
            _tracked(journal, seqs, "veth", netns.undo_veth, host_if=host_if)
            sh(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns])
            Path(f"/proc/sys/net/ipv6/conf/{host_if}/disable_ipv6").write_text("1")
            sh(["ip", "link", "set", host_if, "master", bridge, "up"])
            enter = ["nsenter", f"--net={netns.NETNS_DIR / ns}"]
            sh([*enter, "sysctl", "-q", "-w", f"net.ipv6.conf.{ns_if}.disable_ipv6=1"])
            sh([*enter, "ip", "addr", "add", f"{addrs[i + 1]}/{BRIDGE_PREFIX}", "dev", ns_if])
            sh([*enter, "ip", "link", "set", ns_if, "up"])
            sh([*enter, "ip", "link", "set", "lo", "up"])
            bed.hosts.append(BedHost(name, ns, addrs[i + 1], "", root / name))
    return bed


def _daemon(journal: Journal, seqs: Seqs, h: BedHost) -> None:
    """The host's dockerd, in its namespace, with a hostname of its own."""
    paths = DaemonPaths(secrets.token_hex(4), h.root / "docker")
    data = {**paths.journal_data(DRIVER, True), "netns": h.netns}
    _tracked(journal, seqs, "daemon", undo_daemon, **data)
    for d in (paths.run_dir, paths.data_root, h.state_dir, h.workdir):
        d.mkdir(parents=True, exist_ok=True)
    paths.config.write_text("{}\n")
    argv = [
        "nsenter",
        f"--net={netns.NETNS_DIR / h.netns}",
        "unshare",
        "--uts",
        "sh",
        "-c",
        f'hostname strata-{h.name} && exec "$@"',
        "sh",
        *dockerd_argv(paths, DRIVER),
    ]
    with open(paths.log, "w") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=DAEMON_ENV, start_new_session=True
        )
    journal.update(seqs[-1][0], pid=proc.pid)
    seqs[-1][1]["pid"] = proc.pid
    wait_ready(paths, proc)
    h.sock = paths.sock


def _swarm(bed: Bed) -> None:
    first = bed.manager
    pool = ipaddress.ip_network(bed.pool)
    first.docker(
        "swarm",
        "init",
        "--advertise-addr",
        first.addr,
        "--listen-addr",
        f"{first.addr}:2377",
        "--default-addr-pool",
        str(pool),
        "--default-addr-pool-mask-length",
        str(pool.prefixlen),
    )
    join = first.docker("swarm", "join-token", "-q", "worker").stdout.strip()
    for h in bed.hosts[1:]:
        h.docker(
            "swarm",
            "join",
            "--advertise-addr",
            h.addr,
            "--listen-addr",
            f"{h.addr}:2377",
            "--token",
            join,
            f"{first.addr}:2377",
        )
    for h in bed.hosts:
        h.node_id = h.docker("info", "--format", "{{.Swarm.NodeID}}").stdout.strip()
        first.docker("node", "update", "--label-add", f"strata.core.host={h.name}", h.node_id)
    _wait_nodes_ready(first, len(bed.hosts))


def _wait_nodes_ready(manager: BedHost, n: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = manager.docker("node", "ls", "--format", "{{.Status}}").stdout.split()
        if states.count("Ready") == n:
            return
        time.sleep(0.5)
    raise StrataError(
        f"the test Swarm's {n} nodes were not all Ready within {timeout_s:.0f} s", "read the dockerd logs"
    )


# The undo action of each kind a test bed journals: its root and bridge, each host's namespace, link and daemon
# (`strata cleanup` declares them beside the plugins').
UNDO: Undos = {"bridge": _undo_bridge, "testbed-root": _undo_root, **netns.UNDO, **daemon.UNDO}
