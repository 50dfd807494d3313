"""Bytes and packets through network interfaces (a storage link's veth), per second.

From /sys/class/net/X/statistics on the host. On the host end of a veth, rx is
what the namespace sent (read data coming back from a storage target) and tx
what the host sent to it (requests and written data).
"""

from __future__ import annotations

import time
from pathlib import Path

from strata.collectors.sampler import column, deltas
from strata.core.jsondoc import JsonObject

COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")


def read_counters(ifname: str, sysfs: Path = Path("/sys/class/net")) -> dict[str, int] | None:
    try:
        return {k: int((sysfs / ifname / "statistics" / k).read_text()) for k in COUNTERS}
    except (OSError, ValueError):
        return proc_net_dev(ifname)


def proc_net_dev(ifname: str, text: str | None = None) -> dict[str, int] | None:
    """The counters from /proc/net/dev, which shows this process's network namespace. /sys/class/net
    shows the namespace sysfs was mounted in: an agent on a test host (a network namespace) binds the
    machine's /sys, where the test host's links are not."""
    try:
        text = Path("/proc/net/dev").read_text() if text is None else text
    except OSError:
        return None
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        f = rest.split()
        if name.strip() == ifname and len(f) >= 10:
            return {"rx_bytes": int(f[0]), "rx_packets": int(f[1]), "tx_bytes": int(f[8]), "tx_packets": int(f[9])}
    return None


class NetdevCollector:
    def __init__(self, name: str, ifnames: list[str], sysfs: Path = Path("/sys/class/net")):
        self.name, self.ifnames, self.sysfs = name, list(ifnames), sysfs
        self.times: list[float] = []
        self.samples: list[dict[str, dict[str, int] | None]] = []

    def sample(self) -> dict[str, dict[str, int] | None]:
        row = {i: read_counters(i, self.sysfs) for i in self.ifnames}
        self.samples.append(row)
        self.times.append(time.time())
        return row

    def _rows(self, ifname: str) -> tuple[list[float], list[dict[str, int]]]:
        pairs = [(t, r) for t, s in zip(self.times, self.samples) if (r := s.get(ifname))]
        return [t for t, _ in pairs], [r for _, r in pairs]

    def series(self) -> JsonObject:
        out: JsonObject = {}
        for i in self.ifnames:
            t, rows = self._rows(i)
            per: JsonObject = {k: column(deltas([r[k] for r in rows])) for k in COUNTERS}
            out[i] = per
        return out

    def summary(self) -> JsonObject:
        out: JsonObject = {}
        for i in self.ifnames:
            t, rows = self._rows(i)
            if len(rows) >= 2:
                moved: JsonObject = {k: rows[-1][k] - rows[0][k] for k in COUNTERS}
                out[i] = moved
        return out
