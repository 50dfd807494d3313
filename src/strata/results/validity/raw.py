"""The above_raw flag: a result that beats the raw device it sits on.

The raw device under the baseline runtime (natively) is what every stack on it is
compared with. A result above it cannot be device performance (study 003, section
5.2: loop-lvm "1.4x the IOPS of a RAW block device" because "dm-loop does not
respect the O_DIRECT flag"). With byte evidence that the device moved the bytes,
that is not proof of a cache: the result is *unconfirmed* (a suspect outlier, or
a disturbed raw baseline) until repetitions of both decide, by the interval of
their ratio (`above_raw_repeated`). Both are judged when stored results become cells
(analysis/cells/across.py).
"""

from __future__ import annotations

from strata.core.jsondoc import JsonObject, obj, text
from strata.core.params import LoadCounts
from strata.results.flags import AboveRaw, AboveRawEvidence, Flag, Judgement
from strata.stack.runtimes import REGISTRY as RUNTIMES

# Above the raw device by more than this is suspicious. Single short trials on a
# shared VM varied 4x back to back on the same loop device (9864 vs 2414 IOPS, seen
# here), so a single trial is flagged only for a clear excess; with repetitions the
# intervals decide instead (`above_raw_repeated`).
ABOVE_RAW_TOLERANCE = 1.5
# With repetitions: above the raw device when the ratio's 95% interval lies above 1.0 and the
# mean is this far above (a few percent over raw is filesystem readahead or noise, not a cache).
MIN_ABOVE = 1.10


def tolerance_words() -> str:
    """The single-trial rule in the report's words."""
    return f"by more than {ABOVE_RAW_TOLERANCE:g}x"


def above_raw(
    value: float | None, raw_value: float | None, raw_trial: str | None, moved: bool | None
) -> AboveRaw | None:
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


def above_raw_repeated(
    mean: float, raw_mean: float, raw_trial: str | None, ratio: float, low: float | None, high: float | None
) -> AboveRaw | None:
    """A configuration's results (not byte-flagged as a cache) against its raw device's: with repetitions
    of both (the ratio's interval `low`..`high`), above when the interval lies above 1.0 and the ratio
    above MIN_ABOVE; without an interval, by the single-trial tolerance. None: not above."""
    if low is None or high is None:
        return above_raw(mean, raw_mean, raw_trial, True)
    if not (low > 1.0 and ratio > MIN_ABOVE):
        return None
    reason = (
        f"{mean:.0f} is {ratio:.2f}x [{low:.2f}, {high:.2f}] the raw device's {raw_mean:.0f} for the same "
        "workload, although the device moved the workload's bytes: unconfirmed as device performance (a cache "
        "below the device, or the raw baseline)"
    )
    evidence: AboveRawEvidence = {
        "raw_value": raw_mean,
        "raw_trial": raw_trial,
        "ratio": ratio,
        "low": low,
        "high": high,
    }
    return Judgement(Flag.ABOVE_RAW, True, reason, evidence=evidence)


def raw_baseline_key(t: JsonObject) -> tuple[object, ...]:
    """What a raw-device baseline must share with a result (`t`: its resolved trial): device, workload
    parameters, load, and where the instances ran (the raw device of one machine is no baseline for another's)."""
    wl = sorted((k, v) for k, v in obj(t, "workload").items() if k != "name")
    ld = obj(t, "load")
    where = repr(sorted(obj(obj(t, "placement"), "instances").items()))
    return (obj(t, "device")["name"], repr(wl), *(ld[axis] for axis in LoadCounts.names()), where)


def is_raw_baseline(t: JsonObject) -> bool:
    """The raw device under the baseline runtime (natively), `t` a result's resolved trial: what every ratio
    to raw and every cache bound is taken against."""
    return (
        obj(t, "filesystem").get("type") == "raw"
        and is_baseline_runtime(text(obj(t, "runtime"), "type"))
        and t.get("path") == "device"
    )


def is_baseline_runtime(runtime_type: str) -> bool:
    """The registered runtime of that name says it is the baseline (native); one not registered is not."""
    runtime = RUNTIMES.get(runtime_type)
    return runtime is not None and runtime.baseline
