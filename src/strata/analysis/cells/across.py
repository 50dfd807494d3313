"""The judges that need more than one trial, at one moment: when stored results become cells (`judged_cells`).

A trial's own flags are judged when it ends (results/validity/trial.py) and stored with it. Three flags need
other trials: above_raw (a result against the raw device's trial of the same workload), above_raw again
once repetitions exist (the interval of the ratio of the two configurations' means), and spread (the
repetitions' coefficient of variation). Only over the stored results are the raw device's trials and every
repetition known, whatever order the trials ran in: a part run with `--only` and its later `--resume`,
or results of several runs read together. So they are judged here, every time stored results are read,
and never stored: the same results always give the same judgement. Their results carry the single-trial
judgement in memory (flag and warning, for `strata show` and the export); results stored before this
moment existed keep the above_raw their runner stored, judged by the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable

from strata.analysis.cells.baseline import apply_above_raw
from strata.analysis.cells.cells import Cell, build_cells
from strata.core.jsondoc import JsonObject
from strata.results import validity
from strata.results.flags import Flags
from strata.results.result import Result, typed


def judged_cells(stored: Iterable[Result | JsonObject], judge_steady: bool = True) -> list[Cell]:
    """The stored results' cells, with every judgement across trials made: each result against the raw
    device's trial before it, each cell against its raw device's cell (drawn apart as unconfirmed beyond
    the intervals), each cell's spread."""
    results = typed(stored)
    judge_results(results)
    cells = build_cells(results, judge_steady)
    apply_above_raw(cells)
    for c in cells:
        c.spread = validity.spread(c.summary.cv)
    return cells


def judge_results(results: list[Result]) -> None:
    """above_raw of each ok result against the raw device's ok trial of the same workload (and load and
    placement) stored last before it began, as the runner's rounds run the raw device first: what one trial
    can say, before repetitions decide (apply_above_raw)."""
    baselines: dict[tuple[object, ...], Result] = {}
    ordered = sorted(results, key=lambda r: (r.started_at or "", not validity.is_raw_baseline(r.trial)))
    for r in ordered:
        if r.status != "ok" or not r.trial:
            continue
        key = validity.raw_baseline_key(r.trial)
        if validity.is_raw_baseline(r.trial):
            baselines[key] = r
            continue
        raw = baselines.get(key)
        if raw is None or r.flags.above_raw is not None:  # stored by an older runner: the same rule
            continue
        moved = validity.bytes_moved(r.flags.cache)
        judged = validity.above_raw(r.headline[0], raw.headline[0], raw.trial_id, moved)
        if judged:
            r.flags.set(judged.flag, judged)
            r.warnings = [*r.warnings, *(w.to_json() for w in validity.warnings_of(Flags({judged.flag: judged})))]
