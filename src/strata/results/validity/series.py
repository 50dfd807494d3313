"""The steady flag: the headline's per-second series, judged as the spec's design calls for.

A single trial must be steady to stand for the storage: SNIA PTS's criterion
over the last window (snia.py), without the partial last second. In a repeated
design the intervals already carry the per-second and trial-to-trial variation,
and the spec may make trials short on purpose: there only a trend beyond the
noise (a drift over the whole window) biases a trial (`with_basis`, issue 32).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from strata.core.jsondoc import JsonObject
from strata.results.flags import Flag, Flags, SeriesStats, Steady
from strata.results.validity import snia

if TYPE_CHECKING:
    from strata.experiment.model import DesignDoc

# The SNIA window: the last this many whole seconds of a trial.
STEADY_WINDOW_S = 5


def criterion_words() -> str:
    """SNIA's criterion in the report's words."""
    return (
        f"SNIA PTS: range within {snia.MAX_RANGE_PCT:.0f}% and slope excursion within {snia.MAX_SLOPE_PCT:.0f}% "
        f"of the mean over the last {STEADY_WINDOW_S} s"
    )


def drift_words() -> str:
    """What a drift is, in the report's words."""
    return f"a trend of more than {snia.MAX_SLOPE_PCT:.0f}% of the mean, beyond their per-second noise"


def full_seconds(series: Sequence[Sequence[float]]) -> list[float]:
    """The values of a per-second series without its last, partial second (kept when too short)."""
    values = [v for _, v in series]
    return values[:-1] if len(values) > 2 else values


def steady(
    series: Sequence[Sequence[float]] | None,
    tool_criterion: JsonObject | None = None,
    design: DesignDoc | None = None,
) -> Steady | None:
    """SNIA PTS steady state of a headline's per-second series, with the tool's own verdict when it has one,
    and the trend over the whole window; judged on the basis the design calls for (`with_basis`)."""
    if not series:
        return None
    values = full_seconds(series)
    verdict = snia.detect(values, STEADY_WINDOW_S)
    d = snia.drift(values)
    drifts = None
    pct, t = d["drift_pct"], d["drift_t"]
    if pct is not None and t is not None and verdict["judged"]:  # both or neither (snia.drift)
        beyond = abs(t) >= snia.drift_t_critical(len(values) - 2)
        drifts = pct > snia.MAX_SLOPE_PCT and beyond
    s = Steady(**verdict, series=series_stats(values), tool=tool_criterion or None, basis="snia", drift=drifts, **d)
    return with_basis(s, design) if design is not None else s


def repeated(design: DesignDoc | None) -> bool:
    """The design measures trial-to-trial variation itself: `repetitions: auto`, or 2 and more."""
    reps = design.get("repetitions") if design else None
    return reps == "auto" or (isinstance(reps, int) and reps >= 2)


def with_basis(s: Steady, design: DesignDoc | None) -> Steady:
    """The verdict a trial of this design gets (issue 32: the steady check fits the design). A single trial
    must be steady (SNIA) to stand for the storage. In a repeated design the intervals already carry the
    per-second and trial-to-trial variation, and the spec may make trials short on purpose (`auto`, the
    trial-length rule): there only a trend beyond the noise (`drift`) biases a trial."""
    if s.basis is not None:  # None: stored before the basis was (2026-11), its SNIA verdict stands
        s.basis = "drift" if repeated(design) else "snia"
    return s


def judge_design(flags: Flags, design: DesignDoc | None) -> None:
    """Once a trial's design is stored with it (the runner), its steady flag's basis follows the design."""
    s = flags.steady
    if s is not None:
        flags.set(Flag.STEADY, with_basis(s, design))


def series_stats(values: list[float]) -> SeriesStats:
    """The whole series' count, mean and standard deviation: what the report's variance components
    (analysis/cells/variance.py) need of a trial, without reading its artifacts again."""
    n = len(values)
    mean = sum(values) / n if n else 0.0
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {"seconds": n, "mean": mean, "sd": sd}
