"""The steady flag's value: SNIA PTS steady state of the headline's per-second series (validity/series.py,
snia.py), or in a repeated design its drift."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, TypedDict

from strata.core.jsondoc import JsonObject, JsonValue, flag, obj, text, whole
from strata.results.flags.flag import Flag, number, split


class SeriesStats(TypedDict):
    """The whole per-second series' count, mean and standard deviation (what analysis/cells/variance.py needs
    of a trial without reading its artifacts again)."""

    seconds: int
    mean: float
    sd: float


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
    series: SeriesStats | None = None  # the whole series' seconds, mean and sd (analysis/cells/variance.py)
    tool: JsonObject | None = None  # the tool's own verdict (fio's --steadystate), as the tool gave it
    # What the verdict rests on: "snia" (range and slope over the last window: a single trial must be steady
    # to stand for the storage) or "drift" (a repeated design, whose intervals carry the trial-to-trial and
    # per-second variation: only a trend beyond the noise biases a trial). Stored from 2026-11 on; before, snia.
    basis: str | None = None
    drift: bool | None = None  # a trend beyond the per-second noise over the whole window (validity.steady)
    drift_pct: float | None = None
    drift_t: float | None = None
    extra: JsonObject = field(default_factory=dict)  # stored keys this version does not know, kept

    KEYS: ClassVar = (
        "steady", "judged", "reason", "window_s", "mean", "range_pct", "slope_pct", "series", "tool",
        "basis", "drift", "drift_pct", "drift_t",
    )  # fmt: skip
    OPTIONAL: ClassVar = ("series", "tool", "basis", "drift", "drift_pct", "drift_t")  # absent from older results

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {k: getattr(self, k) for k in self.KEYS if k not in self.OPTIONAL}
        for k in self.OPTIONAL:
            if getattr(self, k) is not None:
                doc[k] = getattr(self, k)
        return {**doc, **self.extra}

    @classmethod
    def from_json(cls, doc: JsonObject) -> Steady:
        core, extra = split(doc, cls.KEYS)
        series = _series(core.get("series"))
        if series is None and core.get("series") is not None:
            extra["series"] = core["series"]  # not the stats this version writes: kept as stored
        return cls(
            steady=flag(core, "steady"),
            judged=flag(core, "judged", True),
            reason=text(core, "reason"),
            window_s=whole(core, "window_s"),
            mean=number(core, "mean"),
            range_pct=number(core, "range_pct"),
            slope_pct=number(core, "slope_pct"),
            series=series,
            tool=obj(core, "tool") if core.get("tool") is not None else None,
            basis=text(core, "basis") if core.get("basis") is not None else None,
            drift=flag(core, "drift") if core.get("drift") is not None else None,
            drift_pct=number(core, "drift_pct"),
            drift_t=number(core, "drift_t"),
            extra=extra,
        )

    @property
    def warns(self) -> bool:
        if self.basis == "drift":
            return self.judged and bool(self.drift)
        return self.judged and not self.steady


def _series(v: JsonValue) -> SeriesStats | None:
    """The series' stats, when stored in the form `validity.series_stats` gives; None otherwise."""
    if not isinstance(v, dict) or set(v) != {"seconds", "mean", "sd"}:
        return None
    n, mean, sd = v["seconds"], v["mean"], v["sd"]
    if isinstance(n, int) and isinstance(mean, (int, float)) and isinstance(sd, (int, float)):
        return {"seconds": n, "mean": mean, "sd": sd}
    return None
