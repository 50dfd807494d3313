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
- emulated: the runtime ran the instances under CPU emulation (a VM under TCG).
- failed: no measurement, with the failure's category (errors.FAILURE_CATEGORIES).

Each judgement is a typed value (`Judgement`, `Steady`, `Emulated`, `Failure`:
strata/flags.py, which also reads them back from stored results); warnings
are `Warning(flag, message)`. The headline value of a result is `headline()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata import steady as snia
from strata.flags import Emulated, Failure, Flag, Flags, Judgement, Steady
from strata.stack.runtimes import REGISTRY as RUNTIMES

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


def cache(moved: dict[str, int], disks: dict[str, dict], direct_io: bool, path: str, basis: str = "") -> Judgement:
    """`disks`: diskstats totals of each layer below the workload (the device under test first,
    then what lies below it). The device under test sees only our file system, so it is not
    fooled by other activity on a shared disk; the disks below show what a buffered loop device
    or a storage host really moved. A shortfall at any layer is a cache. `basis`: what the
    workload's bytes are when they are not O_DIRECT I/O ("as WAL": bytes a database must write),
    kept in the evidence and said in the message."""
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
    if basis:
        evidence["basis"] = basis
    reasons = []
    for ddir in ("read", "write"):
        wl = moved.get(ddir, 0)
        evidence[f"{ddir}_workload_bytes"] = wl
        evidence[f"{ddir}_disk_bytes"] = next(iter(disks.values())).get(f"{ddir}_bytes", 0)  # the device under test
        for name, disk in disks.items():
            dev = disk.get(f"{ddir}_bytes", 0)
            evidence["per_disk"][name][f"{ddir}_bytes"] = dev
            share, short = layer_share(ddir, wl, dev, name, basis)
            if share is not None:
                evidence["per_disk"][name][f"{ddir}_share"] = round(share, 4)
            if short:
                reasons.append(short)
    under_test = evidence["per_disk"][next(iter(disks))]
    for ddir in ("read", "write"):  # the share beside the bytes it is the share of: the device under test's
        if f"{ddir}_share" in under_test:
            evidence[f"{ddir}_disk_share"] = under_test[f"{ddir}_share"]
    return Judgement(
        Flag.CACHE, bool(reasons), "; ".join(reasons) or "every layer moved the workload's bytes", evidence=evidence
    )


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


def cache_below(judged: Judgement, moved: dict[str, dict] | None, host: str) -> Judgement:
    """A cache judgement with the layers of a storage host below it (`moved`: the bytes each layer moved,
    None when not sampled): a store answered from the storage host's page cache is a cache like any."""
    if moved is None or judged.expected:
        return judged
    ev = dict(judged.evidence)
    per_disk = dict(ev.get("per_disk") or {})
    reasons = [judged.reason] if judged.suspect and judged.reason else []
    for name, m in moved.items():
        entry = per_disk[f"{host}:{name}"] = dict(m)
        for ddir in ("read", "write"):
            wl = ev.get(f"{ddir}_workload_bytes", 0)
            share, short = layer_share(
                ddir, wl, m[f"{ddir}_bytes"], f"the storage host {host}'s {name}", ev.get("basis", "")
            )
            if share is not None:
                entry[f"{ddir}_share"] = round(share, 4)
            if short:
                reasons.append(short)
    ev["per_disk"] = per_disk
    reason = "; ".join(reasons) or judged.reason or "every layer moved the workload's bytes"
    return Judgement(Flag.CACHE, bool(reasons), reason, judged.expected, ev, dict(judged.extra))


def cache_across_hosts(per_host: dict[str, Judgement | None]) -> Judgement:
    """One trial's cache judgement from each host's (its disks against its instances' bytes): suspect
    when any host is, with every host's evidence."""
    per = {h: j.to_json() if j is not None else {} for h, j in per_host.items()}
    judged = {h: j for h, j in per_host.items() if j is not None}
    warns = [h for h, j in judged.items() if j.warns]
    evidence: dict = {"hosts": per, "per_disk": {}}
    for h, j in judged.items():
        ev = j.evidence
        for disk, v in (ev.get("per_disk") or {}).items():
            evidence["per_disk"][f"{h}:{disk}"] = v
        for ddir in ("read", "write"):
            for key in (f"{ddir}_workload_bytes", f"{ddir}_disk_bytes"):
                if key in ev:
                    evidence[key] = evidence.get(key, 0) + ev[key]
            share = ev.get(f"{ddir}_disk_share")
            if share is not None:
                evidence[f"{ddir}_disk_share"] = min(share, evidence.get(f"{ddir}_disk_share", share))
    reasons = [f"host {h}: {j.reason}" for h, j in judged.items() if j.reason and (h in warns or not warns)]
    expected = bool(per) and len(judged) == len(per) and all(j.expected for j in judged.values())
    suspect = bool(warns) or (expected and any(j.suspect for j in judged.values()))
    return Judgement(Flag.CACHE, suspect, "; ".join(reasons), expected=expected, evidence=evidence)


def min_share(cache_flag: Judgement | None) -> float | None:
    """The smallest share of the workload's bytes that any layer below moved, or None: not checked."""
    ev = cache_flag.evidence if cache_flag is not None else {}
    shares = [v for d in (ev.get("per_disk") or {}).values() for k, v in d.items() if k.endswith("_share")]
    shares = shares or [v for k, v in ev.items() if k.endswith("_disk_share")]
    return min(shares) if shares else None


def bytes_moved(cache_flag: Judgement | None) -> bool | None:
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
    """The raw device under the baseline runtime (natively): what every ratio to raw and every cache bound is
    taken against."""
    t = result["trial"]
    return t["filesystem"]["type"] == "raw" and is_baseline_runtime(t["runtime"]["type"]) and t["path"] == "device"


def is_baseline_runtime(runtime_type: str) -> bool:
    """The registered runtime of that name says it is the baseline (native); one not registered is not."""
    runtime = RUNTIMES.get(runtime_type)
    return runtime is not None and runtime.baseline


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


def steady(series: list | None, tool_criterion: dict | None = None, design: dict | None = None) -> Steady | None:
    """SNIA PTS steady state of a headline's per-second series, with the tool's own verdict when it has one,
    and the trend over the whole window; judged on the basis the design calls for (`with_basis`)."""
    if not series:
        return None
    values = full_seconds(series)
    verdict = snia.detect(values, STEADY_WINDOW_S)
    d = snia.drift(values)
    drifts = None
    if d["drift_pct"] is not None and verdict["judged"]:
        beyond = abs(d["drift_t"]) >= snia.drift_t_critical(len(values) - 2)
        drifts = d["drift_pct"] > snia.MAX_SLOPE_PCT and beyond
    s = Steady(**verdict, series=series_stats(values), tool=tool_criterion or None, basis="snia", drift=drifts, **d)
    return with_basis(s, design) if design is not None else s


def repeated(design: dict | None) -> bool:
    """The design measures trial-to-trial variation itself: `repetitions: auto`, or 2 and more."""
    reps = (design or {}).get("repetitions")
    return reps == "auto" or (isinstance(reps, int) and reps >= 2)


def with_basis(s: Steady, design: dict | None) -> Steady:
    """The verdict a trial of this design gets (issue 32: the steady check fits the design). A single trial
    must be steady (SNIA) to stand for the storage. In a repeated design the intervals already carry the
    per-second and trial-to-trial variation, and the spec may make trials short on purpose (`auto`, the
    trial-length rule): there only a trend beyond the noise (`drift`) biases a trial."""
    if s.basis is not None:  # None: stored before the basis was (2026-11), its SNIA verdict stands
        s.basis = "drift" if repeated(design) else "snia"
    return s


def judge_design(result: dict) -> None:
    """Once a trial's design is stored with it (the runner), its steady flag's basis follows the design."""
    flags = Flags.of(result)
    s = flags.steady
    if s is not None:
        flags.set(Flag.STEADY, with_basis(s, result.get("design")))
        flags.write(result)


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


# ---- emulated ------------------------------------------------------------------------------


def emulated(runtime_facts: dict) -> Emulated | None:
    """The runtime says it emulated the CPU (stack/vm: TCG without KVM); None when it did not."""
    if not runtime_facts.get("emulated"):
        return None
    return Emulated(runtime_facts.get("emulated_reason", ""))


def emulated_across_hosts(per_host: dict[str, Emulated | None]) -> Emulated | None:
    """Emulated when any host's part was, with each such host's reason."""
    hosts = {h: e for h, e in per_host.items() if e is not None and e.suspect}
    return Emulated("; ".join(f"host {h}: {e.reason}" for h, e in hosts.items())) if hosts else None


# ---- failed --------------------------------------------------------------------------------


# The tail of a failure's stderr kept in the result: the cause, not the whole log.
FAILURE_STDERR_CHARS = 8000


def failed(category: str, message: str, stderr: str = "") -> Failure:
    """No measurement: `category` from errors.FAILURE_CATEGORIES."""
    return Failure(category, message, stderr[-FAILURE_STDERR_CHARS:])


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
    runtime_facts: dict,
    moved_basis: str = "",
) -> tuple[Flags, list[Warning]]:
    """Every flag of one trial from its evidence, and the warnings of its suspicions."""
    judged = [cache(moved, disks, direct_io, path, moved_basis), sync(windows, starts, runtime_s)]
    flags = Flags({j.flag: j for j in judged})
    flags.set(Flag.STEADY, steady(series, tool_steady))  # null when the workload gave no series
    if (e := emulated(runtime_facts)) is not None:
        flags.set(Flag.EMULATED, e)
    return flags, [Warning(j.flag, j.reason) for j in judged if j.warns]
