"""Validity: every judgement of whether a number measures storage, in one place.

A trial stores its evidence (the bytes the workload moved and each disk
below it moved, the instances' I/O windows, the per-second series); this
module judges it, at the end of the trial and again in the report once
repetitions exist, and nowhere else:

- cache: for direct I/O, a disk below the workload moved far fewer bytes
  than the workload says it moved: a cache answered (the studies' loop-lvm
  anomaly; fuse-overlayfs here). Buffered I/O and tmpfs are *expected* to
  include the cache, and are marked so, not flagged.
- above_raw: the result beats the raw device it sits on. With byte evidence
  that the device moved the bytes, that is not proof of a cache: the result
  is `unconfirmed` (a suspect outlier, or a disturbed raw baseline) until
  repetitions of both decide.
- sync: the instances' measured I/O windows, from the workloads' own output,
  must overlap for most of their duration.
- steady: the tail of the headline's per-second series (SNIA PTS, steady.py),
  without the partial last second.
- spread: the coefficient of variation of repetitions.

Flags are typed (`Flag`, `Judgement`) with a stable JSON form; warnings are
`Warning(flag, message)`. The headline value of a result is `headline()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from strata import steady as snia

# A direction is checked only when the workload moved at least this much:
# below it, the noise of other activity on the disk decides.
MIN_CHECKED_BYTES = 32 << 20
# The disk must have moved at least this share of the workload's bytes.
MIN_DEVICE_SHARE = 0.5
# Above the raw device by more than this is suspicious. Single short trials on a
# shared VM varied 4x back to back on the same loop device (9864 vs 2414 IOPS, seen
# here), so a single trial is flagged only for a clear excess; with repetitions the
# report compares confidence intervals instead (analysis/baseline.py).
ABOVE_RAW_TOLERANCE = 1.5
# The instances' measured windows must overlap for this share of their mean duration.
MIN_OVERLAP = 0.90
# Without the workloads' own windows: start skew allowed, as a share of the runtime (at least 1 s).
MAX_SKEW_SHARE = 0.05
MAX_CV = 0.10
STEADY_WINDOW_S = 5


class Flag(str, Enum):
    """The validity flags a result can carry (the keys of `flags` in a stored result)."""

    CACHE = "cache"
    ABOVE_RAW = "above_raw"
    SYNC = "sync"
    STEADY = "steady"
    SPREAD = "spread"
    EMULATED = "emulated"
    FAILED = "failed"


@dataclass
class Judgement:
    flag: Flag
    suspect: bool
    reason: str = ""
    expected: bool = False  # the effect is part of what is measured (buffered I/O), not an error
    evidence: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # flag-specific top-level fields (skew_s, steady, ...)

    def to_json(self) -> dict:
        doc = {"suspect": self.suspect, "reason": self.reason, "evidence": self.evidence, **self.extra}
        if self.expected:
            doc["expected"] = True
        return doc

    @property
    def warns(self) -> bool:
        return self.suspect and not self.expected


@dataclass(frozen=True)
class Warning:
    flag: Flag
    message: str

    def to_json(self) -> dict:
        return {"flag": self.flag.value, "message": self.message}


# ---- the headline ----------------------------------------------------------------


def headline(result: dict) -> tuple[float | None, str]:
    """(value, unit) of a result's headline: what the workload named in `metrics.primary`."""
    p = (result.get("metrics") or {}).get("primary") or {}
    v = p.get("value")
    return (float(v) if v is not None else None), p.get("unit") or ""


# ---- cache ------------------------------------------------------------------------


def cache(moved: dict[str, int], disks: dict[str, dict], direct_io: bool, path: str) -> Judgement:
    """`disks`: diskstats totals of each layer below the workload (the device under test first,
    then what lies below it). The device under test sees only our file system, so it is not
    fooled by other activity on a shared disk; the disks below show what a buffered loop device
    or a storage host really moved. A shortfall at any layer is a cache."""
    if path == "tmpfs":
        return Judgement(Flag.CACHE, True, "the tmpfs path measures memory, not the device", expected=True)
    if not direct_io:
        return Judgement(
            Flag.CACHE,
            False,
            "buffered I/O: the page cache is part of what is measured",
            expected=True,
            evidence={"moved": moved},
        )
    if not disks:
        return Judgement(Flag.CACHE, False, "no diskstats for the device: not checked")
    evidence: dict = {"disks": list(disks), "per_disk": {name: {} for name in disks}}
    reasons = []
    for ddir in ("read", "write"):
        wl = moved.get(ddir, 0)
        evidence[f"{ddir}_workload_bytes"] = wl
        evidence[f"{ddir}_disk_bytes"] = next(iter(disks.values())).get(f"{ddir}_bytes", 0)  # the device under test
        for name, disk in disks.items():
            dev = disk.get(f"{ddir}_bytes", 0)
            evidence["per_disk"][name][f"{ddir}_bytes"] = dev
            if wl >= MIN_CHECKED_BYTES:
                share = dev / wl
                evidence["per_disk"][name][f"{ddir}_share"] = round(share, 4)
                if share < MIN_DEVICE_SHARE:
                    reasons.append(
                        f"the workload {ddir} {wl / 2**20:.0f} MiB with O_DIRECT but {name} moved "
                        f"{dev / 2**20:.0f} MiB ({share:.0%}): a cache answered"
                    )
    under_test = evidence["per_disk"][next(iter(disks))]
    for ddir in ("read", "write"):  # the share beside the bytes it is the share of: the device under test's
        if f"{ddir}_share" in under_test:
            evidence[f"{ddir}_disk_share"] = under_test[f"{ddir}_share"]
    return Judgement(
        Flag.CACHE, bool(reasons), "; ".join(reasons) or "every layer moved the workload's bytes", evidence=evidence
    )


def min_share(cache_flag: dict) -> float | None:
    """The smallest share of the workload's bytes that any layer below moved, or None: not checked."""
    ev = (cache_flag or {}).get("evidence") or {}
    shares = [v for d in (ev.get("per_disk") or {}).values() for k, v in d.items() if k.endswith("_share")]
    shares = shares or [v for k, v in ev.items() if k.endswith("_disk_share")]
    return min(shares) if shares else None


def bytes_moved(cache_flag: dict) -> bool | None:
    """Does stored cache evidence show that every layer moved the workload's bytes? None: not checked."""
    share = min_share(cache_flag)
    return None if share is None else share >= MIN_DEVICE_SHARE


# ---- above the raw device -------------------------------------------------------------


def above_raw(
    value: float | None, raw_value: float | None, raw_trial: str | None, moved: bool | None
) -> Judgement | None:
    """A single result against the raw device of the same workload; None when not above it.
    `moved`: the byte evidence says every layer moved the workload's bytes (see `bytes_moved`)."""
    if not value or not raw_value or value <= raw_value * ABOVE_RAW_TOLERANCE:
        return None
    ratio = value / raw_value
    if moved:
        reason = (
            f"{value:.0f} is {ratio:.2f}x the raw device's {raw_value:.0f} for the same workload although the "
            "device moved the workload's bytes: unconfirmed (a cache below the device, e.g. the "
            "hypervisor's, or a disturbed raw baseline); not device performance until repetitions of both agree"
        )
    else:
        reason = (
            f"{value:.0f} is {ratio:.2f}x the raw device's {raw_value:.0f} for the same workload: "
            "a cache answered, this is not device performance"
        )
    return Judgement(
        Flag.ABOVE_RAW,
        True,
        reason,
        evidence={"raw_value": raw_value, "raw_trial": raw_trial, "ratio": ratio, "bytes_moved": moved},
    )


def raw_baseline_key(result: dict) -> tuple:
    """What a raw-device baseline must share with a result: device, workload parameters, load, and where the
    instances ran (the raw device of one machine is no baseline for another's)."""
    t = result["trial"]
    wl = {k: v for k, v in t["workload"].items() if k != "name"}
    ld = t["load"]
    where = repr(sorted((t.get("placement") or {}).get("instances", {}).items()))
    return (t["device"]["name"], repr(sorted(wl.items())), ld["numjobs"], ld["iodepth"], ld["containers"], where)


def is_raw_baseline(result: dict) -> bool:
    t = result["trial"]
    return t["filesystem"]["type"] == "raw" and t["runtime"]["type"] == "native" and t["path"] == "device"


# ---- sync -------------------------------------------------------------------------------


def sync(windows: list[tuple[float, float] | None], starts: list[float | None], runtime_s: float) -> Judgement:
    """Did the instances do their I/O together? Judged on the workloads' own windows (start and end
    of the measured I/O) when every window is known (a server workload's windows are its clients',
    however many instances serve them); else on the wrappers' start times."""
    n = len(starts)
    wrapper = [s for s in starts if s is not None]
    extra = {
        "instances": n,
        "skew_s": 0.0,
        "wrapper_skew_s": (max(wrapper) - min(wrapper)) if len(wrapper) > 1 else 0.0,
    }
    judged = bool(windows) and all(w is not None for w in windows)
    if (len(windows) if judged else n) < 2:
        return Judgement(Flag.SYNC, False, "one instance" if n < 2 else "one measured window", extra=extra)
    if judged:
        first_end = min(e for _, e in windows)
        last_start = max(s for s, _ in windows)
        mean_len = sum(e - s for s, e in windows) / len(windows)
        overlap = max(0.0, first_end - last_start) / mean_len if mean_len > 0 else 0.0
        skew = last_start - min(s for s, _ in windows)
        extra.update(skew_s=skew, overlap=round(overlap, 4), basis="workload")
        bad = overlap < MIN_OVERLAP
        reason = (
            (
                f"the instances did their I/O together for {overlap:.0%} of the runtime (their I/O started "
                f"{skew:.2f} s apart; at least {MIN_OVERLAP:.0%} needed): the aggregate mixes periods when not "
                "all ran; rerun with fewer instances or a longer runtime"
            )
            if bad
            else f"the instances did their I/O together for {overlap:.0%} of the runtime"
        )
        return Judgement(Flag.SYNC, bad, reason, evidence={"windows": windows}, extra=extra)
    skew = extra["wrapper_skew_s"]
    allowed = max(1.0, MAX_SKEW_SHARE * runtime_s)
    extra.update(skew_s=skew, allowed_s=allowed, basis="wrapper")
    bad = skew > allowed
    reason = (
        (
            f"instances started {skew:.2f} s apart (> {allowed:.1f} s): the aggregate mixes periods when not "
            "all ran; rerun with fewer instances or a longer runtime"
        )
        if bad
        else ""
    )
    return Judgement(Flag.SYNC, bad, reason, extra=extra)


# ---- steady -------------------------------------------------------------------------------


def full_seconds(series: list) -> list[float]:
    """The values of a per-second series without its last, partial second (kept when too short)."""
    values = [v for _, v in series]
    return values[:-1] if len(values) > 2 else values


def steady(series: list | None, tool_criterion: dict | None = None) -> dict | None:
    """SNIA PTS steady state of a headline's per-second series; with the tool's own verdict when it has one."""
    if not series:
        return None
    values = full_seconds(series)
    flag = snia.detect(values, STEADY_WINDOW_S)
    flag["series"] = series_stats(values)
    if tool_criterion:
        flag["tool"] = tool_criterion
    return flag


def series_stats(values: list[float]) -> dict:
    """The whole series' count, mean and standard deviation: what the report's variance components
    (analysis/variance.py) need of a trial, without reading its artifacts again."""
    n = len(values)
    mean = sum(values) / n if n else 0.0
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {"seconds": n, "mean": mean, "sd": sd}


# ---- spread -------------------------------------------------------------------------------


def spread(cv: float | None) -> Judgement:
    bad = cv is not None and cv > MAX_CV
    return Judgement(
        Flag.SPREAD,
        bad,
        f"repetitions vary by {cv:.0%} (coefficient of variation > {MAX_CV:.0%})" if bad else "",
        extra={"cv": cv},
    )


# ---- one trial ------------------------------------------------------------------------------


def judge_trial(
    moved: dict,
    disks: dict,
    direct_io: bool,
    path: str,
    windows: list,
    starts: list,
    runtime_s: float,
    series: list | None,
    tool_steady: dict | None,
) -> tuple[dict, list[Warning]]:
    """Every flag of one trial from its evidence: (flags JSON, warnings)."""
    judged = [cache(moved, disks, direct_io, path), sync(windows, starts, runtime_s)]
    flags = {j.flag.value: j.to_json() for j in judged}
    flags[Flag.STEADY.value] = steady(series, tool_steady)
    return flags, [Warning(j.flag, j.reason) for j in judged if j.warns]
