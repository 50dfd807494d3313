"""One trial's flags from its evidence, and the warnings of its suspicions.

Each flag judged when a trial ends has its judge here (`JUDGES`): a function
of the trial's `TrialEvidence` to the flag's value, or None when the flag does
not apply (stored as null where its declaration says so, flags.DECLARED).
The flags that need other trials (above_raw, its interval once repetitions exist,
spread: raw.py, repetitions.py) are judged when stored results become cells
(analysis/cells/across.py); the steady flag's basis once the design is stored
(series.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from strata.results.flags import DECLARED, Flag, Flags, Judgement, Value
from strata.results.validity.absorbed import absorbed
from strata.results.validity.disks import cache, cache_across_hosts
from strata.results.validity.emulation import emulated, emulated_across_hosts
from strata.results.validity.evidence import TrialEvidence
from strata.results.validity.flushes import across_hosts, flush
from strata.results.validity.saturation import saturated
from strata.results.validity.series import steady
from strata.results.validity.windows import sync


class WarningDoc(TypedDict):
    """A warning as a result stores it."""

    flag: str
    message: str


@dataclass(frozen=True)
class Warning:
    flag: Flag
    message: str

    def to_json(self) -> WarningDoc:
        return {"flag": self.flag.value, "message": self.message}


def warnings_of(flags: Flags) -> list[Warning]:
    """The warnings a result stores beside its flags: each suspicion (a `Judgement`) that warns."""
    return [Warning(f, v.reason) for f, v in flags.items() if isinstance(v, Judgement) and v.warns]


def _cache(ev: TrialEvidence) -> Value | None:
    if ev.parts is not None:
        return cache_across_hosts({h: f.cache for h, f in ev.parts.items()})
    m = ev.moved
    return None if m is None else cache(m.moved, m.disks, m.direct_io, m.path, m.basis, m.memory, m.written)


def _sync(ev: TrialEvidence) -> Value | None:
    return sync(ev.windows, ev.starts, ev.runtime_s)


def _steady(ev: TrialEvidence) -> Value | None:
    return steady(ev.series, ev.tool_steady)


def _emulated(ev: TrialEvidence) -> Value | None:
    if ev.parts is not None:
        return emulated_across_hosts({h: f.emulated for h, f in ev.parts.items()})
    return emulated(ev.runtime_facts)


def _flush(ev: TrialEvidence) -> Value | None:
    if ev.parts is not None:
        return across_hosts({h: f.flush for h, f in ev.parts.items()}, Flag.FLUSH)
    disks, window = ev.layers()
    return flush(ev.syncs, disks, ev.stack, window)


def _absorbed(ev: TrialEvidence) -> Value | None:
    if ev.parts is not None:
        return across_hosts({h: f.absorbed for h, f in ev.parts.items()}, Flag.ABSORBED)
    disks, window = ev.layers()
    return absorbed(ev.direct_writes, disks, ev.stack, window, ev.syncs.count if ev.syncs else 0)


def _saturated(ev: TrialEvidence) -> Value | None:
    if ev.parts is not None:
        return across_hosts({h: f.saturated for h, f in ev.parts.items()}, Flag.SATURATED)
    m = ev.moved
    # a database's clients and servers share the host's CPU whatever its I/O (its metrics hold its clients'
    # phases): never memory by design, however buffered (Cassandra)
    database = "clients" in ev.metrics
    memory_by_design = m is not None and (m.path == "tmpfs" or (not m.direct_io and not database))
    return saturated(ev.collectors, memory_by_design)


Judge = Callable[[TrialEvidence], Value | None]
# The flags judged when a trial ends, in the order they are stored.
JUDGES: dict[Flag, Judge] = {
    Flag.CACHE: _cache,
    Flag.SYNC: _sync,
    Flag.STEADY: _steady,
    Flag.EMULATED: _emulated,
    Flag.FLUSH: _flush,
    Flag.ABSORBED: _absorbed,
    Flag.SATURATED: _saturated,
}


def judge_trial(evidence: TrialEvidence) -> tuple[Flags, list[Warning]]:
    """Every flag of one trial (or of a trial's parts across hosts) from its evidence, and the warnings of
    its suspicions."""
    flags = Flags()
    for flag, judge in JUDGES.items():
        value = judge(evidence)
        if value is not None or DECLARED[flag].null:
            flags.set(flag, value)
    return flags, warnings_of(flags)
