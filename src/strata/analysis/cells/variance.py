"""Where the noise lives: within a trial (second to second) or between trials (run to run).

Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time" (ISMM 2013), estimate the variance at each
level of an experiment and spend repetitions at the level where it is. Here the levels are two: the
per-second samples of the headline within a trial, and the trials of one configuration. A one-way
random-effects analysis of variance of the per-second series gives both: the within-trial variance
(pooled over the trials) and the between-trial variance (the variance of the trial means beyond what
the within-trial variance explains). On the machines strata was built on, trial means of one
configuration vary 5-12% while the seconds within a trial vary 1-4%: the trial is the unit of noise,
so more and shorter trials decide sooner than fewer and longer ones.

The per-second samples are positively autocorrelated, so within/T understates the within-trial share of a
trial mean's variance, the between-trial component takes the rest, and the advice below errs towards
shorter trials by the same amount (on this VM the within-trial noise is 8-23%/s in random writes, and still
81-93% of a trial mean's variance lies between trials).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata.core.jsondoc import JsonObject
from strata.results.validity import STEADY_WINDOW_S

if TYPE_CHECKING:
    from strata.analysis.cells.cells import Cell
    from strata.results.result import Result

MIN_TRIAL_S = float(STEADY_WINDOW_S)  # the shortest trial the steady-state check can judge


@dataclass(frozen=True)
class Components:
    trials: int
    seconds: float  # mean number of per-second samples per trial
    mean: float
    within_cv: float  # second to second, within a trial (pooled), relative to the mean
    between_cv: float  # trial to trial, beyond what the seconds explain, relative to the mean
    overhead_s: float | None = None  # a trial's machine time beyond its measured seconds

    @property
    def between_dominates(self) -> bool:
        return self.between_cv**2 > self.within_cv**2 / max(self.seconds, 1)

    def trial_mean_cv(self, seconds: float) -> float:
        """The coefficient of variation of one trial's mean at this length."""
        return math.sqrt(self.between_cv**2 + self.within_cv**2 / max(seconds, 1))

    def best_seconds(self) -> float:
        """The trial length that minimizes the variance of a configuration's mean per unit of machine
        time, (b^2 + w^2/T)(c + T): T* = sqrt(c) w / b (Kalibera & Jones's allocation for two levels),
        no shorter than the steady-state check needs."""
        c = self.overhead_s or 0.0
        if self.between_cv <= 0:
            return max(self.seconds, MIN_TRIAL_S)
        return max(math.sqrt(c) * self.within_cv / self.between_cv, MIN_TRIAL_S)

    def to_json(self) -> JsonObject:
        return {
            "trials": self.trials,
            "seconds": round(self.seconds, 1),
            "within_cv": round(self.within_cv, 4),
            "between_cv": round(self.between_cv, 4),
            "overhead_s": None if self.overhead_s is None else round(self.overhead_s, 1),
        }


def components(series: list[list[float]], overhead_s: float | None = None) -> Components | None:
    """The variance components of one configuration from its trials' per-second series (each with 2 or
    more samples); None with fewer than 2 such trials."""
    stats = []
    for s in series:
        vals = [float(v) for v in s if v is not None]
        if len(vals) >= 2:
            m = sum(vals) / len(vals)
            stats.append((len(vals), m, (sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5))
    return from_stats(stats, overhead_s)


def from_stats(stats: list[tuple[int, float, float]], overhead_s: float | None = None) -> Components | None:
    """The same from each trial's (seconds, mean, sd) of its per-second series (flags.steady.series)."""
    stats = [(n, m, sd) for n, m, sd in stats if n >= 2]
    if len(stats) < 2:
        return None
    means = [m for _, m, _ in stats]
    grand = sum(means) / len(means)
    if grand <= 0:
        return None
    within = sum((n - 1) * sd**2 for n, _, sd in stats) / sum(n - 1 for n, _, _ in stats)
    seconds = sum(n for n, _, _ in stats) / len(stats)
    var_means = sum((m - grand) ** 2 for m in means) / (len(means) - 1)
    between = max(var_means - within / seconds, 0.0)
    return Components(len(stats), seconds, grand, math.sqrt(within) / grand, math.sqrt(between) / grand, overhead_s)


def better_trials(c: Components, repetitions: int) -> tuple[int, float] | None:
    """When the trials are longer, or shorter, than the noise rewards: (repetitions, seconds) of trials of the
    best length T* that take the same machine time and give a configuration's mean a variance at least a
    third smaller; else None. Shorter where the trial is the unit of noise, longer where the seconds are."""
    if c.overhead_s is None:
        return None
    # no longer than keeps 2 repetitions in the same machine time (an interval needs two)
    best = min(c.best_seconds(), repetitions * (c.overhead_s + c.seconds) / 2 - c.overhead_s)
    if c.seconds / 2 <= best <= c.seconds * 2:
        return None
    n = int(repetitions * (c.overhead_s + c.seconds) // (c.overhead_s + best))
    if n < 2:
        return None
    now = c.trial_mean_cv(c.seconds) ** 2 / repetitions
    then = c.trial_mean_cv(best) ** 2 / n
    return (n, round(best)) if then < now * 2 / 3 else None


def shorter_trials(c: Components, repetitions: int) -> tuple[int, float] | None:
    """`better_trials` where they are shorter (the trial is the unit of noise)."""
    better = better_trials(c, repetitions)
    return better if better is not None and better[1] < c.seconds and c.between_dominates else None


def of_cells(cells: list[Cell]) -> dict[str, Components]:
    """Each cell's components, from its trials' per-second headline series: the statistics stored with the
    steady flag (flags.steady.series), else the series artifact (results stored before they were)."""
    out = {}
    for c in cells:
        stats, overheads = [], []
        for r in c.ok:
            st = _stats(r)
            if st is None:
                continue
            stats.append(st)
            duration_s = r.duration_s
            if isinstance(duration_s, (int, float)):
                overheads.append(max(float(duration_s) - st[0], 0.0))
        comp = from_stats(stats, sum(overheads) / len(overheads) if overheads else None)
        if comp is not None:
            out[c.name] = comp
    return out


def _stats(r: Result) -> tuple[int, float, float] | None:
    steady = r.flags.steady
    st = steady.series if steady else None
    if isinstance(st, dict) and {"seconds", "mean", "sd"} <= set(st):
        return int(st["seconds"]), float(st["mean"]), float(st["sd"])
    from strata.analysis.cells.cells import artifact

    name = r.primary.series
    s = (artifact(r, "workload-series.json") or {}).get(name) if name else None
    values = [v for v in (_value(p) for p in s) if v is not None] if isinstance(s, list) else []
    if len(values) < 2:
        return None
    m = sum(values) / len(values)
    return len(values), m, (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def _value(point: object) -> float | None:
    """A per-second sample as stored: a number, or a [second, value] pair."""
    if isinstance(point, (list, tuple)) and point:
        point = point[-1]
    return float(point) if isinstance(point, (int, float)) and not isinstance(point, bool) else None
