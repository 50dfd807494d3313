"""The cache flag: did every disk below the workload move the bytes the workload says it moved?

For direct I/O, a disk below the workload that moved far fewer bytes than the
workload is a cache that answered (study 003's loop-lvm anomaly; fuse-overlayfs
here). Buffered I/O and tmpfs are *expected* to include the cache, and are
marked so, not flagged. The same rule holds for every layer, local or on a
storage host (`layer_share`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from strata.core.jsondoc import JsonObject
from strata.core.metrics import DIRECTIONS
from strata.results.flags import Cache, CacheEvidence, Flag, Judgement
from strata.results.validity.evidence import LayerCounters

# A direction is checked only when the workload moved at least this much:
# below it, the noise of other activity on the disk decides.
MIN_CHECKED_BYTES = 32 << 20
# The disk must have moved at least this share of the workload's bytes.
MIN_DEVICE_SHARE = 0.5
# A database's data set no larger than this share of the memory its servers can use is read from memory.
MAX_DATA_IN_MEMORY = 1.0


def share_words(share: float = MIN_DEVICE_SHARE) -> str:
    """A share as the warnings say it ("half", else a percentage)."""
    return {0.5: "half", 0.25: "a quarter"}.get(share, f"{share:.0%}")


def rule(whose: str) -> str:
    """The cache check's rule in words, for the trials `whose` bytes were moved (the report's warnings)."""
    return f"a disk moved less than {share_words()} of {whose} bytes"


def cache(
    moved: dict[str, int],
    disks: dict[str, LayerCounters],
    direct_io: bool,
    path: str,
    basis: str = "",
    memory: JsonObject | None = None,
    written: JsonObject | None = None,
) -> Cache:
    """`disks`: diskstats totals of each layer below the workload (the device under test first,
    then what lies below it). The device under test sees only our file system, so it is not
    fooled by other activity on a shared disk; the disks below show what a buffered loop device
    or a storage host really moved. A shortfall at any layer is a cache. `basis`: what the
    workload's bytes are when they are not O_DIRECT I/O ("as WAL": bytes a database must write),
    kept in the evidence and said in the reason. `memory`: a database's data set and the memory its
    servers can use; one that fits is read from memory (`memory_rule`), whatever the bytes say. `written`: how
    much of the storage read was ever written; reads that fell short of it where most of it never was read holes,
    not a cache (`never_written`)."""
    if path == "tmpfs":
        return Judgement(Flag.CACHE, True, "the tmpfs path measures memory, not the device", expected=True)
    fits = memory_rule(memory)
    if not direct_io:
        # a buffered database (Cassandra) states no bytes the device must move, but its data set against its
        # memory still says whether its reads could reach the device
        if fits is not None:
            return _fits(fits, memory, {"moved": moved, "memory": _memory_evidence(memory)}, [])
        buffered: CacheEvidence = {"moved": moved}
        if memory is not None:
            buffered["memory"] = _memory_evidence(memory)
        return Judgement(
            Flag.CACHE,
            False,
            "buffered I/O: the page cache is part of what is measured",
            expected=True,
            evidence=buffered,
        )
    if not disks:
        if fits is not None:
            return _fits(fits, memory, {"memory": _memory_evidence(memory)}, [])
        return Judgement(Flag.CACHE, False, "no diskstats for the device: not checked")
    under_test = next(iter(disks.values()))
    per_disk: dict[str, dict[str, float]] = {name: {} for name in disks}
    reasons = []
    for ddir in DIRECTIONS:
        for name, disk in disks.items():
            dev = byte_count(disk, f"{ddir}_bytes")
            per_disk[name][f"{ddir}_bytes"] = dev
            share, short = layer_share(ddir, moved.get(ddir, 0), dev, name, basis)
            if share is not None:
                per_disk[name][f"{ddir}_share"] = round(share, 4)
            if short:
                reasons.append(short)
    evidence: CacheEvidence = {
        "disks": list(disks),
        "per_disk": per_disk,
        "read_workload_bytes": moved.get("read", 0),
        "read_disk_bytes": byte_count(under_test, "read_bytes"),
        "write_workload_bytes": moved.get("write", 0),
        "write_disk_bytes": byte_count(under_test, "write_bytes"),
    }
    if basis:
        evidence["basis"] = basis
    if memory is not None:
        evidence["memory"] = _memory_evidence(memory)
    shares = per_disk[next(iter(disks))]  # the share beside the bytes it is the share of: the device under test's
    if "read_share" in shares:
        evidence["read_disk_share"] = shares["read_share"]
    if "write_share" in shares:
        evidence["write_disk_share"] = shares["write_share"]
    if fits is not None:
        return _fits(fits, memory, evidence, reasons)
    holes = never_written(written, any(r.startswith("the workload read ") for r in reasons))
    if written is not None:
        evidence["written"] = {**written, "share": round(_written_share(written) or 0.0, 4)}
    if holes:
        reasons = [holes] + [r for r in reasons if not r.startswith("the workload read ")]
    return Judgement(
        Flag.CACHE, bool(reasons), "; ".join(reasons) or "every layer moved the workload's bytes", evidence=evidence
    )


# Reads that fell short where less than this share of what was read was ever written read holes.
MIN_WRITTEN_SHARE = 0.5


def _written_share(written: Mapping[str, object] | None) -> float | None:
    size, allocated = (written or {}).get("size_bytes"), (written or {}).get("allocated_bytes")
    if not isinstance(size, int) or not isinstance(allocated, int) or size <= 0:
        return None
    return min(1.0, allocated / size)


def never_written(written: Mapping[str, object] | None, reads_short: bool) -> str | None:
    """Why reads that a layer below did not move read blocks never written (a sparse file, a loop device over one,
    a region never written since a trim): those read as zeros without the device, which is no cache and no device
    performance either. None when the reads did not fall short, or most of what was read was written."""
    share = _written_share(written)
    if not reads_short or share is None or share >= MIN_WRITTEN_SHARE or written is None:
        return None
    size, allocated = int(str(written["size_bytes"])), int(str(written["allocated_bytes"]))
    return (
        f"the data was never written: of the {size / 2**20:,.0f} MiB read ({written.get('of')}), "
        f"{allocated / 2**20:,.0f} MiB ({share:.0%}) were ever written, and the rest reads as zeros without the "
        "device: write it first (`precondition: fill`), or let the workload lay out its own file"
    )


def _fits(fits: str, memory: Mapping[str, object] | None, evidence: CacheEvidence, reasons: list[str]) -> Cache:
    """A data set that fits in memory: its reads come from memory, so a run bound by its reads measures memory
    and is drawn apart. A write-bound run (`memory.write_bound`: its commits wait on its log's flush) measures
    the storage that flush reaches: its reads are said (the flag raised, and expected), and it stays comparable
    unless the written bytes or the flushes (the flush check) say otherwise. Reads the device did not move are
    what fitting in memory already says: whether they cross the byte rule's 32 MiB (MIN_CHECKED_BYTES) must not
    decide the flag (a pgbench run that read 32.02 MiB from outside its server's own cache was not expected)."""
    writes_short = [r for r in reasons if not r.startswith("the workload read ")]
    if memory and memory.get("write_bound") is True and not writes_short:
        why = memory.get("write_bound_words") or "its commits wait on its log's flush to the device"
        return Judgement(
            Flag.CACHE,
            True,
            f"{fits}; write-bound ({why}), so it is compared: the flush and byte checks judge its storage",
            expected=True,
            evidence=evidence,
        )
    return Judgement(Flag.CACHE, True, "; ".join([fits, *reasons]), evidence=evidence)


def byte_count(disk: Mapping[str, object], key: str) -> int:
    """A layer's bytes (0 when not counted): whole numbers, as diskstats counts them."""
    v = disk.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else int(v) if isinstance(v, float) else 0


def memory_rule(memory: Mapping[str, object] | None) -> str | None:
    """Why a database's reads come from memory: its data set is no larger than the memory its servers can use
    (their own cache and the page cache live in it), so once warm no read needs the device; None when it is
    larger, or unknown. Whatever the bytes of one trial show, such a result measures memory (a short run may
    still read a cold part from the device)."""
    if not memory:
        return None
    data, mem = memory.get("data_set_bytes"), memory.get("memory_bytes")
    if not isinstance(data, int) or not isinstance(mem, int) or data > mem * MAX_DATA_IN_MEMORY:
        return None
    of = memory.get("of") or memory.get("memory_of") or "the memory the servers can use"
    fix = memory.get("fix")
    return (
        f"the data set ({data / 2**20:,.0f} MiB) fits in the memory its servers can use ({mem / 2**20:,.0f} MiB: "
        f"{of}): its reads come from memory" + (f"; {fix}" if fix else "")
    )


def _memory_evidence(memory: Mapping[str, object] | None) -> dict[str, object]:
    m = dict(memory or {})
    data, mem = m.get("data_set_bytes"), m.get("memory_bytes")
    m["fits"] = isinstance(data, int) and isinstance(mem, int) and data <= mem * MAX_DATA_IN_MEMORY
    return m


def workload_bytes(ev: CacheEvidence, ddir: str) -> int:
    """The bytes the workload moved in a direction, as the cache evidence holds them."""
    return ev.get("read_workload_bytes", 0) if ddir == "read" else ev.get("write_workload_bytes", 0)


def layer_share(
    ddir: str, workload_bytes: int, layer_bytes: int, layer: str, basis: str = ""
) -> tuple[float | None, str | None]:
    """The share of the workload's bytes one layer below it moved (None: too few bytes to judge) and,
    when it falls short, why a cache answered. The one rule for every layer, local or on a storage host."""
    if workload_bytes < MIN_CHECKED_BYTES:
        return None, None
    share = layer_bytes / workload_bytes
    if share >= MIN_DEVICE_SHARE:
        return share, None
    return share, (
        f"the workload {ddir} {workload_bytes / 2**20:.0f} MiB {basis or 'with O_DIRECT'} but {layer} moved "
        f"{layer_bytes / 2**20:.0f} MiB ({share:.0%}): a cache answered"
    )


def cache_below(judged: Cache, moved: dict[str, dict[str, int]] | None, host: str) -> Cache:
    """A cache judgement with the layers of a storage host below it (`moved`: the bytes each layer moved,
    None when not sampled): a store answered from the storage host's page cache is a cache like any."""
    if moved is None or judged.expected:
        return judged
    ev = judged.evidence.copy()
    per_disk = dict(ev.get("per_disk") or {})
    reasons = [judged.reason] if judged.suspect and judged.reason else []
    for name, m in moved.items():
        entry: dict[str, float] = {**m}
        per_disk[f"{host}:{name}"] = entry
        for ddir in DIRECTIONS:
            share, short = layer_share(
                ddir,
                workload_bytes(ev, ddir),
                m[f"{ddir}_bytes"],
                f"the storage host {host}'s {name}",
                ev.get("basis", ""),
            )
            if share is not None:
                entry[f"{ddir}_share"] = round(share, 4)
            if short:
                reasons.append(short)
    ev["per_disk"] = per_disk
    reason = "; ".join(reasons) or judged.reason or "every layer moved the workload's bytes"
    return Judgement(Flag.CACHE, bool(reasons), reason, judged.expected, ev, judged.extra.copy())


def cache_across_hosts(per_host: dict[str, Cache | None]) -> Cache:
    """One trial's cache judgement from each host's (its disks against its instances' bytes): suspect
    when any host is, with every host's evidence."""
    per = {h: j.to_json() if j is not None else {} for h, j in per_host.items()}
    judged = {h: j for h, j in per_host.items() if j is not None}
    warns = [h for h, j in judged.items() if j.warns]
    per_disk: dict[str, dict[str, float]] = {}
    evidence: CacheEvidence = {"hosts": per, "per_disk": per_disk}
    for h, j in judged.items():
        ev = j.evidence
        for disk, v in (ev.get("per_disk") or {}).items():
            per_disk[f"{h}:{disk}"] = v
        _add_bytes(evidence, ev)
    reasons = [f"host {h}: {j.reason}" for h, j in judged.items() if j.reason and (h in warns or not warns)]
    expected = bool(per) and len(judged) == len(per) and all(j.expected for j in judged.values())
    suspect = bool(warns) or (expected and any(j.suspect for j in judged.values()))
    return Judgement(Flag.CACHE, suspect, "; ".join(reasons), expected=expected, evidence=evidence)


def _add_bytes(total: CacheEvidence, ev: CacheEvidence) -> None:
    """One host's bytes into the trial's: the bytes summed, the smallest share of any host kept."""
    if "read_workload_bytes" in ev:
        total["read_workload_bytes"] = total.get("read_workload_bytes", 0) + ev["read_workload_bytes"]
    if "read_disk_bytes" in ev:
        total["read_disk_bytes"] = total.get("read_disk_bytes", 0) + ev["read_disk_bytes"]
    if (share := ev.get("read_disk_share")) is not None:
        total["read_disk_share"] = min(share, total.get("read_disk_share", share))
    if "write_workload_bytes" in ev:
        total["write_workload_bytes"] = total.get("write_workload_bytes", 0) + ev["write_workload_bytes"]
    if "write_disk_bytes" in ev:
        total["write_disk_bytes"] = total.get("write_disk_bytes", 0) + ev["write_disk_bytes"]
    if (share := ev.get("write_disk_share")) is not None:
        total["write_disk_share"] = min(share, total.get("write_disk_share", share))


def min_share(cache_flag: Cache | None) -> float | None:
    """The smallest share of the workload's bytes that any layer below moved, or None: not checked."""
    ev: CacheEvidence = cache_flag.evidence if cache_flag is not None else {}
    shares = [v for d in (ev.get("per_disk") or {}).values() for k, v in d.items() if k.endswith("_share")]
    shares = shares or [s for s in (ev.get("read_disk_share"), ev.get("write_disk_share")) if s is not None]
    return min(shares) if shares else None


def bytes_moved(cache_flag: Cache | None) -> bool | None:
    """Does stored cache evidence show that every layer moved the workload's bytes? None: not checked."""
    share = min_share(cache_flag)
    return None if share is None else share >= MIN_DEVICE_SHARE


def shows_cache(shares: Iterable[float]) -> bool:
    """Do these shares (`min_share` of trials) show that a cache answered? (a study's claim that a result
    above the raw device is a cache: analysis/findings/checks_fs.py)."""
    found = list(shares)
    return bool(found) and min(found) < MIN_DEVICE_SHARE
