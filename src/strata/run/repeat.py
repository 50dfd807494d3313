"""Repetitions: trials run in rounds; `repetitions: auto` repeats only what is not yet decided.

Before the first trial, `auto` plans its looks for the rounds the budget pays for
(experiment/looks.py `budget_looks`: each round's trials at their workloads' estimated time; building stacks
and loading images are not counted, as the budget does not count them): at 3..6 with a budget for three
rounds, one look at 3, which spends all the error there instead of saving some for a look at 6 that never
comes. At each planned look each advice group (the stacks compared for one workload, load and device) is
raced (analysis/decisions/racing.py): a configuration stops once it is within the margin of the best (`equivalent`),
not the best (`eliminated`), or unlikely to be decided by the last look (`undecidable`); the leader once all
its comparisons ended (`decided`). The intervals behind these decisions spend the error over the looks and
hold for the whole group at once (analysis/decisions/answer.py, groups.py), so they stay valid however the run
stopped. A raw-device baseline runs in the first rounds only (experiment/expand.py BASELINE_ROUNDS: it is no
candidate; two trials give its ratios and flags an interval), and on only while it has fewer successful
trials than that and a configuration of its workload, load and device goes on (`baseline`); a configuration
compared with none stops at a look when its own interval, at that look's level, is within `precision`
(`precise`). Caps: the last planned look (`max_repetitions`), `budget` (checked after every round, the
trials' time only); a configuration that only fails stops as `failing`. Each reason is stored with the run,
with the half-width of the interval the report shows.

Rounds rather than repetitions back to back, in a random order within each round (expand.py `round_order`):
the machine's drift and its slow minutes spread over every configuration instead of separating them, and
the group comparisons take the rounds as blocks.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, TypedDict

from strata.analysis.cells.across import judged_cells
from strata.analysis.cells.cells import config_key
from strata.analysis.cells.query import by_context, match_key
from strata.analysis.decisions.answer import Design
from strata.analysis.decisions.racing import DECIDED, race
from strata.analysis.decisions.stats import summarize
from strata.core.jsondoc import whole
from strata.experiment.expand import BASELINE_ROUNDS, Trial, in_rounds
from strata.experiment.looks import budget_looks
from strata.results.result import Result
from strata.run import scaling

if TYPE_CHECKING:
    from strata.experiment.model import DesignDoc, Experiment

PRECISE, MAX, BUDGET, FAILING, BASELINE = "precise", "max_repetitions", "budget", "failing", "baseline"


@dataclass
class Progress:
    values: list[float] = field(default_factory=list)  # headline values of its successful trials
    failures: int = 0
    stopped: str | None = None
    half_width: float | None = None  # of its interval as the report shows it (Design.level), relative to the mean


class ConfigReport(TypedDict):
    """A configuration's repetitions as the run's record stores them (`Repetitions.report`)."""

    repetitions: int
    trials: int
    failed: int
    stopped: str  # why it has no more: "planned", or the racing's reason (analysis/racing.py)
    half_width: float | None


class Repetitions:
    def __init__(self, exp: Experiment, trials: list[Trial], stored: list[Result] | None = None, run_id: str = ""):
        self.exp = exp
        self.run_id = run_id
        self.trials = trials
        self.t0 = time.monotonic()
        self.configs: dict[str, Progress] = {}
        self.proto: dict[str, Trial] = {}  # a trial of each configuration, to make its next repetitions
        self.scaling: dict[str, scaling.Series] = {}  # `containers: auto`: series key -> its counts so far
        for t in trials:
            self.configs.setdefault(t.config, Progress())
            self.proto.setdefault(t.config, t)
            if scaling.is_auto(t):
                self.scaling.setdefault(scaling.series_key(t.resolved()), scaling.Series(t))
        self.seen: set[str | None] = set()
        # every finished trial of the run, for the racing (the analysis reads results in their stored form)
        self.results: list[Result] = []  # the results so far
        self.setup_s = 0.0  # building stacks (and loading images) in this run: not counted against the budget
        self.looks = self._plan_looks()
        for r in stored or []:
            self.record(r)

    def _plan_looks(self) -> tuple[int, ...]:
        """`auto`: the looks the budget pays for, at each round's trials' estimated time (the raw baselines in
        their first rounds only); fixed: none."""
        if not self.exp.auto:
            return ()
        protos = list(self.proto.values())

        def round_s(r: int) -> float:
            return sum(
                t.workload_plugin.estimate_s(t.workload)
                for t in protos
                if not (t.raw_baseline and r >= BASELINE_ROUNDS)
            )

        rounds = [round_s(r) for r in range(self.exp.max_repetitions)]
        return budget_looks(self.exp.min_repetitions, self.exp.max_repetitions, rounds, self.exp.budget)

    def record(self, result: Result) -> None:
        """A finished trial of this run (or one stored before it, on resume)."""
        if result.trial_id in self.seen:
            return
        self.seen.add(result.trial_id)
        self.results.append(result)
        if result.setup_s is not None and result.run_id == self.run_id:
            self.setup_s += float(result.setup_s)
        self._record_scaling(result)
        p = self.configs.get(config_key(result.trial))
        if p is None:
            return
        value, _ = result.headline
        if result.status == "ok" and value is not None:
            p.values.append(value)
        elif result.status == "failed":
            p.failures += 1

    def rounds(self) -> Iterator[list[Trial]]:
        """The planned trials round by round; with `auto`, further rounds while configurations go on."""
        by_rep: dict[int, list[Trial]] = {}
        for t in self.trials:
            by_rep.setdefault(t.repetition, []).append(t)
        for rep in sorted(by_rep):
            yield by_rep[rep]
        yield from self._scale()
        if not self.exp.auto:
            return
        rep = max(by_rep, default=-1) + 1
        while True:
            going = self._judge(rep)
            if not going:
                return
            yield in_rounds(self.exp, [self.proto[k].again(rep) for k in going])
            rep += 1

    def _record_scaling(self, result: Result) -> None:
        t = result.trial
        load = t.get("load")
        if not isinstance(load, dict) or load.get("scale") != "auto":
            return
        series = self.scaling.get(scaling.series_key(t))
        if series is None:
            return
        n = whole(load, "containers", 1) or 1
        value, _ = result.headline
        if result.status == "ok" and value is not None:
            series.values.setdefault(n, []).append(value)
        elif result.status == "failed":
            series.failures[n] = series.failures.get(n, 0) + 1

    def _scale(self) -> Iterator[list[Trial]]:
        """`containers: auto`: one round per further count, each series until it stops (scaling.py)."""
        last = {key: 1 for key in self.scaling}
        while True:
            round_: list[Trial] = []
            for key, series in self.scaling.items():
                n = series.next_count(last[key])
                if n is None:
                    continue
                last[key] = n
                for rep in range(self.exp.first_repetitions):
                    proto = _trial(series.proto)
                    t = dataclasses.replace(proto, load=proto.load.with_containers(n), repetition=rep)
                    self.configs.setdefault(t.config, Progress())
                    self.proto.setdefault(t.config, t)
                    round_.append(t)
            if not round_:
                return
            yield round_

    def _judge(self, rep: int) -> list[str]:
        """After `rep` rounds: stop what is decided or precise (at a planned look), at its maximum, failing, or
        out of budget; the configurations that go on."""
        spent = time.monotonic() - self.t0 - self.setup_s  # the trials' time: set-up is not counted
        design = self.design
        look = design.is_look(rep)
        raced, compared, raws = self._race(design, look)
        for key, p in self.configs.items():
            if p.stopped:
                continue
            s = summarize(p.values, design.level(len(p.values), sides=2))  # as the report shows it (analysis/cells/)
            p.half_width = (s.half_width / s.mean) if s.half_width is not None and s.mean else None
            if key in raced:
                p.stopped = raced[key]
            elif rep >= design.final:
                p.stopped = MAX
            elif p.failures >= self.exp.min_repetitions and not p.values:
                p.stopped = FAILING
            elif self.exp.budget is not None and spent >= self.exp.budget:
                p.stopped = BUDGET
            elif (
                look
                and key not in compared
                and key not in raws
                and p.half_width is not None
                and p.half_width <= self.exp.precision
            ):
                p.stopped = PRECISE  # compared with none: precise enough on its own, at this look's level
        for key, dependents in raws.items():
            raw = self.configs.get(key)
            if raw is None or raw.stopped:
                continue
            if len(raw.values) >= BASELINE_ROUNDS:
                raw.stopped = BASELINE  # no candidate: its ratios and flags have their interval
            elif all(self.configs[d].stopped for d in dependents):
                raw.stopped = DECIDED
        return [key for key, p in self.configs.items() if not p.stopped]

    @property
    def design(self) -> Design:
        return (
            Design.auto(self.exp.min_repetitions, self.exp.max_repetitions, self.looks) if self.exp.auto else Design()
        )

    def design_doc(self, workload: str) -> DesignDoc:
        """The design stored with a result of this workload: the spec's, with the looks this run planned."""
        return self.exp.design(workload, self.looks or None)

    def _race(self, design: Design, look: bool) -> tuple[dict[str, str], set[str], dict[str, list[str]]]:
        """The advice groups raced at a look (config -> why it stops), the configurations compared with
        another, and each raw baseline's dependents."""
        cells = judged_cells(self.results, judge_steady=False)
        cells = [c for c in cells if config_key(c.trial) in self.configs and c.values]
        out: dict[str, str] = {}
        compared: set[str] = set()
        candidates = [c for c in cells if not c.is_raw and not c.emulated]
        for group in by_context(candidates).values():
            keys = {config_key(c.trial): c for c in group}
            if len(keys) > 1:
                compared |= set(keys)
            stopped = {k: why for k in keys if (why := self.configs[k].stopped)}
            if look:
                out.update(race({k: c.runs for k, c in keys.items()}, group[0].margin, design, stopped))
        raws: dict[str, list[str]] = {}
        for raw in (c for c in cells if c.is_raw):
            key = match_key(raw)
            raws[config_key(raw.trial)] = [config_key(c.trial) for c in candidates if match_key(c) == key]
        return out, compared, {k: v for k, v in raws.items() if v}

    def scaling_report(self) -> dict[str, scaling.Report]:
        """`containers: auto`: per series, the counts measured, their mean headline, the peak, why it stopped."""
        return {_trial(s.proto).label.rsplit(" #", 1)[0]: s.report() for s in self.scaling.values()}

    def report(self) -> dict[str, ConfigReport]:
        """Why each configuration has the repetitions it has (stored with the run)."""
        out: dict[str, ConfigReport] = {}
        for key, p in self.configs.items():
            t = self.proto[key]
            out[t.label.rsplit(" #", 1)[0]] = {
                "repetitions": len(p.values),
                "trials": len(p.values) + p.failures,
                "failed": p.failures,
                "stopped": p.stopped or "planned",
                "half_width": p.half_width,
            }
        return out


def _trial(proto: object) -> Trial:
    """A scaling series' trial at count 1 (scaling.Series keeps it as an object)."""
    assert isinstance(proto, Trial)
    return proto
