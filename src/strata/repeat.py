"""Repetitions: trials run in interleaved rounds; `repetitions: auto` repeats each configuration until the
95% interval of its headline is within the precision asked for, or a maximum or a time budget is reached.

Each configuration stops for a reason that is stored with the run (`precise`, `max_repetitions`,
`budget`, `failing`), so a user sees why it has the repetitions it has. Rounds rather than repetitions
back to back: the machine's drift over the run then spreads over every configuration instead of
separating them. With `until: steady` inside a trial this gives an answer in the least machine time
(bench/auto_repetitions.py measures it).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Iterator

from strata import scaling, validity
from strata.analysis.stats import summarize

PRECISE, MAX, BUDGET, FAILING = "precise", "max_repetitions", "budget", "failing"


@dataclass
class Progress:
    values: list = field(default_factory=list)  # headline values of its successful trials
    failures: int = 0
    stopped: str | None = None
    half_width: float | None = None  # of the 95% interval, relative to the mean


class Repetitions:
    def __init__(self, exp, trials: list, stored: list[dict] | None = None):
        self.exp = exp
        self.trials = trials
        self.t0 = time.monotonic()
        self.configs: dict[str, Progress] = {}
        self.proto: dict[str, object] = {}  # a trial of each configuration, to make its next repetitions
        self.scaling: dict[str, scaling.Series] = {}  # `containers: auto`: series key -> its counts so far
        for t in trials:
            self.configs.setdefault(t.config, Progress())
            self.proto.setdefault(t.config, t)
            if scaling.is_auto(t):
                self.scaling.setdefault(scaling.series_key(t.resolved()), scaling.Series(t))
        self.seen: set[str] = set()
        for r in stored or []:
            self.record(r)

    def record(self, result: dict) -> None:
        """A finished trial of this run (or one stored before it, on resume)."""
        if result.get("trial_id") in self.seen:
            return
        self.seen.add(result.get("trial_id"))
        self._record_scaling(result)
        key = _config_of(result)
        p = self.configs.get(key)
        if p is None:
            return
        value, _ = validity.headline(result)
        if result.get("status") == "ok" and value is not None:
            p.values.append(value)
        elif result.get("status") == "failed":
            p.failures += 1

    def rounds(self) -> Iterator[list]:
        """The planned trials round by round; with `auto`, further rounds while configurations go on."""
        by_rep: dict[int, list] = {}
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
            yield [self.proto[k].again(rep) for k in going]
            rep += 1

    def _record_scaling(self, result: dict) -> None:
        t = result.get("trial") or {}
        if not isinstance(t.get("load"), dict) or t["load"].get("scale") != "auto":
            return
        series = self.scaling.get(scaling.series_key(t))
        if series is None:
            return
        n = t["load"].get("containers", 1)
        value, _ = validity.headline(result)
        if result.get("status") == "ok" and value is not None:
            series.values.setdefault(n, []).append(value)
        elif result.get("status") == "failed":
            series.failures[n] = series.failures.get(n, 0) + 1

    def _scale(self) -> Iterator[list]:
        """`containers: auto`: one round per further count, each series until it stops (scaling.py)."""
        last = {key: 1 for key in self.scaling}
        while True:
            round_ = []
            for key, series in self.scaling.items():
                n = series.next_count(last[key])
                if n is None:
                    continue
                last[key] = n
                for rep in range(self.exp.first_repetitions):
                    t = dataclasses.replace(series.proto, load=series.proto.load.with_containers(n), repetition=rep)
                    self.configs.setdefault(t.config, Progress())
                    self.proto.setdefault(t.config, t)
                    round_.append(t)
            if not round_:
                return
            yield round_

    def _judge(self, rep: int) -> list[str]:
        """Stop what is precise, at its maximum, failing, or out of budget; the configurations that go on."""
        going = []
        spent = time.monotonic() - self.t0
        for key, p in self.configs.items():
            if p.stopped:
                continue
            s = summarize(p.values)
            p.half_width = (s.half_width / s.mean) if s.half_width is not None and s.mean else None
            if p.half_width is not None and p.half_width <= self.exp.precision:
                p.stopped = PRECISE
            elif rep >= self.exp.max_repetitions:
                p.stopped = MAX
            elif p.failures >= self.exp.min_repetitions and not p.values:
                p.stopped = FAILING
            elif self.exp.budget is not None and spent >= self.exp.budget:
                p.stopped = BUDGET
            else:
                going.append(key)
        return going

    def scaling_report(self) -> dict:
        """`containers: auto`: per series, the counts measured, their mean headline, the peak, why it stopped."""
        return {s.proto.label.rsplit(" #", 1)[0]: s.report() for s in self.scaling.values()}

    def report(self) -> dict:
        """Why each configuration has the repetitions it has (stored with the run)."""
        out = {}
        for key, p in self.configs.items():
            t = self.proto[key]
            out[t.label.rsplit(" #", 1)[0]] = {
                "repetitions": len(p.values),
                "failed": p.failures,
                "stopped": p.stopped or "planned",
                "half_width": p.half_width,
            }
        return out


def _config_of(result: dict) -> str:
    import json

    t = result.get("trial") or {}
    return json.dumps({k: v for k, v in t.items() if k != "repetition"}, sort_keys=True)
