"""Validity flags with their evidence (DESIGN.md "What makes a number trustworthy").

cache: for direct I/O, the bytes the disk behind the device moved against the
bytes the workload says it moved, per direction. If a cache answered (a loop
device without direct I/O, fuse-overlayfs ignoring O_DIRECT, the studies'
loop-lvm anomaly), the disk moved far less. Also: any result above the raw
baseline of the same device and workload.
sync: start skew between concurrent instances.
"""

from __future__ import annotations

# A direction is checked only when the workload moved at least this much:
# below it, the noise of other activity on the disk decides.
MIN_CHECKED_BYTES = 32 << 20
# The disk must have moved at least this share of the workload's bytes.
MIN_DEVICE_SHARE = 0.5
# Above the raw device by more than this is suspicious. Single short trials on a
# shared VM varied 4x back to back on the same loop device (9864 vs 2414 IOPS, seen
# here), so a single trial is flagged only for a clear excess; with repetitions the
# report compares confidence intervals instead. The byte evidence above is the
# primary test and does not depend on timing.
ABOVE_RAW_TOLERANCE = 1.5
# Start skew allowed between instances, as a share of the runtime (and at least 1 s).
MAX_SKEW_SHARE = 0.05


def cache_flag(moved: dict[str, int], disks: dict[str, dict], direct_io: bool, path: str) -> dict:
    """`disks`: diskstats totals of each layer below the workload (the device under test,
    then the disk behind a loop device). The device under test sees only our file system,
    so it is not fooled by other activity on a shared root disk; the disk behind it shows
    what a buffered loop device really moved. A shortfall at any layer is a cache."""
    if path == "tmpfs":
        return {"suspect": True, "expected": True, "reason": "the tmpfs path measures memory, not the device", "evidence": {}}
    if not direct_io:
        return {"suspect": False, "expected": True,
                "reason": "buffered I/O: the page cache is part of what is measured", "evidence": {"moved": moved}}
    if not disks:
        return {"suspect": False, "reason": "no diskstats for the device: not checked", "evidence": {}}
    evidence, reasons = {"disks": list(disks)}, []
    for ddir in ("read", "write"):
        wl = moved.get(ddir, 0)
        evidence[f"{ddir}_workload_bytes"] = wl
        for name, disk in disks.items():
            dev = disk.get(f"{ddir}_bytes", 0)
            evidence[f"{ddir}_disk_bytes"] = evidence.get(f"{ddir}_disk_bytes", dev)  # the device under test first
            evidence.setdefault("per_disk", {}).setdefault(name, {})[f"{ddir}_bytes"] = dev
            if wl >= MIN_CHECKED_BYTES:
                share = dev / wl
                evidence["per_disk"][name][f"{ddir}_share"] = round(share, 4)
                if share < MIN_DEVICE_SHARE:
                    reasons.append(f"the workload {ddir} {wl / 2**20:.0f} MiB with O_DIRECT but {name} moved "
                                   f"{dev / 2**20:.0f} MiB ({share:.0%}): a cache answered")
    shares = [d.get("read_share") for d in evidence.get("per_disk", {}).values() if d.get("read_share") is not None]
    if shares:
        evidence["read_disk_share"] = min(shares)
    return {"suspect": bool(reasons), "reason": "; ".join(reasons) or "every layer moved the workload's bytes",
            "evidence": evidence}


def above_raw(value: float, raw_value: float | None, raw_trial: str | None, bytes_moved: bool = False) -> dict | None:
    """Evidence that a result beats the raw device it sits on, or None. `bytes_moved`: every
    layer below moved the workload's bytes, so the byte evidence does not point to a cache."""
    if not raw_value or value <= raw_value * ABOVE_RAW_TOLERANCE:
        return None
    ratio = value / raw_value
    if bytes_moved:
        reason = (f"{value:.0f} is {ratio:.2f}x the raw device's {raw_value:.0f} for the same workload although the "
                  "device moved the workload's bytes: a cache below the device (e.g. the hypervisor's) or a disturbed "
                  "raw baseline; not device performance until repetitions of both agree")
    else:
        reason = (f"{value:.0f} is {ratio:.2f}x the raw device's {raw_value:.0f} for the same workload: "
                  "a cache answered, this is not device performance")
    return {"reason": reason, "raw_value": raw_value, "raw_trial": raw_trial, "ratio": ratio, "bytes_moved": bytes_moved}


def sync_flag(starts: list[float | None], runtime_s: float) -> dict:
    known = [s for s in starts if s is not None]
    if len(known) < 2:
        return {"skew_s": 0.0, "suspect": False, "instances": len(starts)}
    skew = max(known) - min(known)
    allowed = max(1.0, MAX_SKEW_SHARE * runtime_s)
    return {"skew_s": skew, "suspect": skew > allowed, "allowed_s": allowed, "instances": len(starts),
            "reason": (f"instances started {skew:.2f} s apart (> {allowed:.1f} s): the aggregate mixes periods "
                       "when not all ran; rerun with fewer containers or a longer runtime") if skew > allowed else ""}


def primary_value(metrics: dict) -> float | None:
    """The headline throughput of a result, for comparisons with the raw baseline."""
    p = metrics.get("primary") or {}
    for key in ("iops", "ops_per_s", "mb_per_s"):
        if p.get(key) is not None:
            return float(p[key])
    return None


def raw_baseline_key(result: dict) -> tuple:
    t = result["trial"]
    wl = {k: v for k, v in t["workload"].items() if k != "name"}
    return (t["device"]["name"], repr(sorted(wl.items())), t["load"]["numjobs"], t["load"]["iodepth"], t["load"]["containers"])


def is_raw_baseline(result: dict) -> bool:
    t = result["trial"]
    return t["filesystem"]["type"] == "raw" and t["runtime"]["type"] == "native" and t["path"] == "device"
