"""The sync flag: did the instances of a trial do their I/O together?

An aggregate over N instances is the storage's only while all N ran. Judged on
the workloads' own measured windows (start and end of each instance's I/O, from
the tool's output) when every window is known; else on the wrappers' start
times.
"""

from __future__ import annotations

from strata.results.flags import Flag, Judgement, Sync, SyncExtra

# The instances' measured windows must overlap for this share of their mean duration.
MIN_OVERLAP = 0.90
# Without the workloads' own windows: start skew allowed, as a share of the runtime (at least 1 s).
MAX_SKEW_SHARE = 0.05
MIN_SKEW_S = 1.0


def sync(windows: list[tuple[float, float] | None], starts: list[float | None], runtime_s: float) -> Sync:
    """Did the instances do their I/O together? Judged on the workloads' own windows (start and end
    of the measured I/O) when every window is known (a server workload's windows are its clients',
    however many instances serve them); else on the wrappers' start times."""
    n = len(starts)
    wrapper = [s for s in starts if s is not None]
    extra: SyncExtra = {
        "instances": n,
        "skew_s": 0.0,
        "wrapper_skew_s": (max(wrapper) - min(wrapper)) if len(wrapper) > 1 else 0.0,
    }
    known = [w for w in windows if w is not None]
    judged = bool(windows) and len(known) == len(windows)
    if (len(windows) if judged else n) < 2:
        return Judgement(Flag.SYNC, False, "one instance" if n < 2 else "one measured window", extra=extra)
    if judged:
        return _on_windows(known, extra)
    skew = extra["wrapper_skew_s"]
    allowed = max(MIN_SKEW_S, MAX_SKEW_SHARE * runtime_s)
    extra["skew_s"], extra["allowed_s"], extra["basis"] = skew, allowed, "wrapper"
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


def _on_windows(windows: list[tuple[float, float]], extra: SyncExtra) -> Sync:
    first_end = min(e for _, e in windows)
    last_start = max(s for s, _ in windows)
    mean_len = sum(e - s for s, e in windows) / len(windows)
    overlap = max(0.0, first_end - last_start) / mean_len if mean_len > 0 else 0.0
    skew = last_start - min(s for s, _ in windows)
    extra["skew_s"], extra["overlap"], extra["basis"] = skew, round(overlap, 4), "workload"
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
