"""The steady flag's value: SNIA PTS steady state of the headline's per-second series (validity/series.py,
snia.py), or in a repeated design its drift."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from strata.results.flags.flag import Flag, split


@dataclass
class Steady:
    """SNIA PTS steady state of the headline's per-second series (validity/snia.py), over its last window."""

    flag: ClassVar[Flag] = Flag.STEADY
    steady: bool = False
    judged: bool = True  # False: too few seconds to judge
    reason: str = ""
    window_s: int | None = None
    mean: float | None = None
    range_pct: float | None = None
    slope_pct: float | None = None
    series: dict[str, Any] | None = None  # the whole series' seconds, mean and sd (analysis/cells/variance.py)
    tool: dict[str, Any] | None = None  # the tool's own verdict (fio's --steadystate)
    # What the verdict rests on: "snia" (range and slope over the last window: a single trial must be steady
    # to stand for the storage) or "drift" (a repeated design, whose intervals carry the trial-to-trial and
    # per-second variation: only a trend beyond the noise biases a trial). Stored from 2026-11 on; before, snia.
    basis: str | None = None
    drift: bool | None = None  # a trend beyond the per-second noise over the whole window (validity.steady)
    drift_pct: float | None = None
    drift_t: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    KEYS: ClassVar = (
        "steady", "judged", "reason", "window_s", "mean", "range_pct", "slope_pct", "series", "tool",
        "basis", "drift", "drift_pct", "drift_t",
    )  # fmt: skip
    OPTIONAL: ClassVar = ("series", "tool", "basis", "drift", "drift_pct", "drift_t")  # absent from older results

    def to_json(self) -> dict[str, Any]:
        doc = {k: getattr(self, k) for k in self.KEYS if k not in self.OPTIONAL}
        for k in self.OPTIONAL:
            if getattr(self, k) is not None:
                doc[k] = getattr(self, k)
        return {**doc, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Steady:
        core, extra = split(doc, cls.KEYS)
        return cls(**core, extra=extra)

    @property
    def warns(self) -> bool:
        if self.basis == "drift":
            return self.judged and bool(self.drift)
        return self.judged and not self.steady
