"""Network namespaces as hosts: a namespace joined to the host by a veth pair.

A storage target (and later a Swarm node) runs in a namespace of its own, so
its traffic crosses a real network path (TCP over a veth pair) that strata can
shape (`tc`) and count (/sys/class/net/X/statistics), and it reaches nothing
but the host: the namespace has one /30 route and no default route.

Addresses come from 192.0.2.0/24 (RFC 5737, documentation) in /30 blocks, one
per namespace. That range may already be in use by the host itself (on the
project's VMs eth0 is 192.0.2.2/24 with the gateway at 192.0.2.1), so a block
is taken only if no host address, gateway, neighbour or narrower route lies in
it; the choice and the addresses are made under a lock (flock on a file in /run/lock) so
concurrent strata runs never pick the same block. A /30 route is more specific
than the host's /24, so it shadows only the four addresses of its block.

Processes run inside with `nsenter --net=/run/netns/NAME` (never `ip netns
exec`, which remounts /sys and hides the cgroup mounts; see docs/host-notes.md).

The fabric (`latency` one way on each end, `rate`) is a `tc` qdisc on both veth
ends: netem where the kernel has it; without netem a rate alone is shaped by
tbf and an added latency is unsupported (with the reason).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from strata.collectors.netdev import read_counters
from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, text
from strata.core.proc import sh
from strata.stack.journal import Journal, Undos, need

POOL = ipaddress.IPv4Network("192.0.2.0/24")
NETNS_DIR = Path("/run/netns")
LOCK_FILE = Path("/run/lock/strata-netns.lock")  # not /run/netns itself: `ip netns add` flocks that
BLOCK_PREFIX = 30


# ---- names and addresses ----------------------------------------------------------


def names(tag: str = "", token: str | None = None) -> tuple[str, str, str]:
    """(namespace, host-side veth, namespace-side veth); veth names fit IFNAMSIZ (15)."""
    token = token or secrets.token_hex(4)
    tag = re.sub(r"[^a-z0-9]", "", tag.lower())[:12]
    return f"strata-{tag + '-' if tag else ''}{token}", f"st{token}h", f"st{token}n"


def pick_block(
    pool: ipaddress.IPv4Network,
    addresses: list[ipaddress.IPv4Address],
    networks: list[ipaddress.IPv4Network],
    prefix: int = BLOCK_PREFIX,
) -> ipaddress.IPv4Network | None:
    """The highest /`prefix` (/30: one namespace; wider: a bridge of several) of `pool` holding none of
    `addresses` (host addresses, gateways, neighbours) and overlapping none of `networks` narrower than
    the pool (other namespaces' links)."""
    narrow = [n for n in networks if n.prefixlen > pool.prefixlen and n.overlaps(pool)]
    for block in reversed(list(pool.subnets(new_prefix=prefix))):
        if any(a in block for a in addresses) or any(n.overlaps(block) for n in narrow):
            continue
        return block
    return None


def host_usage() -> tuple[list[ipaddress.IPv4Address], list[ipaddress.IPv4Network]]:
    """Every IPv4 address the host uses or talks to, and every route's destination."""
    addrs: list[ipaddress.IPv4Address] = []
    nets: list[ipaddress.IPv4Network] = []
    for link in json.loads(sh(["ip", "-4", "-j", "addr", "show"]).stdout or "[]"):
        for a in link.get("addr_info", []):
            addrs.append(ipaddress.IPv4Address(a["local"]))
            nets.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for r in json.loads(sh(["ip", "-4", "-j", "route", "show", "table", "all"]).stdout or "[]"):
        if r.get("gateway"):
            addrs.append(ipaddress.IPv4Address(r["gateway"]))
        dst = r.get("dst", "default")
        if dst != "default":
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    for n in json.loads(sh(["ip", "-4", "-j", "neigh", "show"]).stdout or "[]"):
        if set(n.get("state", [])) <= {"FAILED", "INCOMPLETE"} and n.get("state"):
            continue  # asked for and never answered: nobody there
        with contextlib.suppress(KeyError, ValueError):
            addrs.append(ipaddress.IPv4Address(n["dst"]))
    return addrs, nets


@contextlib.contextmanager
def allocation_lock() -> Iterator[None]:
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---- the namespace host -----------------------------------------------------------


@dataclass(frozen=True)
class Link:
    host_if: str
    ns_if: str
    host_addr: str
    ns_addr: str
    prefix: int = BLOCK_PREFIX


@dataclass(frozen=True)
class NsHost:
    """A network namespace with a veth link to the host."""

    name: str
    link: Link

    @property
    def path(self) -> str:
        return str(NETNS_DIR / self.name)

    def argv(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace (network only: mounts, /sys and cgroups stay the host's)."""
        return ["nsenter", f"--net={self.path}", *argv]

    def run(self, argv: list[str], timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh(self.argv(argv), timeout=timeout, check=check)

    def exists(self) -> bool:
        return Path(self.path).exists()

    def facts(self) -> JsonObject:
        return {
            "netns": self.name,
            "host_if": self.link.host_if,
            "ns_if": self.link.ns_if,
            "host_addr": self.link.host_addr,
            "ns_addr": self.link.ns_addr,
            "prefix": self.link.prefix,
        }


def undo_netns(data: JsonObject) -> None:
    name = need(data, "name")
    if (NETNS_DIR / name).exists():
        sh(["ip", "netns", "delete", name], timeout=30)


def undo_veth(data: JsonObject) -> None:
    host_if = need(data, "host_if")
    if iface_exists(host_if):
        sh(["ip", "link", "delete", host_if], timeout=30)


@contextlib.contextmanager
def namespace_host(journal: Journal, tag: str = "", pool: ipaddress.IPv4Network = POOL) -> Iterator[NsHost]:
    """Make a namespace and its veth link (each journaled first); remove both on exit."""
    ns_name, host_if, ns_if = names(tag)
    seqs: list[tuple[int, JsonObject, Callable[[JsonObject], None]]] = []
    try:
        with allocation_lock():
            block = pick_block(pool, *host_usage())
            if block is None:
                raise StrataError(
                    f"no free /{BLOCK_PREFIX} left in {pool} for a network namespace",
                    "remove stale namespaces (`strata cleanup`, `ip netns list`)",
                )
            host_addr, ns_addr = (str(a) for a in list(block.hosts())[:2])
            data: JsonObject = {"name": ns_name}
            seqs.append((journal.intent("netns", **data), data, undo_netns))
            sh(["ip", "netns", "add", ns_name])
            host = NsHost(ns_name, Link(host_if, ns_if, host_addr, ns_addr))
            data = {"host_if": host_if}
            seqs.append((journal.intent("veth", **data, netns=ns_name), data, undo_veth))
            sh(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns_name])
            _configure(host)
        yield host
    finally:
        for seq, data, undo in reversed(seqs):
            undo(data)
            journal.release(seq)


def _configure(host: NsHost) -> None:
    """Addresses, links up, loopback up; no IPv6 on the link (its chatter would count as traffic)."""
    link = host.link
    Path(f"/proc/sys/net/ipv6/conf/{link.host_if}/disable_ipv6").write_text("1")
    host.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{link.ns_if}.disable_ipv6=1"])
    sh(["ip", "addr", "add", f"{link.host_addr}/{link.prefix}", "dev", link.host_if])
    sh(["ip", "link", "set", link.host_if, "up"])
    host.run(["ip", "addr", "add", f"{link.ns_addr}/{link.prefix}", "dev", link.ns_if])
    host.run(["ip", "link", "set", link.ns_if, "up"])
    host.run(["ip", "link", "set", "lo", "up"])


def _ip_link(ifname: str) -> JsonObject | None:
    """The interface as netlink shows it in this process's network namespace, or None. /sys/class/net shows
    the namespace sysfs was mounted in, which for an agent on a test host (a network namespace that binds
    the machine's /sys) is another one: the fallback wherever /sys does not show an interface."""
    r = sh(["ip", "-j", "link", "show", "dev", ifname], check=False, timeout=10)
    try:
        return json.loads(r.stdout)[0] if r.returncode == 0 else None
    except (ValueError, IndexError, KeyError):
        return None


def iface_exists(ifname: str) -> bool:
    return Path(f"/sys/class/net/{ifname}").exists() or _ip_link(ifname) is not None


def link_state(ifname: str) -> str:
    """operstate of an interface on the host ('up', 'down', 'lowerlayerdown'), or 'absent'."""
    try:
        return Path(f"/sys/class/net/{ifname}/operstate").read_text().strip()
    except OSError:
        link = _ip_link(ifname)
        return "absent" if link is None else str(link.get("operstate", "unknown")).lower()


def link_counters(ifname: str) -> dict[str, int]:
    """Bytes and packets through an interface on the host (rx = from the namespace)."""
    counters = read_counters(ifname)
    if counters is None:
        raise StrataError(f"no interface {ifname} in this network namespace", "a bug: report it")
    return counters


# ---- the fabric: latency and rate on both veth ends -------------------------------

_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|ms|msec|us|usec|µs)\s*$", re.IGNORECASE)
_TIME_US = {"s": 1e6, "sec": 1e6, "ms": 1e3, "msec": 1e3, "us": 1.0, "usec": 1.0, "µs": 1.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?)(bit|bps)\s*$", re.IGNORECASE)
_RATE_MUL = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def parse_time_us(value: str | int | float) -> float:
    """'0.05ms', '50us', '1s' -> microseconds. A bare number must be 0 (the unit is never guessed)."""
    if isinstance(value, bool):
        raise ValueError("a time, not a boolean")
    if isinstance(value, (int, float)):
        if value == 0:
            return 0.0
        raise ValueError(f"{value!r} has no unit; write e.g. 50us, 0.05ms, 1ms")
    m = _TIME.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a time; write e.g. 50us, 0.05ms, 1ms")
    return float(m.group(1)) * _TIME_US[m.group(2).lower()]


def parse_rate_bit(value: str | int) -> int:
    """'10gbit', '100mbit', '1gibit' -> bits per second; as in tc(8), 'bps' means bytes per second."""
    if isinstance(value, bool):
        raise ValueError("a rate, not a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("a rate must be positive")
        raise ValueError(f"{value!r} has no unit; write e.g. 10gbit, 100mbit")
    m = _RATE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a rate; write e.g. 10gbit, 100mbit, 1gibit")
    bits = float(m.group(1)) * _RATE_MUL[m.group(2).lower()] * (8 if m.group(3).lower() == "bps" else 1)
    if bits < 8000:
        raise ValueError(f"{value!r} is below 8kbit, too slow for a storage link")
    return int(bits)


def format_us(us: float) -> str:
    return f"{us:g}us"


def format_rate(bit: int) -> str:
    """10000000000 -> '10gbit' (the largest SI unit that divides it), as tc writes rates."""
    for unit, mul in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bit % mul == 0:
            return f"{bit // mul}{unit}"
    return f"{bit}bit"


@dataclass(frozen=True)
class Fabric:
    latency_us: float = 0.0  # added on each veth end: one way; a round trip adds twice this
    rate_bit: int | None = None  # bits per second, each direction

    def is_null(self) -> bool:
        return self.latency_us == 0 and self.rate_bit is None


def qdisc_kind(fabric: Fabric, missing: dict[str, str | None]) -> tuple[str | None, str | None]:
    """(qdisc to use, None) or (None, reason). `missing`: kind -> None if the kernel has it, else why not."""
    if fabric.is_null():
        return None, None
    if missing.get("netem") is None:
        return "netem", None
    if fabric.latency_us == 0 and missing.get("tbf") is None:
        return "tbf", None
    return None, f"an added latency needs the netem qdisc, which this kernel lacks: {missing['netem']}"


def qdisc_argv(dev: str, fabric: Fabric, kind: str) -> list[str]:
    """`tc qdisc replace` on `dev` giving it the fabric's delay and rate."""
    if kind == "netem":
        opts = ["delay", format_us(fabric.latency_us)]
        if fabric.rate_bit:
            opts += ["rate", f"{fabric.rate_bit}bit"]
        return ["tc", "qdisc", "replace", "dev", dev, "root", "netem", *opts, "limit", "100000"]
    if kind == "tbf":
        if fabric.rate_bit is None:
            raise ValueError("the tbf qdisc shapes a rate: this fabric has none (qdisc_kind picks netem)")
        burst = max(128 << 10, fabric.rate_bit // 8 // 1000)  # 1 ms of bytes; at least two GSO frames
        return [
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            f"{fabric.rate_bit}bit",
            "burst",
            str(burst),
            "latency",
            "100ms",
        ]
    raise ValueError(f"unknown qdisc {kind}")


_QDISC_PROBES = {"netem": ["delay", "1us"], "tbf": ["rate", "1gbit", "burst", "131072", "latency", "10ms"]}
_probed: dict[str, str | None] = {}


def qdisc_missing(kind: str) -> str | None:
    """None if the kernel has the qdisc, else tc's answer; probed on the loopback of a throwaway
    namespace (`unshare --net`), never on a real interface."""
    if kind not in _probed:
        r = sh(
            ["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", kind, *_QDISC_PROBES[kind]],
            check=False,
            timeout=20,
        )
        _probed[kind] = None if r.returncode == 0 else f"`tc qdisc add ... {kind}`: {r.stderr.strip() or 'failed'}"
    return _probed[kind]


def _undo_qdisc(data: JsonObject) -> None:
    dev, netns = need(data, "dev"), text(data, "netns")
    argv = ["tc", "qdisc", "del", "dev", dev, "root"]
    if netns:
        if not (NETNS_DIR / netns).exists():
            return  # the qdisc went with its namespace
        argv = ["nsenter", f"--net={NETNS_DIR / netns}", *argv]
    elif not iface_exists(dev):
        return
    sh(argv, check=False, timeout=30)


@contextlib.contextmanager
def shaped(host: NsHost, fabric: Fabric, journal: Journal) -> Iterator[JsonObject]:
    """Both veth ends shaped by the fabric for the duration; yields its facts."""
    kind, reason = qdisc_kind(fabric, {k: qdisc_missing(k) for k in ("netem", "tbf")} if not fabric.is_null() else {})
    if reason:
        raise StrataError(reason, "use latency 0 on this host, or a kernel with sch_netem")
    facts: JsonObject = {
        "latency_us": fabric.latency_us,
        "rate_bit": fabric.rate_bit,
        "qdisc": kind,
        "added_rtt_us": 2 * fabric.latency_us,
    }
    ends: list[JsonObject] = [{"dev": host.link.host_if}, {"dev": host.link.ns_if, "netns": host.name}]
    seqs: list[tuple[int, JsonObject]] = []
    try:
        for end in ends if kind else []:
            seqs.append((journal.intent("qdisc", **end), end))
            argv = qdisc_argv(text(end, "dev"), fabric, kind or "")
            sh(host.argv(argv) if end.get("netns") else argv)
        yield facts
    finally:
        for seq, end in reversed(seqs):
            _undo_qdisc(end)
            journal.release(seq)


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "netns": undo_netns,
    "veth": undo_veth,
    "qdisc": _undo_qdisc,
}
