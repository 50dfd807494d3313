"""What a trial's flags are judged from: the evidence the trial stores, as one typed record.

`TrialEvidence.of` builds it from what the workload's parse declared (its windows, its headline's
series, the tool's own steady-state verdict, its syncs and writes), for one host's trial (run/trial.py)
and for the merge of a trial's parts across hosts (hosts/merge.py), each adding what it alone knows;
`judge_trial` (trial.py) turns it into flags. `headline` is the number every judgement of a result is about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from strata.core.jsondoc import JsonObject, num, obj, text

if TYPE_CHECKING:
    from strata.results.flags import Flags
    from strata.workloads.base import DirectWrites, Parsed, Syncs

Window = tuple[float, float]
# One layer's counters (collectors/diskstats.py: bytes, requests, merges, flushes as numbers; its write cache
# and FUA as sysfs says them), over the trial or over the workload's measured window.
LayerCounters = JsonObject


def headline(result: JsonObject) -> tuple[float | None, str]:
    """(value, unit) of a stored result's headline: what the workload named in `metrics.primary`."""
    return headline_of(obj(result, "metrics"))


def headline_of(metrics: JsonObject) -> tuple[float | None, str]:
    """(value, unit) of the headline a workload's metrics name (`primary`)."""
    p = obj(metrics, "primary")
    return num(p, "value"), text(p, "unit")


class StackWords(TypedDict, total=False):
    """The stack under test in the user's words, for a flag's fix (none across hosts: each host judged its own)."""

    path: str
    filesystem: str | None
    mount_options: list[str]
    runtime: JsonObject  # the runtime's parameters, as the trial resolved them


@dataclass(frozen=True)
class MovedBytes:
    """What the cache check compares on one host: the bytes the workload says it moved, by direction, and
    the diskstats totals of each layer below it (the device under test first)."""

    moved: dict[str, int]
    disks: dict[str, LayerCounters]
    direct_io: bool  # the workload asked for O_DIRECT: a cache is not part of what it measures
    path: str  # the path under test (tmpfs measures memory)
    basis: str = ""  # what the workload's bytes are when not O_DIRECT I/O ("as WAL": bytes a database must write)
    # a database's data set and the memory its servers can use ({data_set_bytes, memory_bytes, memory_of, fix})
    memory: JsonObject | None = None
    # how much of the storage the workload read was ever written ({size_bytes, allocated_bytes, of}: its files'
    # blocks, or a loop device's backing file's): a hole reads as zeros without the device (validity/disks.py)
    written: JsonObject | None = None


@dataclass(frozen=True)
class TrialEvidence:
    """Everything one trial's flags are judged from."""

    windows: list[Window | None]  # each instance's measured I/O window, from the tool's own output
    starts: list[float | None]  # when each instance's wrapper started it
    runtime_s: float  # the workload's runtime, 0 when it has none (the allowed start skew scales with it)
    series: Sequence[Sequence[float]] | None = None  # the headline's per-second series [[t, value], ...]
    tool_steady: JsonObject | None = None  # the tool's own steady-state verdict (fio's --steadystate)
    moved: MovedBytes | None = None  # one host's bytes (None across hosts: `parts`)
    runtime_facts: JsonObject = field(default_factory=dict)  # what the runtime says of the trial (emulated)
    # The trial's metrics and its collectors' totals, as the result stores them: what a new flag judged from
    # stored numbers (the host's CPU, an instance's cgroup counters) reads, with no new field here.
    metrics: JsonObject = field(default_factory=dict)
    collectors: JsonObject = field(default_factory=dict)
    # Across hosts: each host's part's flags, judged on its host (its disks against its instances' bytes,
    # its runtime); the trial's cache, emulated, flush and absorbed flags combine them.
    parts: dict[str, Flags] | None = None
    # The syncs the workload asked for and the O_DIRECT writes it issued, by its own count (workloads/base.py)
    syncs: Syncs | None = None
    direct_writes: DirectWrites | None = None
    # Each layer's counters over the workload's measured window (collectors/diskstats.py `within`), the device
    # under test first; None: not known, and the flush and absorbed rules read the trial's totals (`moved.disks`).
    measured: dict[str, dict[str, float]] | None = None
    # The stack in the user's words, for a flag's fix: path, filesystem, mount_options, runtime (its parameters).
    stack: StackWords = field(default_factory=lambda: StackWords())

    @classmethod
    def of(
        cls,
        parsed: Parsed,
        runtime_s: float,
        starts: list[float | None],
        collectors: JsonObject,
        *,
        windows: list[Window | None] | None = None,
        metrics: JsonObject | None = None,
        parts: dict[str, Flags] | None = None,
        moved: MovedBytes | None = None,
        runtime_facts: JsonObject | None = None,
        measured: dict[str, dict[str, float]] | None = None,
        stack: StackWords | None = None,
    ) -> TrialEvidence:
        """The evidence of a trial the workload parsed (`parsed`): its windows (or `windows`, moved into
        another clock), its headline's series and the tool's steady-state verdict, its syncs and O_DIRECT
        writes, its metrics (or `metrics`, with more beside); and what the caller alone knows: one host's
        bytes, runtime, measured counters and stack, or across hosts each part's flags."""
        return cls(
            windows=parsed.windows if windows is None else windows,
            starts=starts,
            runtime_s=runtime_s,
            series=parsed.headline_series(),
            tool_steady=parsed.tool_steady,
            moved=moved,
            runtime_facts=runtime_facts or {},
            metrics=parsed.metrics if metrics is None else metrics,
            collectors=collectors,
            parts=parts,
            syncs=parsed.syncs,
            direct_writes=parsed.direct_writes,
            measured=measured,
            stack=stack or StackWords(),
        )

    def layers(self) -> tuple[dict[str, LayerCounters], str]:
        """Each layer's counters (the device under test first) and what they were counted over: the measured
        window where known ("measured", with each disk's cache facts), else the whole trial ("trial")."""
        totals = self.moved.disks if self.moved is not None else {}
        if self.measured is None:
            return totals, "trial"
        out: dict[str, LayerCounters] = {
            n: {**self.measured[n], "write_cache": d.get("write_cache"), "fua": d.get("fua")}
            for n, d in totals.items()
            if n in self.measured
        }
        return (out, "measured") if out else (totals, "trial")
