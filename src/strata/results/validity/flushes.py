"""The flush flag: did the syncs the workload asked for reach the device?

A commit is only as fast as the flush below it. A sync (fsync, fdatasync, a database's WAL sync)
returns once its data is durable; on a disk with a volatile write cache ("write back" in sysfs) that
takes a flush, which /proc/diskstats counts (collectors/diskstats.py). A flush answers every sync
waiting when it starts, but no sync of a stream twice: a stream's next sync starts after its last
returned, and needs a flush that starts after it. So a stack that keeps its syncs issues at least
syncs / streams flushes at every layer below (`owed`); other tenants of a disk only add flushes.
Measured here (loop device over the VM's disk, ext4, fio 4 KiB random writes with fsync=1): 1.1 to
2.0 flushes per fsync with barriers, at the loop device and at the disk below it alike; with
barrier=0, 1 flush in 18,534 fsyncs.

A layer whose cache is "write through" (zram; a disk without a volatile cache) makes a write durable
when it completes, and the block layer completes a flush to it at once without counting it: it is
not judged, and a device under test of that kind is said to need no flush. O_SYNC/O_DSYNC writes on
a disk that takes FUA writes are persisted without a flush, so such a disk is not judged for them.
What no counter shows is a disk that acknowledges a flush without emptying its cache (a device that
lies about its own cache): docs/validity.md.
"""

from __future__ import annotations

from typing import TypeVar

from strata.results.flags import (
    AbsorbedEvidence,
    DiskFlushes,
    Flag,
    Flush,
    FlushEvidence,
    Judgement,
    NoEvidence,
    number,
)
from strata.results.validity.evidence import LayerCounters, StackWords
from strata.workloads.base import Syncs

# Fewer syncs than this are not judged: a journal commit or a daemon's own fsync could make up the count.
MIN_CHECKED_SYNCS = 100
# A layer must have seen at least this share of the flushes owed (syncs / streams).
MIN_FLUSH_SHARE = 0.5
WRITE_THROUGH = "write through"


def flush(
    syncs: Syncs | None, disks: dict[str, LayerCounters], stack: StackWords, window: str = "trial"
) -> Flush | None:
    """`disks`: each layer's flush count and cache (the device under test first); `stack`: the words a fix
    is said in (`path`, `filesystem`, `mount_options`, `runtime`). None: the workload asked for no syncs
    or does not say."""
    if syncs is None or syncs.count <= 0:
        return None
    owed = syncs.count / max(1, syncs.streams)
    per_disk: dict[str, DiskFlushes] = {
        n: {"flush_ios": _rounded(number(d, "flush_ios")), "write_cache": _said(d, "write_cache"), "fua": _fua(d)}
        for n, d in disks.items()
    }
    evidence: FlushEvidence = {
        "syncs": syncs.count,
        "streams": syncs.streams,
        "what": syncs.what,
        "owed": round(owed, 1),
        "disks": list(disks),
        "per_disk": per_disk,
        "window": window,
    }
    asked = f"the workload asked for {syncs.count} {syncs.what} ({syncs.streams} at a time at most)"
    if stack.get("path") == "tmpfs":
        reason = f"{asked} on the tmpfs path, which keeps its files in memory: no sync reached a device"
        return Judgement(Flag.FLUSH, True, f"{reason}; {fix_words(stack)}", evidence=evidence)
    if syncs.count < MIN_CHECKED_SYNCS:
        return Judgement(
            Flag.FLUSH, False, f"{asked}: too few to judge (fewer than {MIN_CHECKED_SYNCS})", evidence=evidence
        )
    first = next(iter(disks), None)
    if first is not None and disks[first].get("write_cache") == WRITE_THROUGH:
        reason = f"{asked}; {first} has no volatile write cache (write through): a write is durable when it completes"
        return Judgement(Flag.FLUSH, False, reason + ", and no flush is owed", evidence=evidence)
    short, judged = [], []
    for name, d in disks.items():
        seen = number(d, "flush_ios")
        if seen is None or d.get("write_cache") == WRITE_THROUGH or (syncs.by_writes and d.get("fua")):
            continue
        judged.append(seen)
        if seen < MIN_FLUSH_SHARE * owed:
            short.append(f"{name} saw {seen:.0f}")
    if not judged:
        reason = f"{asked}; no layer below counts flushes (a kernel before 5.5) or needs them: not judged"
        return Judgement(Flag.FLUSH, False, reason, evidence=evidence)
    if not short:
        reason = f"{asked}; every layer saw {min(judged):.0f} or more of the {owed:.0f} flushes owed"
        return Judgement(Flag.FLUSH, False, reason, evidence=evidence)
    reason = (
        f"{asked}, so a stack that keeps them issues at least {owed:.0f} flushes; {', '.join(short)}: the syncs "
        f"did not reach the device, and what they committed is lost on a power failure; {fix_words(stack)}"
    )
    return Judgement(Flag.FLUSH, True, reason, evidence=evidence)


def _rounded(v: float | None) -> float | None:
    return round(v, 1) if isinstance(v, float) else v


def _said(d: LayerCounters, key: str) -> str | None:
    v = d.get(key)
    return None if v is None else str(v)


def _fua(d: LayerCounters) -> bool | None:
    v = d.get("fua")
    return None if v is None else bool(v)


def fix_words(stack: StackWords) -> str:
    """What to do, in the words of the stack the user asked for."""
    options = [str(o) for o in stack.get("mount_options") or []]
    fs = stack.get("filesystem") or "the file system"
    if stack.get("path") == "tmpfs":
        return "measure a path on the device (a volume, a bind mount) to measure commits that last"
    dropped = [o for o in options if o in ("barrier=0", "nobarrier", "nobarrier=1")]
    if dropped:
        said = dropped[0] + (f" ({dropped[1]}, as the kernel shows it)" if len(dropped) > 1 else "")
        return f"mount {fs} without {said}: the default keeps its barriers"
    if (stack.get("runtime") or {}).get("disk_cache") == "unsafe":
        return "the VM's disk_cache unsafe drops the guest's flushes: use none, writeback or directsync"
    return (
        "find the layer that acknowledges syncs without a flush (a mount without barriers, a tmpfs volume, a VM "
        "disk with cache=unsafe, a device-mapper or network target that ignores flushes)"
    )


# The suspicions judged on each host's part and combined across hosts by the same rule.
Ev = TypeVar("Ev", FlushEvidence, AbsorbedEvidence)


def across_hosts(per_host: dict[str, Judgement[Ev, NoEvidence] | None], flag: Flag) -> Judgement[Ev, NoEvidence] | None:
    """One trial's judgement from each host's part (each judged on its host, its disks against its own
    instances' syncs or writes): suspect when any host is, with every host's; None when no host judged it."""
    judged = {h: j for h, j in per_host.items() if j is not None}
    if not judged:
        return None
    warns = {h: j for h, j in judged.items() if j.warns}
    said = warns or judged
    reason = "; ".join(f"host {h}: {j.reason}" for h, j in said.items() if j.reason)
    expected = not warns and all(j.expected for j in judged.values())
    evidence: Ev = {"hosts": {h: j.to_json() for h, j in judged.items()}}
    return Judgement(
        flag, bool(warns) or (expected and any(j.suspect for j in judged.values())), reason, expected, evidence
    )
