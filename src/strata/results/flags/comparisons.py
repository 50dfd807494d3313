"""The suspicions a comparison raises: of the instances' I/O windows with each other (sync), of the
repetitions with each other (spread), of a result with the raw device's (above_raw); judged in
validity/windows.py, repetitions.py and raw.py."""

from __future__ import annotations

from typing import TypedDict

from strata.results.flags.judgement import Judgement, NoEvidence


class AboveRawEvidence(TypedDict, total=False):
    """The raw device's result the above_raw flag compares with (validity/raw.py)."""

    raw_value: float
    raw_trial: str | None
    ratio: float
    bytes_moved: bool | None  # the cache evidence says every layer moved the workload's bytes
    low: float  # with repetitions: the ratio's interval
    high: float


class SyncEvidence(TypedDict, total=False):
    """Each instance's measured I/O window (start, end) in seconds (validity/windows.py)."""

    windows: list[tuple[float, float]]  # stored as [[start, end], ...]


class SyncExtra(TypedDict, total=False):
    """The sync flag's top-level fields: the skews it was judged on, and across hosts each host's offset."""

    instances: int
    skew_s: float
    wrapper_skew_s: float
    overlap: float
    basis: str  # "workload" (the tools' own windows) or "wrapper" (the instances' start times)
    allowed_s: float
    hosts: dict[str, dict[str, object]]  # across hosts: each host's clock offset and first I/O (hosts/merge.py)
    host_skew_s: float | None
    release_skew_s: float | None


class SpreadExtra(TypedDict, total=False):
    cv: float | None  # the coefficient of variation of the repetitions


AboveRaw = Judgement[AboveRawEvidence, NoEvidence]
Sync = Judgement[SyncEvidence, SyncExtra]
Spread = Judgement[NoEvidence, SpreadExtra]
