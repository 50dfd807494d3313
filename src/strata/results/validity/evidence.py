"""What a trial's flags are judged from: the evidence the trial stores, as one typed record.

`TrialEvidence.of` builds it from what the workload's parse declared (its windows, its headline's
series, the tool's own steady-state verdict, its syncs and writes), for one host's trial (run/trial.py)
and for the merge of a trial's parts across hosts (hosts/merge.py), each adding what it alone knows;
`judge_trial` (trial.py) turns it into flags. `headline` is the number every judgement of a result is about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from strata.results.flags import Flags
    from strata.workloads.base import DirectWrites, Parsed, Syncs

Window = tuple[float, float]


def headline(result: dict[str, Any]) -> tuple[float | None, str]:
    """(value, unit) of a stored result's headline: what the workload named in `metrics.primary`."""
    return headline_of(result.get("metrics") or {})


def headline_of(metrics: dict[str, Any]) -> tuple[float | None, str]:
    """(value, unit) of the headline a workload's metrics name (`primary`)."""
    p = metrics.get("primary") or {}
    v = p.get("value")
    return (float(v) if v is not None else None), p.get("unit") or ""


class StackWords(TypedDict, total=False):
    """The stack under test in the user's words, for a flag's fix (none across hosts: each host judged its own)."""

    path: str
    filesystem: str | None
    mount_options: list[str]
    runtime: dict[str, Any]  # the runtime's parameters, as the trial resolved them


@dataclass(frozen=True)
class MovedBytes:
    """What the cache check compares on one host: the bytes the workload says it moved, by direction, and
    the diskstats totals of each layer below it (the device under test first)."""

    moved: dict[str, int]
    disks: dict[str, dict[str, Any]]
    direct_io: bool  # the workload asked for O_DIRECT: a cache is not part of what it measures
    path: str  # the path under test (tmpfs measures memory)
    basis: str = ""  # what the workload's bytes are when not O_DIRECT I/O ("as WAL": bytes a database must write)
    # a database's data set and the memory its servers can use ({data_set_bytes, memory_bytes, memory_of, fix})
    memory: dict[str, Any] | None = None


@dataclass(frozen=True)
class TrialEvidence:
    """Everything one trial's flags are judged from."""

    windows: list[Window | None]  # each instance's measured I/O window, from the tool's own output
    starts: list[float | None]  # when each instance's wrapper started it
    runtime_s: float  # the workload's runtime, 0 when it has none (the allowed start skew scales with it)
    series: Sequence[Sequence[float]] | None = None  # the headline's per-second series [[t, value], ...]
    tool_steady: dict[str, Any] | None = None  # the tool's own steady-state verdict (fio's --steadystate)
    moved: MovedBytes | None = None  # one host's bytes (None across hosts: `parts`)
    runtime_facts: dict[str, Any] = field(default_factory=dict)  # what the runtime says of the trial (emulated)
    # The trial's metrics and its collectors' totals, as the result stores them: what a new flag judged from
    # stored numbers (the host's CPU, an instance's cgroup counters) reads, with no new field here.
    metrics: dict[str, Any] = field(default_factory=dict)
    collectors: dict[str, Any] = field(default_factory=dict)
    # Across hosts: each host's part's flags, judged on its host (its disks against its instances' bytes,
    # its runtime); the trial's cache, emulated, flush and absorbed flags combine them.
    parts: dict[str, Flags] | None = None
    # The syncs the workload asked for and the O_DIRECT writes it issued, by its own count (workloads/base.py)
    syncs: Syncs | None = None
    direct_writes: DirectWrites | None = None
    # Each layer's counters over the workload's measured window (collectors/diskstats.py `within`), the device
    # under test first; None: not known, and the flush and absorbed rules read the trial's totals (`moved.disks`).
    measured: dict[str, dict[str, Any]] | None = None
    # The stack in the user's words, for a flag's fix: path, filesystem, mount_options, runtime (its parameters).
    stack: StackWords = field(default_factory=lambda: StackWords())

    @classmethod
    def of(
        cls,
        parsed: Parsed,
        runtime_s: float,
        starts: list[float | None],
        collectors: dict[str, Any],
        *,
        windows: list[Window | None] | None = None,
        metrics: dict[str, Any] | None = None,
        parts: dict[str, Flags] | None = None,
        moved: MovedBytes | None = None,
        runtime_facts: dict[str, Any] | None = None,
        measured: dict[str, dict[str, Any]] | None = None,
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

    def layers(self) -> tuple[dict[str, dict[str, Any]], str]:
        """Each layer's counters (the device under test first) and what they were counted over: the measured
        window where known ("measured", with each disk's cache facts), else the whole trial ("trial")."""
        totals = self.moved.disks if self.moved is not None else {}
        if self.measured is None:
            return totals, "trial"
        out = {
            n: {**self.measured[n], "write_cache": d.get("write_cache"), "fua": d.get("fua")}
            for n, d in totals.items()
            if n in self.measured
        }
        return (out, "measured") if out else (totals, "trial")
