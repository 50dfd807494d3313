"""The absorbed flag: did the workload's O_DIRECT writes reach the device as writes?

With O_DIRECT and no cache, each write the workload issues is submitted to the device before it
completes, as a write of its own: the device under test takes at least as many writes (its requests,
and the writes merged into a request before them) as the workload issued. A page cache or a journal
that takes the writes instead hands the device fewer, later, larger ones: fewer within the trial
(the page cache holds them for up to 30 s), or, for writes at random offsets, which the block layer
never finds adjacent, merged into each other (a journal writes what it took in sequence).
Measured here on a loop device (4 KiB random O_DIRECT writes for 4 to 6 s): ext4 (barriers or not), xfs and
btrfs merged at most 3.2% of 7,500 to 384,000 writes (with fsync=1, 2.0 merges a fsync: the
journal's commits, JOURNAL_MERGES_PER_SYNC); ext4 mounted with data=journal, which turns O_DIRECT
into buffered writes into its journal, merged 0.69 to 1.03 a write, from 1 job x QD1 to 32 x QD32,
while the device's request count (0.72 to 0.96 a write, the journal's checkpoints among them) and
its bytes (1.7x to 2x the workload's) passed.

Judged at the device under test only: a layer below sees what the layer above made of the writes (a
loop device's own direct I/O on its backing file, which that disk's scheduler merges).
"""

from __future__ import annotations

from strata.results.flags import Absorbed, AbsorbedEvidence, Flag, Judgement, number
from strata.results.validity.evidence import LayerCounters, StackWords
from strata.workloads.base import DirectWrites

# Fewer writes than this are not judged: the file system's own writes would decide.
MIN_CHECKED_WRITES = 1000
# The device must have taken at least this share of the workload's writes (requests and merged writes).
MIN_WRITE_SHARE = 0.5
# Of random writes, at most this share may reach the device merged into another.
MAX_MERGED_SHARE = 0.5
# A sync commits the file system's journal, whose blocks (descriptor, metadata, commit) go out together and
# merge: merges up to this many a sync are the journal's, not the workload's writes (measured on ext4: 2.0
# merges a fsync with fsync=1, 2.9 with data=journal; counted at about twice the most seen).
JOURNAL_MERGES_PER_SYNC = 4


def absorbed(
    writes: DirectWrites | None,
    disks: dict[str, LayerCounters],
    stack: StackWords,
    window: str = "trial",
    syncs: int = 0,
) -> Absorbed | None:
    """`disks`: each layer's write counters, the device under test first; `stack`: the words a fix is said in
    (`path`, `mount_options`, `runtime`); `syncs`: the syncs the workload asked for meanwhile, each of which
    commits a journal. None: the workload issued no O_DIRECT writes (or does not say)."""
    if writes is None or writes.count <= 0:
        return None
    if stack.get("path") == "tmpfs":
        return Judgement(Flag.ABSORBED, True, "the tmpfs path measures memory, not the device", expected=True)
    name = next(iter(disks), None)
    d: LayerCounters = disks[name] if name is not None else {}
    write_ios, write_merges = number(d, "write_ios"), number(d, "write_merges")
    if name is None or write_ios is None or write_merges is None:
        return Judgement(Flag.ABSORBED, False, "no write counts of the device: not checked")
    ios, merges, dev_bytes = float(write_ios), float(write_merges), float(number(d, "write_bytes") or 0)
    evidence: AbsorbedEvidence = {
        "writes": writes.count,
        "workload_bytes": writes.bytes,
        "random": writes.random,
        "disk": name,
        "device_writes": round(ios, 1),
        "device_merges": round(merges, 1),
        "device_bytes": round(dev_bytes),
        "syncs": syncs,
        "window": window,
    }
    issued = f"the workload issued {writes.count} {'random ' if writes.random else ''}O_DIRECT writes of " + (
        f"{writes.bytes / writes.count / 1024:.0f} KiB"
    )
    if writes.count < MIN_CHECKED_WRITES:
        return Judgement(Flag.ABSORBED, False, f"{issued}: too few to judge", evidence=evidence)
    took = f"{name} took {ios:.0f} writes of {dev_bytes / max(ios, 1) / 1024:.0f} KiB on average"
    if ios + merges < MIN_WRITE_SHARE * writes.count:
        reason = f"{issued}, {took} within the trial: a cache took the writes; {fix_words(stack)}"
        return Judgement(Flag.ABSORBED, True, reason, evidence=evidence)
    merged = merges - JOURNAL_MERGES_PER_SYNC * syncs  # beyond what its syncs' journal commits explain
    if writes.random and merged > MAX_MERGED_SHARE * writes.count:
        commits = f" ({JOURNAL_MERGES_PER_SYNC} a sync left to the journal's commits)" if syncs else ""
        reason = (
            f"{issued}, {took}, {merged:.0f} writes merged into others{commits}: random O_DIRECT writes are not "
            f"adjacent, so a journal or a page cache collected them first; {fix_words(stack)}"
        )
        return Judgement(Flag.ABSORBED, True, reason, evidence=evidence)
    return Judgement(Flag.ABSORBED, False, f"{issued}; {took}: each reached it as a write", evidence=evidence)


def fix_words(stack: StackWords) -> str:
    """What to do, in the words of the stack the user asked for."""
    options = [str(o) for o in stack.get("mount_options") or []]
    if "data=journal" in options:
        return "mount ext4 without data=journal (its journal takes every write, O_DIRECT ones too)"
    if (stack.get("runtime") or {}).get("storage_driver") == "fuse-overlayfs":
        return "fuse-overlayfs accepts O_DIRECT but does not honor it: use a volume or a bind mount"
    return (
        "find the layer that turns O_DIRECT into buffered writes (ext4 data=journal, a FUSE file system, a "
        "buffered loop device), or compare the results as buffered I/O"
    )
