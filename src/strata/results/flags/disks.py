"""The suspicions about what the layers below the workload did with its bytes, syncs and writes: the cache,
flush and absorbed flags, judged from each disk's counters (validity/disks.py, flushes.py, absorbed.py).

Typed for the reader (mypy checks every key read or written); stored as the plain JSON objects they are.
Reading stays lenient: a key a stored result lacks is absent, one a type does not know is kept.
"""

from __future__ import annotations

from typing import TypedDict

from strata.results.flags.judgement import Judgement, NoEvidence


class CacheEvidence(TypedDict, total=False):
    """The bytes behind the cache flag (validity/disks.py), by direction; `per_disk` holds each layer's."""

    moved: dict[str, int]  # buffered I/O: the bytes the workload moved, not judged
    disks: list[str]  # the layers below the workload, the device under test first
    per_disk: dict[str, dict[str, float]]  # {disk: {read_bytes, read_share, write_bytes, write_share}}
    read_workload_bytes: int
    read_disk_bytes: int  # of the device under test
    read_disk_share: float
    write_workload_bytes: int
    write_disk_bytes: int
    write_disk_share: float
    hosts: dict[str, dict[str, object]]  # across hosts: each host's own cache flag, as it stores it
    basis: str  # what the workload's bytes are when not O_DIRECT I/O (a database's WAL), said in the reason
    # a database's data set beside the memory its servers can use: {data_set_bytes, memory_bytes, memory_of,
    # fits, fix} (a data set that fits is read from memory: validity/disks.py `memory_rule`)
    memory: dict[str, object]
    # how much of what the workload read was ever written: {size_bytes, allocated_bytes, of, share} (a hole reads as
    # zeros without the device: validity/disks.py `never_written`)
    written: dict[str, object]
    disk: str  # schema 1: the one disk checked


class DiskFlushes(TypedDict):
    """One layer's flushes and cache, as the flush flag's evidence holds them (None: not known)."""

    flush_ios: float | None  # the flushes it saw
    write_cache: str | None  # "write back" (volatile) or "write through", as sysfs says
    fua: bool | None  # it takes FUA writes (an O_SYNC write needs no flush there)


class FlushEvidence(TypedDict, total=False):
    """The syncs the workload asked for against the flushes each layer below it saw (validity/flushes.py)."""

    syncs: int  # by the workload's own count
    streams: int  # at most this many waited at once
    what: str  # what they were ("fsync", "WAL syncs")
    owed: float  # the flushes a stack that keeps them issues at least: syncs / streams
    disks: list[str]  # the layers below the workload, the device under test first
    per_disk: dict[str, DiskFlushes]
    window: str  # the layers' flushes counted over the workload's "measured" window, or the whole "trial"
    hosts: dict[str, dict[str, object]]  # across hosts: each host's own flush flag, as it stores it


class AbsorbedEvidence(TypedDict, total=False):
    """The O_DIRECT writes the workload issued against the writes the device under test took
    (validity/absorbed.py)."""

    writes: int  # by the workload's own count
    workload_bytes: int
    random: bool
    disk: str  # the device under test
    device_writes: float  # its write requests
    device_merges: float  # writes merged into another request before it
    device_bytes: float
    syncs: int  # the workload's syncs meanwhile: each commits a journal, whose writes merge
    window: str  # counted over the workload's "measured" window, or the whole "trial"
    hosts: dict[str, dict[str, object]]  # across hosts: each host's own absorbed flag, as it stores it


Cache = Judgement[CacheEvidence, NoEvidence]
Flush = Judgement[FlushEvidence, NoEvidence]
Absorbed = Judgement[AbsorbedEvidence, NoEvidence]
