"""`containers: auto`: add instances (1, 2, 3, ...) until the aggregate throughput has fallen at two
consecutive counts, then stop; the peak count is stored with the run (study 003 section 6.1 finds the
container count that maximizes aggregate throughput).

A series is every configuration that differs only in its container count. After the trials of a count
are stored, `next_count` says whether the series goes on: it stops once the mean headline fell twice
in a row (`peak`), at `max_containers`, or when a count has no successful trial at all (`failing`:
e.g. the host ran out of memory for another database). Generic: any workload with a headline scales.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from strata.core.jsondoc import JsonObject, obj

if TYPE_CHECKING:
    from strata.experiment.expand import Trial

PEAK, MAX, FAILING = "peak", "max_containers", "failing"


def series_key(resolved: JsonObject) -> str:
    """The configuration (a resolved trial) without its count: trials of one series share it."""
    t = dict(resolved)
    t.pop("repetition", None)
    load = dict(obj(t, "load"))
    for k in ("containers", "name"):
        load.pop(k, None)
    t["load"] = load
    return json.dumps(t, sort_keys=True, default=str)


@dataclass
class Series:
    proto: Trial  # a trial at count 1 (repetition 0)
    values: dict[int, list[float]] = field(default_factory=dict)  # count -> headlines of successful trials
    failures: dict[int, int] = field(default_factory=dict)
    stopped: str | None = None

    def means(self) -> dict[int, float]:
        return {n: sum(v) / len(v) for n, v in sorted(self.values.items()) if v}

    @property
    def peak(self) -> int | None:
        m = self.means()
        return max(m, key=lambda n: m[n]) if m else None

    def next_count(self, last: int) -> int | None:
        """The next count to measure after `last`, or None (and why, in `stopped`)."""
        if self.stopped:
            return None
        if not self.values.get(last):
            self.stopped = FAILING
            return None
        m = self.means()
        counts = sorted(m)
        if len(counts) >= 3 and m[counts[-1]] < m[counts[-2]] < m[counts[-3]]:
            self.stopped = PEAK
            return None
        if last >= self.proto.load.max_containers:
            self.stopped = MAX
            return None
        return last + 1

    def report(self) -> Report:
        m = self.means()
        return {
            "counts": list(m),
            "throughput": [round(v, 4) for v in m.values()],
            "peak": self.peak,
            "stopped": self.stopped or "going",
        }


class Report(TypedDict):
    """A series of `containers: auto` as the run's record stores it."""

    counts: list[int]
    throughput: list[float]
    peak: int | None
    stopped: str


def is_auto(trial: Trial) -> bool:
    return trial.load.scale == "auto"
