"""The memory a host's servers can hold their data in: what decides whether a database's reads reach the device.

A server reads through its own cache and the kernel's page cache; both live in the memory it may use: the
host's (`MemTotal`) for servers without a limit, natively or in containers and pods that share the host,
or each container's or pod's memory limit (`limits.memory`), to which its page cache is charged. A data
set no larger than that memory is read from it once it is warm, whatever the device: the workload states
its data set and this memory with its parsed result (`Parsed.memory`), and the cache check judges them
(results/validity/disks.py) beside the bytes the device moved. Servers on a machine strata reaches through an
agent (a Kubernetes node) are judged by that machine's /proc/meminfo, read as the collectors read it (`read`).
"""

from __future__ import annotations

from typing import Callable

from strata.collectors.base import read_file
from strata.collectors.host import read_meminfo
from strata.core.jsondoc import JsonObject
from strata.core.params import Load


def meminfo_bytes(key: str, read: Callable[[str], str] = read_file) -> int | None:
    """A figure of /proc/meminfo in bytes (`MemTotal`, `Cached`: the page cache), or None when it cannot be read."""
    try:
        return read_meminfo(read).get(key)
    except (OSError, ValueError, IndexError):
        return None


def mem_total_bytes(read: Callable[[str], str] = read_file) -> int | None:
    return meminfo_bytes("MemTotal", read)


def usable(load: Load, servers: int, read: Callable[[str], str] = read_file) -> JsonObject:
    """The memory this host's `servers` can use together, and what bounds it (stored in clients.json)."""
    total = mem_total_bytes(read)
    limit = load.limits.memory
    if limit is not None and servers > 0:
        together = limit * servers
        if total is None or together < total:
            each = f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"
            return {"bytes": together, "of": f"the memory limit of {servers} server(s), {each} each"}
    return {"bytes": total, "of": "MemTotal, the host's memory"}


def data_set(data_bytes: int | None, memory_bytes: int | None, memory_of: str) -> JsonObject | None:
    """What the cache check judges (`Parsed.memory`): the data set on this host and the memory that can cache it,
    or None when either is unknown."""
    if data_bytes is None or not isinstance(memory_bytes, int):
        return None
    return {"data_set_bytes": data_bytes, "memory_bytes": memory_bytes, "memory_of": memory_of}
